#include "tokenizer/pcre_regex.h"

#include <utf8proc.h>

#include <array>

#include "tokenizer/utf8.h"

namespace ww {
namespace {

// Code points that utf8proc (Unicode 15) puts in the general category group `major` ('L' letters
// or 'N' numbers) but PCRE2's older tables (10.42: Unicode 14) do not, as a class body such as
// "\x{31350}-\x{323af}". The Rust library's Oniguruma knows Unicode 15, so \p{L} and \p{N}
// are widened by these ranges. Computed once per process (about 150k single-character matches).
const std::string& NewerUnicodeRanges(char major) {
  static const std::array<std::string, 2> ranges = [] {
    std::array<std::string, 2> out;
    const char* patterns[2] = {"^\\p{L}", "^\\p{N}"};
    for (int k = 0; k < 2; ++k) {
      int err;
      PCRE2_SIZE off;
      pcre2_code* re =
          pcre2_compile(reinterpret_cast<PCRE2_SPTR>(patterns[k]), PCRE2_ZERO_TERMINATED,
                        PCRE2_UTF | PCRE2_UCP, &err, &off, nullptr);
      if (re == nullptr) continue;
      pcre2_match_data* md = pcre2_match_data_create(1, nullptr);
      int64_t run_start = -1, prev = -2;
      auto flush = [&] {
        if (run_start < 0) return;
        out[k] += fmt::format("\\x{{{:x}}}", run_start);
        if (prev > run_start) out[k] += fmt::format("-\\x{{{:x}}}", prev);
        run_start = -1;
      };
      for (int32_t cp = 0; cp <= 0x10FFFF; ++cp) {
        if (cp >= 0xD800 && cp <= 0xDFFF) continue;
        const utf8proc_category_t cat = utf8proc_category(cp);
        const bool want = k == 0 ? (cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO)
                                 : (cat >= UTF8PROC_CATEGORY_ND && cat <= UTF8PROC_CATEGORY_NO);
        if (!want) continue;
        std::string utf;
        utf8::Append(static_cast<char32_t>(cp), &utf);
        const bool known = pcre2_match(re, reinterpret_cast<PCRE2_SPTR>(utf.data()), utf.size(), 0,
                                       0, md, nullptr) >= 0;
        if (known) continue;
        if (cp != prev + 1) flush();
        if (run_start < 0) run_start = cp;
        prev = cp;
      }
      flush();
      pcre2_match_data_free(md);
      pcre2_code_free(re);
    }
    return out;
  }();
  return ranges[major == 'L' ? 0 : 1];
}

}  // namespace

std::string OnigToPcre(const std::string& pattern) {
  std::string out;
  out.reserve(pattern.size() + 32);
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char next = pattern[i + 1];
      if (next == 's') {
        out += "\\p{White_Space}";
      } else if (next == 'S') {
        out += "\\P{White_Space}";
      } else if (next == 'p' &&
                 (pattern.compare(i, 5, "\\p{L}") == 0 || pattern.compare(i, 5, "\\p{N}") == 0)) {
        const std::string& extra = NewerUnicodeRanges(pattern[i + 3]);
        const std::string prop = pattern.substr(i, 5);
        if (extra.empty()) {
          out += prop;
        } else if (in_class) {
          out += prop;
          out += extra;
        } else {
          out += '[';
          out += prop;
          out += extra;
          out += ']';
        }
        i += 4;
        continue;
      } else {
        out += c;
        out += next;
      }
      ++i;
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out += c;
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') out += pattern[++i];  // literal ]
      continue;
    }
    if (in_class && c == ']') in_class = false;
    out += c;
  }
  return out;
}

}  // namespace ww
