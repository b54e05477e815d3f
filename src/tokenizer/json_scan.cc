#include "tokenizer/json_scan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/utf8.h"

namespace ww::tokjson {
namespace {

class Scanner {
 public:
  Scanner(std::string_view text, std::string source, size_t base)
      : s_(text), source_(std::move(source)), base_(base) {}

  size_t pos() const { return pos_; }
  bool AtEnd() const { return pos_ >= s_.size(); }
  char Peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }

  void SkipWs() {
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      if (c != ' ' && c != '\n' && c != '\r' && c != '\t') break;
      ++pos_;
    }
  }

  Status Error(const std::string& what) const {
    return Status::InvalidInput(
        fmt::format("{}: not valid JSON at byte {}: {}", source_, base_ + pos_, what));
  }

  Status Expect(char c) {
    SkipWs();
    if (Peek() != c) return Error(fmt::format("expected '{}'", c));
    ++pos_;
    return Status::Ok();
  }

  // Decodes the string at pos_ (which must be '"') into *out.
  Status String(std::string* out) {
    out->clear();
    if (Peek() != '"') return Error("expected a string");
    ++pos_;
    while (true) {
      // Copy the run up to the next quote, backslash or control byte in one go.
      size_t run = pos_;
      while (run < s_.size()) {
        const auto c = static_cast<unsigned char>(s_[run]);
        if (c == '"' || c == '\\' || c < 0x20) break;
        ++run;
      }
      out->append(s_.data() + pos_, run - pos_);
      pos_ = run;
      if (pos_ >= s_.size()) return Error("unterminated string");
      const char c = s_[pos_];
      if (c == '"') {
        ++pos_;
        return Status::Ok();
      }
      if (c != '\\') return Error("control character in string");
      if (pos_ + 1 >= s_.size()) return Error("unterminated escape");
      const char e = s_[pos_ + 1];
      pos_ += 2;
      switch (e) {
        case '"':
          out->push_back('"');
          break;
        case '\\':
          out->push_back('\\');
          break;
        case '/':
          out->push_back('/');
          break;
        case 'b':
          out->push_back('\b');
          break;
        case 'f':
          out->push_back('\f');
          break;
        case 'n':
          out->push_back('\n');
          break;
        case 'r':
          out->push_back('\r');
          break;
        case 't':
          out->push_back('\t');
          break;
        case 'u': {
          uint32_t cp;
          WW_RETURN_IF_ERROR(Hex4(&cp));
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            uint32_t lo;
            if (pos_ + 1 >= s_.size() || s_[pos_] != '\\' || s_[pos_ + 1] != 'u') {
              return Error("lone surrogate in \\u escape");
            }
            pos_ += 2;
            WW_RETURN_IF_ERROR(Hex4(&lo));
            if (lo < 0xDC00 || lo > 0xDFFF) return Error("lone surrogate in \\u escape");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return Error("lone surrogate in \\u escape");
          }
          utf8::Append(static_cast<char32_t>(cp), out);
          break;
        }
        default:
          return Error("bad escape");
      }
    }
  }

  Status UnsignedInt(uint64_t* out) {
    SkipWs();
    size_t start = pos_;
    uint64_t v = 0;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      if (v > (uint64_t{1} << 40)) return Error("id too large");
      v = v * 10 + static_cast<uint64_t>(s_[pos_] - '0');
      ++pos_;
    }
    if (pos_ == start) return Error("expected a non-negative integer id");
    if (pos_ < s_.size() && (s_[pos_] == '.' || s_[pos_] == 'e' || s_[pos_] == 'E')) {
      return Error("id is not an integer");
    }
    *out = v;
    return Status::Ok();
  }

  // Skips one JSON value of any type (structure only; the DOM parse validates skipped parts).
  Status SkipValue() {
    SkipWs();
    if (AtEnd()) return Error("expected a value");
    const char c = Peek();
    if (c == '"') return SkipString();
    if (c == '{' || c == '[') {
      std::vector<char> stack;
      while (pos_ < s_.size()) {
        const char d = s_[pos_];
        if (d == '"') {
          WW_RETURN_IF_ERROR(SkipString());
          continue;
        }
        if (d == '{' || d == '[') stack.push_back(d == '{' ? '}' : ']');
        if (d == '}' || d == ']') {
          if (stack.empty() || stack.back() != d) return Error("mismatched bracket");
          stack.pop_back();
          ++pos_;
          if (stack.empty()) return Status::Ok();
          continue;
        }
        ++pos_;
      }
      return Error("unterminated object or array");
    }
    // Number or literal: up to the next delimiter.
    const size_t start = pos_;
    while (pos_ < s_.size() && std::strchr(",}] \t\r\n", s_[pos_]) == nullptr) ++pos_;
    if (pos_ == start) return Error("expected a value");
    return Status::Ok();
  }

  Status SkipString() {
    ++pos_;  // opening quote
    while (pos_ < s_.size()) {
      const char* q =
          static_cast<const char*>(std::memchr(s_.data() + pos_, '"', s_.size() - pos_));
      if (q == nullptr) break;
      size_t qpos = static_cast<size_t>(q - s_.data());
      // The quote is escaped when an odd number of backslashes precede it.
      size_t bs = 0;
      while (qpos - bs > pos_ && s_[qpos - bs - 1] == '\\') ++bs;
      pos_ = qpos + 1;
      if (bs % 2 == 0) return Status::Ok();
    }
    return Error("unterminated string");
  }

 private:
  Status Hex4(uint32_t* cp) {
    if (pos_ + 4 > s_.size()) return Error("short \\u escape");
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      const char h = s_[pos_ + k];
      v <<= 4;
      if (h >= '0' && h <= '9') {
        v |= static_cast<uint32_t>(h - '0');
      } else if (h >= 'a' && h <= 'f') {
        v |= static_cast<uint32_t>(h - 'a' + 10);
      } else if (h >= 'A' && h <= 'F') {
        v |= static_cast<uint32_t>(h - 'A' + 10);
      } else {
        return Error("bad \\u escape");
      }
    }
    pos_ += 4;
    *cp = v;
    return Status::Ok();
  }

  std::string_view s_;
  std::string source_;  // owned: callers pass temporaries ("FILE (model.vocab)")
  size_t base_;
  size_t pos_ = 0;
};

// Iterates the members of the object at sc's position; on_member(key, value_begin) must leave
// the scanner after the value.
template <typename F>
Status Members(Scanner& sc, F&& on_member) {
  WW_RETURN_IF_ERROR(sc.Expect('{'));
  sc.SkipWs();
  if (sc.Peek() == '}') {
    return sc.Expect('}');
  }
  std::string key;
  while (true) {
    sc.SkipWs();
    WW_RETURN_IF_ERROR(sc.String(&key));
    WW_RETURN_IF_ERROR(sc.Expect(':'));
    sc.SkipWs();
    WW_RETURN_IF_ERROR(on_member(key));
    sc.SkipWs();
    if (sc.Peek() == ',') {
      (void)sc.Expect(',');
      continue;
    }
    return sc.Expect('}');
  }
}

}  // namespace

Result<BigMembers> SplitBigMembers(std::string_view text, const std::string& source) {
  Scanner sc(text, source, 0);
  sc.SkipWs();
  if (sc.Peek() != '{') {
    // Not an object: nothing to cut; the DOM parse names the problem.
    BigMembers whole;
    whole.rest.assign(text);
    return whole;
  }
  size_t vocab_begin = 0, vocab_end = 0, merges_begin = 0, merges_end = 0;
  Status st = Members(sc, [&](const std::string& key) -> Status {
    if (key != "model" || sc.Peek() != '{') return sc.SkipValue();
    return Members(sc, [&](const std::string& mkey) -> Status {
      const size_t begin = sc.pos();
      const char c = sc.Peek();
      WW_RETURN_IF_ERROR(sc.SkipValue());
      if (mkey == "vocab" && c == '{' && vocab_end == 0) {
        vocab_begin = begin;
        vocab_end = sc.pos();
      } else if (mkey == "merges" && c == '[' && merges_end == 0) {
        merges_begin = begin;
        merges_end = sc.pos();
      }
      return Status::Ok();
    });
  });
  if (!st.ok()) return st;
  BigMembers out;
  // Cut the ranges out in text order.
  struct Cut {
    size_t begin, end;
    const char* empty;
  };
  std::vector<Cut> cuts;
  if (vocab_end) cuts.push_back({vocab_begin, vocab_end, "{}"});
  if (merges_end) cuts.push_back({merges_begin, merges_end, "[]"});
  if (cuts.size() == 2 && cuts[0].begin > cuts[1].begin) std::swap(cuts[0], cuts[1]);
  size_t at = 0;
  out.rest.reserve(text.size() - (vocab_end - vocab_begin) - (merges_end - merges_begin) + 4);
  for (const Cut& c : cuts) {
    out.rest.append(text.substr(at, c.begin - at));
    out.rest.append(c.empty);
    at = c.end;
  }
  out.rest.append(text.substr(at));
  if (vocab_end) out.vocab = text.substr(vocab_begin, vocab_end - vocab_begin);
  if (merges_end) out.merges = text.substr(merges_begin, merges_end - merges_begin);
  return out;
}

Status CheckNestingDepth(std::string_view text, size_t max_depth, const std::string& source) {
  size_t depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {
      // Skip the string: to the next quote not escaped by an odd run of backslashes.
      for (++i; i < text.size(); ++i) {
        if (text[i] == '\\') {
          ++i;
        } else if (text[i] == '"') {
          break;
        }
      }
    } else if (c == '{' || c == '[') {
      if (++depth > max_depth) {
        return Status::InvalidInput(
            fmt::format("{}: JSON nested deeper than {} levels at byte {} (a tokenizer.json "
                        "nests a few; this is a malformed or hostile file)",
                        source, max_depth, i));
      }
    } else if ((c == '}' || c == ']') && depth > 0) {
      --depth;
    }
  }
  return Status::Ok();
}

Status ParseVocab(std::string_view object, const std::string& source,
                  const std::function<void(const std::string& token, uint64_t id)>& on_entry) {
  Scanner sc(object, source + " (model.vocab)", 0);
  std::string token;
  WW_RETURN_IF_ERROR(sc.Expect('{'));
  sc.SkipWs();
  if (sc.Peek() == '}') return Status::Ok();
  while (true) {
    sc.SkipWs();
    WW_RETURN_IF_ERROR(sc.String(&token));
    WW_RETURN_IF_ERROR(sc.Expect(':'));
    uint64_t id = 0;
    WW_RETURN_IF_ERROR(sc.UnsignedInt(&id));
    on_entry(token, id);
    sc.SkipWs();
    if (sc.Peek() == ',') {
      (void)sc.Expect(',');
      continue;
    }
    return sc.Expect('}');
  }
}

Status ParseMerges(std::string_view array, const std::string& source,
                   const std::function<Status(size_t rank, const std::string& a,
                                              const std::string& b, bool pair_form)>& on_merge) {
  Scanner sc(array, source + " (model.merges)", 0);
  WW_RETURN_IF_ERROR(sc.Expect('['));
  sc.SkipWs();
  if (sc.Peek() == ']') return Status::Ok();
  std::string a, b;
  for (size_t rank = 0;; ++rank) {
    sc.SkipWs();
    bool pair_form = false;
    if (sc.Peek() == '"') {
      WW_RETURN_IF_ERROR(sc.String(&a));
      b.clear();
    } else if (sc.Peek() == '[') {
      pair_form = true;
      (void)sc.Expect('[');
      sc.SkipWs();
      WW_RETURN_IF_ERROR(sc.String(&a));
      WW_RETURN_IF_ERROR(sc.Expect(','));
      sc.SkipWs();
      WW_RETURN_IF_ERROR(sc.String(&b));
      WW_RETURN_IF_ERROR(sc.Expect(']'));
    } else {
      return Status::InvalidInput(
          fmt::format("{}: model.merges[{}] is neither \"a b\" nor [a, b]", source, rank));
    }
    WW_RETURN_IF_ERROR(on_merge(rank, a, b, pair_form));
    sc.SkipWs();
    if (sc.Peek() == ',') {
      (void)sc.Expect(',');
      continue;
    }
    return sc.Expect(']');
  }
}

Result<TokenIds> FindTokenIds(std::string_view text, const std::string& source,
                              const std::vector<std::string>& names) {
  // model.vocab (most of a 33 MB Gemma-3 file) is decoded by the scanner, and only the small rest
  // of the document is DOM-parsed.
  auto big = SplitBigMembers(text, source);
  if (!big.ok()) return big.status();
  auto j = nlohmann::json::parse(big->rest, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) {
    return Status::InvalidInput(
        fmt::format("{}: not a tokenizer.json (not a JSON object)", source));
  }
  // Only the ids of `names` are kept, not the whole vocabulary.
  std::map<std::string, uint64_t, std::less<>> wanted;
  for (const std::string& name : names) wanted.emplace(name, UINT64_MAX);
  uint64_t id_count = 0;
  auto note = [&](std::string_view token, uint64_t id) {
    if (auto it = wanted.find(token); it != wanted.end() && it->second == UINT64_MAX) {
      it->second = id;
    }
    id_count = std::max(id_count, id + 1);
  };
  if (auto it = j.find("added_tokens"); it != j.end() && it->is_array()) {
    for (const auto& t : *it) {
      if (t.is_object() && t.contains("content") && t["content"].is_string() && t.contains("id") &&
          t["id"].is_number_unsigned()) {
        note(t["content"].get_ref<const std::string&>(), t["id"].get<uint64_t>());
      }
    }
  }
  if (!big->vocab.empty()) {
    WW_RETURN_IF_ERROR(ParseVocab(big->vocab, source,
                                  [&](const std::string& tok, uint64_t id) { note(tok, id); }));
  } else if (auto m = j.find("model"); m != j.end() && m->is_object()) {
    // Unigram: [[piece, score], ...], id = position (an array the scanner leaves in the rest).
    if (auto v = m->find("vocab"); v != m->end() && v->is_array()) {
      for (size_t i = 0; i < v->size(); ++i) {
        if ((*v)[i].is_array() && !(*v)[i].empty() && (*v)[i][0].is_string()) {
          note((*v)[i][0].get_ref<const std::string&>(), i);
        }
      }
    }
  }
  if (id_count == 0) {
    return Status::InvalidInput(fmt::format("{}: no vocabulary (model.vocab) found", source));
  }
  TokenIds out;
  out.id_count = id_count;
  for (auto& [name, id] : wanted) {
    if (id != UINT64_MAX) out.ids.emplace(name, id);
  }
  return out;
}

}  // namespace ww::tokjson
