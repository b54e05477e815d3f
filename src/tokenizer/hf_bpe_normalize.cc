// The normalizers of a tokenizer.json (NFC/NFD/NFKC/NFKD, Lowercase, Strip, StripAccents,
// Prepend, Replace), applied in order as the Rust library does.
#include <utf8proc.h>

#include <cstdlib>

#include "tokenizer/hf_bpe.h"
#include "tokenizer/pcre_regex.h"
#include "tokenizer/utf8.h"

namespace ww {
namespace {

bool IsMark(char32_t c) {
  const utf8proc_category_t cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return cat == UTF8PROC_CATEGORY_MN || cat == UTF8PROC_CATEGORY_MC || cat == UTF8PROC_CATEGORY_ME;
}

bool UnicodeForm(HfBpeTokenizer::NormForm form, std::string_view cur, std::string* out) {
  using NormForm = HfBpeTokenizer::NormForm;
  bool ascii = true;
  bool below_combining = true;  // every code point < U+0300: NFC leaves such text unchanged
  for (unsigned char c : cur) {
    if (c >= 0x80) ascii = false;
    if (c >= 0xCC) {
      below_combining = false;
      break;
    }
  }
  if (ascii || (form == NormForm::kNfc && below_combining)) return false;
  int options = UTF8PROC_STABLE;
  switch (form) {
    case NormForm::kNfc:
      options |= UTF8PROC_COMPOSE;
      break;
    case NormForm::kNfd:
      options |= UTF8PROC_DECOMPOSE;
      break;
    case NormForm::kNfkc:
      options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
      break;
    case NormForm::kNfkd:
      options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
      break;
  }
  utf8proc_uint8_t* dst = nullptr;
  const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(cur.data()),
                                          static_cast<utf8proc_ssize_t>(cur.size()), &dst,
                                          static_cast<utf8proc_option_t>(options));
  // Input is valid UTF-8 here, so utf8proc only fails on allocation; keep the text then.
  bool changed = false;
  if (n >= 0) {
    out->assign(reinterpret_cast<const char*>(dst), static_cast<size_t>(n));
    changed = true;
  }
  std::free(dst);
  return changed;
}

// Rust's char::to_lowercase, code point by code point (no final-sigma context): the simple
// mapping, plus SpecialCasing's one unconditional multi-character lower case, U+0130.
bool Lowercase(std::string_view cur, std::string* out) {
  bool any = false;
  for (unsigned char c : cur) {
    if (c >= 0x80 || (c >= 'A' && c <= 'Z')) {
      any = true;
      break;
    }
  }
  if (!any) return false;
  out->clear();
  out->reserve(cur.size() + 8);
  bool changed = false;
  for (size_t i = 0; i < cur.size();) {
    const unsigned char b = static_cast<unsigned char>(cur[i]);
    if (b < 0x80) {
      const char l = (b >= 'A' && b <= 'Z') ? static_cast<char>(b + 32) : static_cast<char>(b);
      changed |= l != static_cast<char>(b);
      out->push_back(l);
      ++i;
      continue;
    }
    const char32_t cp = utf8::Decode(cur, &i);
    if (cp == 0x130) {
      out->append("i\xCC\x87");
      changed = true;
      continue;
    }
    const auto lower = static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp)));
    changed |= lower != cp;
    utf8::Append(lower, out);
  }
  return changed;
}

bool Strip(bool left, bool right, std::string_view cur, std::string* out) {
  size_t b = 0, e = cur.size();
  if (left) {
    while (b < e) {
      size_t q = b;
      if (!utf8::IsWhiteSpace(utf8::Decode(cur, &q))) break;
      b = q;
    }
  }
  if (right) {
    while (e > b) {
      size_t p = e - 1;
      while (p > b && (static_cast<unsigned char>(cur[p]) & 0xC0) == 0x80) --p;
      size_t q = p;
      if (!utf8::IsWhiteSpace(utf8::Decode(cur, &q))) break;
      e = p;
    }
  }
  if (b == 0 && e == cur.size()) return false;
  out->assign(cur.substr(b, e - b));
  return true;
}

bool StripAccents(std::string_view cur, std::string* out) {
  out->clear();
  bool changed = false;
  for (size_t i = 0; i < cur.size();) {
    const size_t start = i;
    const char32_t cp = utf8::Decode(cur, &i);
    if (cp >= 0x300 && IsMark(cp)) {
      changed = true;
      continue;
    }
    out->append(cur.substr(start, i - start));
  }
  return changed;
}

}  // namespace

bool HfBpeTokenizer::Normalize(std::string_view span, std::string* out) const {
  bool changed = false;
  std::string_view cur = span;
  std::string next;
  for (const NormStep& step : normalizers_) {
    bool step_changed = false;
    switch (step.kind) {
      case NormStep::Kind::kUnicode:
        step_changed = UnicodeForm(step.form, cur, &next);
        break;
      case NormStep::Kind::kLowercase:
        step_changed = Lowercase(cur, &next);
        break;
      case NormStep::Kind::kStrip:
        step_changed = Strip(step.strip_left, step.strip_right, cur, &next);
        break;
      case NormStep::Kind::kStripAccents:
        step_changed = StripAccents(cur, &next);
        break;
      case NormStep::Kind::kPrepend:
        // The Rust library prepends to non-empty text only.
        if (!cur.empty() && !step.text.empty()) {
          next.assign(step.text);
          next.append(cur);
          step_changed = true;
        }
        break;
      case NormStep::Kind::kReplace:
        if (!step.literal.empty()) {
          size_t at = cur.find(step.literal);
          if (at == std::string_view::npos) break;
          next.clear();
          size_t from = 0;
          while (at != std::string_view::npos) {
            next.append(cur.substr(from, at - from));
            next.append(step.text);
            from = at + step.literal.size();
            at = cur.find(step.literal, from);
          }
          next.append(cur.substr(from));
          step_changed = true;
        } else {
          next.clear();
          size_t from = 0, pos = 0, mb, me;
          while (pos <= cur.size() && step.regex->Find(cur, pos, &mb, &me)) {
            next.append(cur.substr(from, mb - from));
            next.append(step.text);
            step_changed = true;
            from = me;
            if (me == mb) {
              // An empty match: keep the next character and search after it.
              if (mb >= cur.size()) break;
              size_t bad;
              const size_t len = utf8::SequenceLength(cur, mb, &bad);
              next.append(cur.substr(mb, len == 0 ? 1 : len));
              from = pos = mb + (len == 0 ? 1 : len);
            } else {
              pos = me;
            }
          }
          if (!step_changed) break;
          if (from < cur.size()) next.append(cur.substr(from));
        }
        break;
    }
    if (step_changed) {
      out->swap(next);
      cur = *out;
      changed = true;
    }
  }
  return changed;
}

}  // namespace ww
