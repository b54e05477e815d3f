#include "report/png_reader.h"

#include <zlib.h>

#include <cstdlib>
#include <cstring>

namespace ww::testing {
namespace {

uint32_t Be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

int Paeth(int a, int b, int c) {
  const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
  if (pa <= pb && pa <= pc) return a;
  return pb <= pc ? b : c;
}

}  // namespace

Result<RgbImage> DecodePng(const std::string& bytes) {
  static const uint8_t kSig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  const auto* d = reinterpret_cast<const uint8_t*>(bytes.data());
  if (bytes.size() < 8 || std::memcmp(d, kSig, 8) != 0) return Status::InvalidInput("not a PNG");
  size_t pos = 8;
  RgbImage img;
  int color_type = -1, channels = 0;
  std::string idat;
  while (pos + 12 <= bytes.size()) {
    const uint32_t len = Be32(d + pos);
    if (pos + 12 + len > bytes.size()) return Status::InvalidInput("truncated chunk");
    const std::string type(bytes.data() + pos + 4, 4);
    const uint8_t* body = d + pos + 8;
    if (type == "IHDR") {
      if (len < 13) return Status::InvalidInput("short IHDR");
      img.width = static_cast<int>(Be32(body));
      img.height = static_cast<int>(Be32(body + 4));
      const int depth = body[8];
      color_type = body[9];
      if (depth != 8 || body[12] != 0 || (color_type != 2 && color_type != 6)) {
        return Status::InvalidInput("unsupported PNG (want 8-bit RGB/RGBA, non-interlaced)");
      }
      channels = color_type == 6 ? 4 : 3;
    } else if (type == "IDAT") {
      idat.append(reinterpret_cast<const char*>(body), len);
    } else if (type == "IEND") {
      break;
    }
    pos += 12 + len;
  }
  if (channels == 0 || img.width <= 0 || img.height <= 0 || img.width > 20000 ||
      img.height > 20000) {
    return Status::InvalidInput("missing or bad IHDR");
  }
  const size_t stride = static_cast<size_t>(img.width) * static_cast<size_t>(channels);
  std::vector<uint8_t> raw((stride + 1) * static_cast<size_t>(img.height));
  uLongf raw_len = raw.size();
  if (uncompress(raw.data(), &raw_len, reinterpret_cast<const Bytef*>(idat.data()), idat.size()) !=
          Z_OK ||
      raw_len != raw.size()) {
    return Status::InvalidInput("bad IDAT stream");
  }
  std::vector<uint8_t> prev(stride, 0), cur(stride);
  img.rgb.resize(static_cast<size_t>(img.width) * static_cast<size_t>(img.height) * 3);
  for (int y = 0; y < img.height; ++y) {
    const uint8_t* row = &raw[static_cast<size_t>(y) * (stride + 1)];
    const int filter = row[0];
    for (size_t i = 0; i < stride; ++i) {
      const int x = row[1 + i];
      const int a = i >= static_cast<size_t>(channels) ? cur[i - static_cast<size_t>(channels)] : 0;
      const int b = prev[i];
      const int c =
          i >= static_cast<size_t>(channels) ? prev[i - static_cast<size_t>(channels)] : 0;
      int v;
      switch (filter) {
        case 0:
          v = x;
          break;
        case 1:
          v = x + a;
          break;
        case 2:
          v = x + b;
          break;
        case 3:
          v = x + (a + b) / 2;
          break;
        case 4:
          v = x + Paeth(a, b, c);
          break;
        default:
          return Status::InvalidInput("bad filter type");
      }
      cur[i] = static_cast<uint8_t>(v & 0xff);
    }
    for (int x = 0; x < img.width; ++x) {
      for (int ch = 0; ch < 3; ++ch) {
        img.rgb[(static_cast<size_t>(y) * static_cast<size_t>(img.width) + static_cast<size_t>(x)) *
                    3 +
                static_cast<size_t>(ch)] = cur[static_cast<size_t>(x * channels + ch)];
      }
    }
    std::swap(prev, cur);
  }
  return img;
}

}  // namespace ww::testing
