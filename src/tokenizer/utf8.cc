#include "tokenizer/utf8.h"

namespace ww::utf8 {
namespace {
inline bool In(unsigned char b, unsigned char lo, unsigned char hi) { return b >= lo && b <= hi; }
}  // namespace

size_t SequenceLength(std::string_view s, size_t i, size_t* bad_len) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) return 1;
  size_t need;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (In(b0, 0xC2, 0xDF)) {
    need = 1;
  } else if (In(b0, 0xE0, 0xEF)) {
    need = 2;
    if (b0 == 0xE0) lo = 0xA0;  // overlong
    if (b0 == 0xED) hi = 0x9F;  // surrogates
  } else if (In(b0, 0xF0, 0xF4)) {
    need = 3;
    if (b0 == 0xF0) lo = 0x90;  // overlong
    if (b0 == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    *bad_len = 1;
    return 0;
  }
  for (size_t k = 1; k <= need; ++k) {
    if (i + k >= s.size()) {
      *bad_len = k;
      return 0;
    }
    const auto b = static_cast<unsigned char>(s[i + k]);
    const bool ok = k == 1 ? In(b, lo, hi) : In(b, 0x80, 0xBF);
    if (!ok) {
      *bad_len = k;
      return 0;
    }
  }
  return need + 1;
}

bool IsValid(std::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    // Eight ASCII bytes at a time: most training text is mostly ASCII.
    while (i + 8 <= n) {
      uint64_t w;
      __builtin_memcpy(&w, s.data() + i, 8);
      if (w & 0x8080808080808080ULL) break;
      i += 8;
    }
    if (i >= n) break;
    size_t bad;
    const size_t len = SequenceLength(s, i, &bad);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

std::string Sanitize(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 8);
  size_t i = 0;
  while (i < s.size()) {
    size_t bad = 0;
    const size_t len = SequenceLength(s, i, &bad);
    if (len == 0) {
      out += "\xEF\xBF\xBD";
      i += bad;
    } else {
      out.append(s.data() + i, len);
      i += len;
    }
  }
  return out;
}

char32_t Decode(std::string_view s, size_t* i) {
  const auto b0 = static_cast<unsigned char>(s[*i]);
  if (b0 < 0x80) {
    ++*i;
    return b0;
  }
  int extra = b0 >= 0xF0 ? 3 : b0 >= 0xE0 ? 2 : 1;
  char32_t c = b0 & (0x3F >> extra);
  for (int k = 1; k <= extra; ++k) c = (c << 6) | (static_cast<unsigned char>(s[*i + k]) & 0x3F);
  *i += extra + 1;
  return c;
}

void Append(char32_t c, std::string* out) {
  if (c < 0x80) {
    out->push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (c >> 6)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (c >> 12)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (c >> 18)));
    out->push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

bool IsWhiteSpace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

}  // namespace ww::utf8
