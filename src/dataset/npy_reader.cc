// NumPy .npy reader (format versions 1.0, 2.0, 3.0; little-endian integer arrays, C order).
// Three layouts:
//   X.npy, 1-D integer      per-sample lengths
//   X.npy, 2-D (N, L)       N samples of L tokens each (fixed-length pretokenized rows)
//   PREFIX (no .npy suffix) PREFIX.offsets.npy (1-D, N+1 non-decreasing offsets from 0) and
//                           PREFIX.tokens.npy (1-D token ids, offsets[N] of them)
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <vector>

#include "dataset/reader_common.h"
#include "dataset/sample_length_reader.h"

namespace ww::dataset {
namespace {

using internal::LoadLe;

struct NpyArray {
  std::unique_ptr<RandomAccessFile> file;
  TokenDtype dtype;
  std::vector<uint64_t> shape;
  uint64_t data_offset = 0;
  uint64_t items = 0;
};

// Finds `'key':` in the header dict and returns the position just after the colon.
std::optional<size_t> FindKey(const std::string& h, const std::string& key) {
  const std::string quoted[2] = {"'" + key + "'", "\"" + key + "\""};
  for (const auto& q : quoted) {
    size_t pos = h.find(q);
    if (pos == std::string::npos) continue;
    pos += q.size();
    while (pos < h.size() && std::isspace(static_cast<unsigned char>(h[pos]))) ++pos;
    if (pos < h.size() && h[pos] == ':') return pos + 1;
  }
  return std::nullopt;
}

Result<NpyArray> OpenNpy(Env* env, const std::string& path, uint64_t* bytes_read) {
  auto file = env->OpenFile(path);
  if (!file.ok()) return file.status();
  NpyArray arr;
  arr.file = std::move(*file);
  const uint64_t size = arr.file->size_bytes();
  auto bad = [&](const std::string& why) {
    return Status::InvalidInput(fmt::format("{}: not a usable .npy file: {}", path, why));
  };
  if (size < 10) return bad("truncated header");
  uint8_t pre[12] = {};
  WW_RETURN_IF_ERROR(arr.file->ReadAt(0, std::min<uint64_t>(12, size), pre));
  if (std::memcmp(pre, "\x93NUMPY", 6) != 0) return bad("wrong magic (expected \\x93NUMPY)");
  const uint8_t major = pre[6];
  uint64_t header_len = 0, header_start = 0;
  if (major == 1) {
    header_len = LoadLe<uint16_t>(pre + 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) return bad("truncated header");
    header_len = LoadLe<uint32_t>(pre + 8);
    header_start = 12;
  } else {
    return bad(fmt::format("unsupported format version {}", major));
  }
  if (header_len > (uint64_t{1} << 20) || header_start + header_len > size) {
    return bad(fmt::format("header length {} runs past the end of the file", header_len));
  }
  std::string h(header_len, '\0');
  WW_RETURN_IF_ERROR(arr.file->ReadAt(header_start, header_len, h.data()));
  *bytes_read += header_start + header_len;
  arr.data_offset = header_start + header_len;

  auto descr_pos = FindKey(h, "descr");
  if (!descr_pos) return bad("header has no 'descr'");
  size_t p = *descr_pos;
  while (p < h.size() && std::isspace(static_cast<unsigned char>(h[p]))) ++p;
  if (p >= h.size() || (h[p] != '\'' && h[p] != '"'))
    return bad("'descr' is not a simple dtype string");
  const char quote = h[p];
  const size_t end = h.find(quote, p + 1);
  if (end == std::string::npos) return bad("unterminated 'descr'");
  const std::string descr = h.substr(p + 1, end - p - 1);
  if (descr.size() < 2) return bad(fmt::format("unsupported dtype '{}'", descr));
  const char order = descr[0];
  const std::string kind_size =
      (order == '<' || order == '|' || order == '=') ? descr.substr(1) : descr;
  if (order == '>') return bad(fmt::format("big-endian dtype '{}' is not supported", descr));
  const char kind = kind_size[0];
  const std::string width = kind_size.substr(1);
  if ((kind != 'i' && kind != 'u' && kind != 'f') ||
      (width != "1" && width != "2" && width != "4" && width != "8")) {
    return bad(fmt::format("unsupported dtype '{}' (integer or float arrays only)", descr));
  }
  const int bits = (width[0] - '0') * 8;
  if (kind == 'f') {
    arr.dtype = TokenDtype{fmt::format("float{}", bits), bits, true, false};
  } else {
    arr.dtype = internal::MakeIntDtype(bits, kind == 'i');
  }

  auto fortran_pos = FindKey(h, "fortran_order");
  const size_t fortran_value =
      fortran_pos ? h.find_first_not_of(' ', *fortran_pos) : std::string::npos;
  if (fortran_value != std::string::npos && h.compare(fortran_value, 4, "True") == 0) {
    return bad("Fortran-order arrays are not supported");
  }
  auto shape_pos = FindKey(h, "shape");
  if (!shape_pos) return bad("header has no 'shape'");
  p = h.find('(', *shape_pos);
  const size_t close = h.find(')', *shape_pos);
  if (p == std::string::npos || close == std::string::npos || close < p)
    return bad("malformed 'shape'");
  uint64_t items = 1;
  std::string dims = h.substr(p + 1, close - p - 1);
  size_t i = 0;
  while (i < dims.size()) {
    while (i < dims.size() && (std::isspace(static_cast<unsigned char>(dims[i])) || dims[i] == ','))
      ++i;
    if (i >= dims.size()) break;
    if (!std::isdigit(static_cast<unsigned char>(dims[i]))) return bad("malformed 'shape'");
    uint64_t v = 0;
    while (i < dims.size() && std::isdigit(static_cast<unsigned char>(dims[i]))) {
      if (v > (UINT64_MAX - 9) / 10) return bad("'shape' dimension overflows");
      v = v * 10 + static_cast<uint64_t>(dims[i] - '0');
      ++i;
    }
    if (v != 0 && items > UINT64_MAX / v) return bad("'shape' overflows");
    items *= v;
    arr.shape.push_back(v);
    if (arr.shape.size() > 8) return bad("too many dimensions");
  }
  if (arr.shape.empty()) return bad("0-d arrays hold no samples");
  const uint64_t item = static_cast<uint64_t>(bits / 8);
  const uint64_t data_bytes = size - arr.data_offset;
  if (items > data_bytes / item || items * item != data_bytes) {
    return bad(
        fmt::format("'shape' declares {} items of {} bytes but {} data bytes follow the header",
                    items, item, data_bytes));
  }
  arr.items = items;
  return arr;
}

class NpyReader final : public SampleLengthReader {
 public:
  enum class Mode { kLengths, kRows, kOffsets };

  Status Open(Env* env, const std::string& path, const ReaderOptions& options) {
    options_ = options;
    path_ = path;
    const bool has_suffix = path.size() > 4 && path.compare(path.size() - 4, 4, ".npy") == 0;
    if (has_suffix) {
      auto arr = OpenNpy(env, path, &bytes_read_);
      if (!arr.ok()) return arr.status();
      main_ = std::move(*arr);
      files_.emplace_back(path, main_.file->size_bytes());
      if (!main_.dtype.is_integer) {
        return Status::InvalidInput(
            fmt::format("{}: {} array cannot hold lengths or token ids", path, main_.dtype.name));
      }
      if (main_.shape.size() == 1) {
        mode_ = Mode::kLengths;
        samples_ = main_.shape[0];
      } else if (main_.shape.size() == 2) {
        mode_ = Mode::kRows;
        samples_ = main_.shape[0];
        if (main_.shape[1] > UINT32_MAX) {
          return Status::InvalidInput(
              fmt::format("{}: rows of {} tokens are too long", path, main_.shape[1]));
        }
        token_dtype_ = main_.dtype;
      } else {
        return Status::InvalidInput(
            fmt::format("{}: a {}-D array; expected 1-D lengths or 2-D (samples, tokens)", path,
                        main_.shape.size()));
      }
      return Status::Ok();
    }
    mode_ = Mode::kOffsets;
    auto offsets = OpenNpy(env, path + ".offsets.npy", &bytes_read_);
    if (!offsets.ok()) return offsets.status();
    main_ = std::move(*offsets);
    auto tokens = OpenNpy(env, path + ".tokens.npy", &bytes_read_);
    if (!tokens.ok()) return tokens.status();
    tokens_ = std::move(*tokens);
    files_.emplace_back(main_.file->path(), main_.file->size_bytes());
    files_.emplace_back(tokens_.file->path(), tokens_.file->size_bytes());
    if (main_.shape.size() != 1 || !main_.dtype.is_integer || main_.items == 0) {
      return Status::InvalidInput(
          fmt::format("{}: offsets must be a non-empty 1-D integer array (samples + 1 entries)",
                      main_.file->path()));
    }
    if (tokens_.shape.size() != 1 || !tokens_.dtype.is_integer) {
      return Status::InvalidInput(
          fmt::format("{}: tokens must be a 1-D integer array", tokens_.file->path()));
    }
    samples_ = main_.items - 1;
    token_dtype_ = tokens_.dtype;
    return Status::Ok();
  }

  std::optional<uint64_t> declared_samples() const override { return samples_; }
  std::optional<TokenDtype> token_dtype() const override { return token_dtype_; }

  Result<size_t> Next(std::vector<uint32_t>* lengths) override {
    if (done_) return size_t{0};
    if (next_ == samples_) {
      done_ = true;
      WW_RETURN_IF_ERROR(Finish());
      return size_t{0};
    }
    const uint64_t n =
        std::min<uint64_t>(std::max<size_t>(1, options_.chunk_samples), samples_ - next_);
    if (mode_ == Mode::kRows) {
      lengths->insert(lengths->end(), static_cast<size_t>(n),
                      static_cast<uint32_t>(main_.shape[1]));
      if (extents_) {
        const uint64_t row_bytes = main_.shape[1] * static_cast<uint64_t>(main_.dtype.bits / 8);
        for (uint64_t i = 0; i < n; ++i) {
          extents_->push_back({main_.data_offset + (next_ + i) * row_bytes, row_bytes, 0});
        }
      }
      next_ += n;
      return static_cast<size_t>(n);
    }
    // kLengths reads items [next, next+n); kOffsets reads [next, next+n+1) (one overlap).
    const uint64_t item = static_cast<uint64_t>(main_.dtype.bits / 8);
    const uint64_t count = mode_ == Mode::kOffsets ? n + 1 : n;
    buf_.resize(static_cast<size_t>(count * item));
    WW_RETURN_IF_ERROR(
        main_.file->ReadAt(main_.data_offset + next_ * item, buf_.size(), buf_.data()));
    bytes_read_ += buf_.size();
    vals_.resize(static_cast<size_t>(count));
    for (uint64_t i = 0; i < count; ++i)
      vals_[i] = internal::DecodeInt(buf_.data() + i * item, main_.dtype);
    const std::vector<int64_t>& vals = vals_;
    lengths->reserve(lengths->size() + n);
    if (mode_ == Mode::kLengths) {
      for (uint64_t i = 0; i < n; ++i) {
        if (vals[i] < 0 || vals[i] > int64_t{UINT32_MAX}) {
          return Status::InvalidInput(fmt::format("{}: sample {} has length {} (must be 0..{})",
                                                  path_, next_ + i, vals[i], UINT32_MAX));
        }
        lengths->push_back(static_cast<uint32_t>(vals[i]));
      }
    } else {
      if (next_ == 0 && vals[0] != 0) {
        return Status::InvalidInput(
            fmt::format("{}: offsets must start at 0, not {}", main_.file->path(), vals[0]));
      }
      for (uint64_t i = 0; i < n; ++i) {
        const int64_t len = vals[i + 1] - vals[i];
        if (vals[i + 1] < vals[i] || len > int64_t{UINT32_MAX}) {
          return Status::InvalidInput(
              fmt::format("{}: offsets out of order at entry {} ({} then {})", main_.file->path(),
                          next_ + i + 1, vals[i], vals[i + 1]));
        }
        lengths->push_back(static_cast<uint32_t>(len));
        if (extents_) {
          const uint64_t item_bytes = static_cast<uint64_t>(tokens_.dtype.bits / 8);
          extents_->push_back({tokens_.data_offset + static_cast<uint64_t>(vals[i]) * item_bytes,
                               static_cast<uint64_t>(len) * item_bytes, 1});
        }
      }
      last_offset_ = vals[n];
    }
    next_ += n;
    return static_cast<size_t>(n);
  }

 private:
  Status Finish() {
    if (mode_ == Mode::kOffsets) {
      if (last_offset_ < 0 || static_cast<uint64_t>(last_offset_) != tokens_.items) {
        return Status::InvalidInput(fmt::format("{}: offsets end at {} but {} holds {} tokens",
                                                main_.file->path(), last_offset_,
                                                tokens_.file->path(), tokens_.items));
      }
      return internal::SampleTokenIds(*tokens_.file, tokens_.data_offset,
                                      tokens_.file->size_bytes(), tokens_.dtype,
                                      options_.token_sample_bytes, &token_ids_, &bytes_read_);
    }
    if (mode_ == Mode::kRows) {
      return internal::SampleTokenIds(*main_.file, main_.data_offset, main_.file->size_bytes(),
                                      main_.dtype, options_.token_sample_bytes, &token_ids_,
                                      &bytes_read_);
    }
    return Status::Ok();
  }

  ReaderOptions options_;
  std::string path_;
  Mode mode_ = Mode::kLengths;
  NpyArray main_, tokens_;
  std::optional<TokenDtype> token_dtype_;
  uint64_t samples_ = 0, next_ = 0;
  int64_t last_offset_ = 0;
  bool done_ = false;
  std::vector<uint8_t> buf_;
  std::vector<int64_t> vals_;
};

}  // namespace

Result<std::unique_ptr<SampleLengthReader>> OpenNpyReader(Env* env, const std::string& path,
                                                          const ReaderOptions& options) {
  auto reader = std::make_unique<NpyReader>();
  WW_RETURN_IF_ERROR(reader->Open(env, path, options));
  return std::unique_ptr<SampleLengthReader>(std::move(reader));
}

}  // namespace ww::dataset
