#include "tokenizer/hf_bpe.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <fmt/format.h>
#include <pcre2.h>
#include <utf8proc.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <queue>

#include "tokenizer/utf8.h"

namespace ww {

// ---------------------------------------------------------------------------------------------
// PCRE2 wrapper. Match data and the JIT stack are per thread (thread_local), so one compiled
// pattern serves every thread without locks.
class PcreRegex {
 public:
  static Result<std::shared_ptr<PcreRegex>> Compile(const std::string& pattern, bool literal,
                                                    const std::string& where) {
    int err = 0;
    PCRE2_SIZE err_off = 0;
    uint32_t options = PCRE2_UTF | PCRE2_UCP;
    if (literal) options |= PCRE2_LITERAL;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                     options, &err, &err_off, nullptr);
    if (code == nullptr) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof msg);
      return Status::InvalidInput(fmt::format("{}: regex does not compile at offset {}: {}", where,
                                              err_off, reinterpret_cast<const char*>(msg)));
    }
    auto re = std::shared_ptr<PcreRegex>(new PcreRegex(code));
    re->jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
    return re;
  }
  ~PcreRegex() { pcre2_code_free(code_); }

  // Finds the first match in s at or after `start`. s must be valid UTF-8 and `start` a character
  // boundary. Returns false when there is none (or, never seen in practice, when both JIT and
  // interpreter give up for resource limits, which the caller treats as "no more matches").
  bool Find(std::string_view s, size_t start, size_t* match_begin, size_t* match_end) const {
    ThreadState& ts = State();
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(s.data());
    int rc;
    if (jit_) {
      rc = pcre2_jit_match(code_, subject, s.size(), start, PCRE2_NO_UTF_CHECK, ts.match_data,
                           ts.match_context);
      if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
        rc = pcre2_match(code_, subject, s.size(), start, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT,
                         ts.match_data, ts.match_context);
      }
    } else {
      rc = pcre2_match(code_, subject, s.size(), start, PCRE2_NO_UTF_CHECK, ts.match_data,
                       ts.match_context);
    }
    if (rc < 0) return false;
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(ts.match_data);
    *match_begin = ov[0];
    *match_end = ov[1];
    return true;
  }

 private:
  explicit PcreRegex(pcre2_code* code) : code_(code) {}

  struct ThreadState {
    ThreadState() {
      match_data = pcre2_match_data_create(32, nullptr);
      match_context = pcre2_match_context_create(nullptr);
      // Long white-space runs backtrack through `\s+(?!\S)`; give JIT room to do it.
      jit_stack = pcre2_jit_stack_create(32 * 1024, 16 * 1024 * 1024, nullptr);
      pcre2_jit_stack_assign(match_context, nullptr, jit_stack);
      pcre2_set_heap_limit(match_context, 1024 * 1024);  // KiB, interpreter fallback only
    }
    ~ThreadState() {
      pcre2_match_data_free(match_data);
      pcre2_jit_stack_free(jit_stack);
      pcre2_match_context_free(match_context);
    }
    pcre2_match_data* match_data;
    pcre2_match_context* match_context;
    pcre2_jit_stack* jit_stack;
  };
  static ThreadState& State() {
    thread_local ThreadState state;
    return state;
  }

  pcre2_code* code_;
  bool jit_ = false;
};

namespace {

using json = nlohmann::json;

// GPT-2's pre-tokenizer regex, used by ByteLevel when use_regex is true.
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

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

// Rewrites a pattern written for Oniguruma (the Rust library's regex engine) so PCRE2 cuts at the
// same places: `\s`/`\S` become Unicode White_Space (PCRE2's UCP \s lacks U+0085), and
// `\p{L}`/`\p{N}` gain the characters PCRE2's Unicode tables are too old to know. Other escapes
// pass through untouched.
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
          out += prop + extra;
        } else {
          out += "[" + prop + extra + "]";
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

// GPT-2's reversible map between bytes and printable code points, inverted: code point -> byte.
std::unordered_map<char32_t, uint8_t> UnicodeToByte() {
  std::unordered_map<char32_t, uint8_t> m;
  int extra = 0;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
    const char32_t cp = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + extra++);
    m[cp] = static_cast<uint8_t>(b);
  }
  return m;
}

Status Unsupported(const std::string& source, const std::string& what) {
  return Status::InvalidInput(fmt::format("{}: {} is not supported", source, what));
}

std::string TypeOf(const json& j) {
  if (j.is_object() && j.contains("type") && j["type"].is_string()) return j["type"];
  return "(no type)";
}

bool FlagTrue(const json& j, const char* key) {
  return j.contains(key) && j[key].is_boolean() && j[key].get<bool>();
}

// Sinks receive ids as they are produced: Encode keeps them, CountTokens only counts.
struct IdSink {
  std::vector<uint32_t>* out;
  void Add(uint32_t id) { out->push_back(id); }
  void AddSpan(const uint32_t* ids, size_t n) { out->insert(out->end(), ids, ids + n); }
};
struct CountSink {
  size_t count = 0;
  void Add(uint32_t) { ++count; }
  void AddSpan(const uint32_t*, size_t n) { count += n; }
};

// Splits `text` on the added tokens of `set`, leftmost-longest like the Rust library's
// Aho-Corasick matcher. Calls on_span(text piece) for text between tokens and on_token(id).
template <typename Set, typename OnSpan, typename OnToken>
void SplitOnAdded(const Set& set, std::string_view text, OnSpan&& on_span, OnToken&& on_token) {
  if (set.empty) {
    on_span(text);
    return;
  }
  size_t span_start = 0;
  size_t i = 0;
  while (i < text.size()) {
    if (!set.is_first_byte[static_cast<unsigned char>(text[i])]) {
      ++i;
      continue;
    }
    const auto& candidates = set.by_first_byte[static_cast<unsigned char>(text[i])];
    const HfBpeTokenizer::AddedToken* hit = nullptr;
    for (const auto* tok : candidates) {
      if (text.compare(i, tok->content.size(), tok->content) == 0) {
        hit = tok;
        break;
      }
    }
    if (hit == nullptr) {
      ++i;
      continue;
    }
    size_t start = i;
    size_t end = i + hit->content.size();
    if (hit->lstrip) {
      // Swallow white space before the token, back to the previous token at most.
      while (start > span_start) {
        size_t p = start - 1;
        while (p > span_start && (static_cast<unsigned char>(text[p]) & 0xC0) == 0x80) --p;
        size_t q = p;
        if (!utf8::IsWhiteSpace(utf8::Decode(text, &q))) break;
        start = p;
      }
    }
    if (hit->rstrip) {
      while (end < text.size()) {
        size_t q = end;
        if (!utf8::IsWhiteSpace(utf8::Decode(text, &q))) break;
        end = q;
      }
    }
    if (start > span_start) on_span(text.substr(span_start, start - span_start));
    on_token(hit->id);
    span_start = end;
    i = end;
  }
  if (span_start < text.size()) on_span(text.substr(span_start));
}

}  // namespace

HfBpeTokenizer::HfBpeTokenizer() { byte_id_.fill(-1); }
HfBpeTokenizer::~HfBpeTokenizer() = default;

// ---------------------------------------------------------------------------------------------
// Loading.

Result<std::unique_ptr<HfBpeTokenizer>> HfBpeTokenizer::FromJsonText(std::string_view json_text,
                                                                     const std::string& source) {
  json root;
  try {
    root = json::parse(json_text);
  } catch (const json::exception& e) {
    return Status::InvalidInput(fmt::format("{}: not valid JSON: {}", source, e.what()));
  }
  if (!root.is_object()) return Status::InvalidInput(source + ": top level is not a JSON object");
  std::unique_ptr<HfBpeTokenizer> t(new HfBpeTokenizer());
  std::vector<std::string> desc_parts;

  try {
    // --- model
    if (!root.contains("model") || !root["model"].is_object()) {
      return Status::InvalidInput(source + ": key 'model' missing or not an object");
    }
    const json& model = root["model"];
    const std::string model_type =
        model.contains("type") ? model["type"].get<std::string>() : std::string("BPE");
    if (model_type != "BPE") return Unsupported(source, "model type '" + model_type + "'");
    if (model.contains("dropout") && !model["dropout"].is_null() &&
        model["dropout"].get<double>() > 0) {
      return Unsupported(source, "model.dropout (BPE dropout is random, training would differ)");
    }
    for (const char* k : {"continuing_subword_prefix", "end_of_word_suffix"}) {
      if (model.contains(k) && model[k].is_string() && !model[k].get<std::string>().empty()) {
        return Unsupported(source, fmt::format("model.{} '{}'", k, model[k].get<std::string>()));
      }
    }
    t->ignore_merges_ = FlagTrue(model, "ignore_merges");
    if (!model.contains("vocab") || !model["vocab"].is_object()) {
      return Status::InvalidInput(source + ": key 'model.vocab' missing or not an object");
    }
    const auto u2b = UnicodeToByte();
    uint32_t max_id = 0;
    for (const auto& [token, id_json] : model["vocab"].items()) {
      if (!id_json.is_number_unsigned()) {
        return Status::InvalidInput(
            fmt::format("{}: model.vocab['{}'] is not an id", source, token));
      }
      const auto id = id_json.get<uint32_t>();
      max_id = std::max(max_id, id);
      t->vocab_[token] = id;
      // Byte form of the token; tokens with code points outside the byte map have none.
      std::string bytes;
      bool mappable = true;
      for (size_t i = 0; i < token.size();) {
        size_t bad;
        if (utf8::SequenceLength(token, i, &bad) == 0) {
          mappable = false;
          break;
        }
        auto it = u2b.find(utf8::Decode(token, &i));
        if (it == u2b.end()) {
          mappable = false;
          break;
        }
        bytes.push_back(static_cast<char>(it->second));
      }
      if (!mappable) continue;
      if (bytes.size() == 1) t->byte_id_[static_cast<unsigned char>(bytes[0])] = id;
      t->bytes_vocab_.emplace(std::move(bytes), id);
    }
    if (model.contains("unk_token") && model["unk_token"].is_string()) {
      auto it = t->vocab_.find(model["unk_token"].get<std::string>());
      if (it != t->vocab_.end()) t->unk_id_ = it->second;
    }
    if (!model.contains("merges") || !model["merges"].is_array()) {
      return Status::InvalidInput(source + ": key 'model.merges' missing or not an array");
    }
    const json& merges = model["merges"];
    size_t capacity = 1024;
    while (capacity < merges.size() * 2 + 2) capacity *= 2;
    t->merge_table_.assign(capacity, MergeSlot{kEmptyPair, {0, 0}});
    t->merge_mask_ = capacity - 1;
    for (size_t rank = 0; rank < merges.size(); ++rank) {
      const json& m = merges[rank];
      std::string a, b;
      if (m.is_string()) {  // "a b" (older files)
        const std::string s = m.get<std::string>();
        const size_t sp = s.find(' ', 1);
        if (sp == std::string::npos) {
          return Status::InvalidInput(
              fmt::format("{}: model.merges[{}] '{}' has no space", source, rank, s));
        }
        a = s.substr(0, sp);
        b = s.substr(sp + 1);
      } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
        a = m[0].get<std::string>();
        b = m[1].get<std::string>();
      } else {
        return Status::InvalidInput(
            fmt::format("{}: model.merges[{}] is neither \"a b\" nor [a, b]", source, rank));
      }
      auto ia = t->vocab_.find(a), ib = t->vocab_.find(b), im = t->vocab_.find(a + b);
      if (ia == t->vocab_.end() || ib == t->vocab_.end() || im == t->vocab_.end()) {
        return Status::InvalidInput(
            fmt::format("{}: model.merges[{}] ('{}', '{}') uses a token missing from model.vocab",
                        source, rank, a, b));
      }
      // Like the Rust library (a HashMap collected in order), a repeated pair keeps its last rank.
      t->AddMerge(PairKey(ia->second, ib->second), {static_cast<uint32_t>(rank), im->second});
    }

    // --- added tokens
    if (root.contains("added_tokens") && root["added_tokens"].is_array()) {
      for (const json& a : root["added_tokens"]) {
        AddedToken tok;
        tok.content = a.at("content").get<std::string>();
        tok.id = a.at("id").get<uint32_t>();
        if (FlagTrue(a, "single_word")) {
          return Unsupported(source, "added token '" + tok.content + "' with single_word=true");
        }
        if (tok.content.empty()) continue;
        tok.lstrip = FlagTrue(a, "lstrip");
        tok.rstrip = FlagTrue(a, "rstrip");
        tok.normalized = FlagTrue(a, "normalized");
        max_id = std::max(max_id, tok.id);
        t->added_.push_back(std::move(tok));
      }
    }
    for (const AddedToken& tok : t->added_) {
      t->added_by_content_.emplace(tok.content, tok.id);
      AddedSet& set = tok.normalized ? t->normalized_added_ : t->raw_added_;
      set.by_first_byte[static_cast<unsigned char>(tok.content[0])].push_back(&tok);
      set.is_first_byte[static_cast<unsigned char>(tok.content[0])] = true;
      set.empty = false;
    }
    for (AddedSet* set : {&t->raw_added_, &t->normalized_added_}) {
      for (auto& v : set->by_first_byte) {
        std::stable_sort(v.begin(), v.end(), [](const AddedToken* x, const AddedToken* y) {
          return x->content.size() > y->content.size();
        });
      }
    }
    t->vocab_size_ = size_t{max_id} + 1;

    // --- normalizer
    std::vector<const json*> norm_stack;
    if (root.contains("normalizer") && !root["normalizer"].is_null()) {
      norm_stack.push_back(&root["normalizer"]);
    }
    std::vector<NormForm> norms;
    std::function<Status(const json&)> add_norm = [&](const json& n) -> Status {
      const std::string type = TypeOf(n);
      if (type == "Sequence") {
        for (const json& c : n.at("normalizers")) WW_RETURN_IF_ERROR(add_norm(c));
      } else if (type == "NFC") {
        norms.push_back(NormForm::kNfc);
      } else if (type == "NFD") {
        norms.push_back(NormForm::kNfd);
      } else if (type == "NFKC") {
        norms.push_back(NormForm::kNfkc);
      } else if (type == "NFKD") {
        norms.push_back(NormForm::kNfkd);
      } else {
        return Unsupported(source, "normalizer '" + type + "'");
      }
      desc_parts.push_back(type);
      return Status::Ok();
    };
    for (const json* n : norm_stack) WW_RETURN_IF_ERROR(add_norm(*n));
    t->normalizers_ = std::move(norms);

    // --- pre-tokenizer
    bool byte_level = false;
    int splits = 0;
    std::function<Status(const json&)> add_pre = [&](const json& p) -> Status {
      const std::string type = TypeOf(p);
      if (type == "Sequence") {
        for (const json& c : p.at("pretokenizers")) WW_RETURN_IF_ERROR(add_pre(c));
        return Status::Ok();
      }
      PreStep step;
      if (type == "Split") {
        if (FlagTrue(p, "invert"))
          return Unsupported(source, "pre_tokenizer Split with invert=true");
        const std::string behavior = p.value("behavior", std::string("Isolated"));
        if (behavior == "Isolated") {
          step.behavior = SplitBehavior::kIsolated;
        } else if (behavior == "Removed") {
          step.behavior = SplitBehavior::kRemoved;
        } else {
          return Unsupported(source, "pre_tokenizer Split behavior '" + behavior + "'");
        }
        const json& pat = p.at("pattern");
        std::shared_ptr<PcreRegex> re;
        if (pat.contains("Regex")) {
          auto r = PcreRegex::Compile(OnigToPcre(pat["Regex"].get<std::string>()), false,
                                      source + ": pre_tokenizer Split pattern");
          if (!r.ok()) return r.status();
          re = r.value();
        } else if (pat.contains("String")) {
          auto r = PcreRegex::Compile(pat["String"].get<std::string>(), true,
                                      source + ": pre_tokenizer Split pattern");
          if (!r.ok()) return r.status();
          re = r.value();
        } else {
          return Status::InvalidInput(source + ": pre_tokenizer Split pattern has no Regex/String");
        }
        step.kind = PreStep::Kind::kSplit;
        step.regex = re;
        ++splits;
      } else if (type == "ByteLevel") {
        step.kind = PreStep::Kind::kByteLevel;
        step.add_prefix_space = FlagTrue(p, "add_prefix_space");
        if (!p.contains("use_regex") || FlagTrue(p, "use_regex")) {
          auto r = PcreRegex::Compile(OnigToPcre(kGpt2Pattern), false, "GPT-2 pattern");
          if (!r.ok()) return r.status();
          step.regex = r.value();
          step.behavior = SplitBehavior::kIsolated;
        }
        byte_level = true;
        // A ByteLevel step that neither prefixes nor splits only maps bytes, which the model
        // step does anyway.
        if (!step.add_prefix_space && !step.regex) return Status::Ok();
      } else {
        return Unsupported(source, "pre_tokenizer '" + type + "'");
      }
      t->pre_steps_.push_back(std::move(step));
      return Status::Ok();
    };
    if (root.contains("pre_tokenizer") && !root["pre_tokenizer"].is_null()) {
      WW_RETURN_IF_ERROR(add_pre(root["pre_tokenizer"]));
    }
    if (!byte_level) {
      return Unsupported(source,
                         "a BPE model without a ByteLevel pre_tokenizer (only byte-level BPE is; "
                         "for SentencePiece-style models load their tokenizer.model instead)");
    }
    if (FlagTrue(model, "byte_fallback")) {
      // With a byte-level alphabet every byte is in the vocabulary, so fallback never fires.
    }

    // --- post-processor (only used with add_special_tokens)
    bool seen_sequence = false;
    std::function<Status(const json&)> add_post = [&](const json& p) -> Status {
      const std::string type = TypeOf(p);
      auto& pre = t->post_prefix_ids_;
      auto& suf = t->post_suffix_ids_;
      if (type == "Sequence") {
        for (const json& c : p.at("processors")) WW_RETURN_IF_ERROR(add_post(c));
      } else if (type == "ByteLevel") {
        // Only adjusts offsets.
      } else if (type == "TemplateProcessing") {
        const json& specials = p.at("special_tokens");
        bool after = false;
        for (const json& piece : p.at("single")) {
          if (piece.contains("Sequence")) {
            after = true;
            seen_sequence = true;
          } else if (piece.contains("SpecialToken")) {
            const std::string name = piece["SpecialToken"].at("id").get<std::string>();
            if (!specials.contains(name)) {
              return Status::InvalidInput(
                  fmt::format("{}: post_processor template uses '{}' missing from special_tokens",
                              source, name));
            }
            for (const json& id : specials[name].at("ids")) {
              (after ? suf : pre).push_back(id.get<uint32_t>());
            }
          }
        }
      } else if (type == "BertProcessing" || type == "RobertaProcessing") {
        pre.push_back(p.at("cls").at(1).get<uint32_t>());
        suf.push_back(p.at("sep").at(1).get<uint32_t>());
      } else {
        return Unsupported(source, "post_processor '" + type + "'");
      }
      return Status::Ok();
    };
    if (root.contains("post_processor") && !root["post_processor"].is_null()) {
      WW_RETURN_IF_ERROR(add_post(root["post_processor"]));
    }
    (void)seen_sequence;
  } catch (const json::exception& e) {
    return Status::InvalidInput(fmt::format("{}: unexpected structure: {}", source, e.what()));
  }

  t->describe_ =
      fmt::format("byte-level BPE (tokenizer.json, {} ids, {} merges, {} added tokens{}{})",
                  t->vocab_size_, t->merge_count_, t->added_.size(), desc_parts.empty() ? "" : ", ",
                  fmt::join(desc_parts, "+"));
  return t;
}

std::string HfBpeTokenizer::Describe() const { return describe_; }

std::optional<uint32_t> HfBpeTokenizer::TokenToId(std::string_view token) const {
  if (auto it = added_by_content_.find(std::string(token)); it != added_by_content_.end()) {
    return it->second;
  }
  if (auto it = vocab_.find(std::string(token)); it != vocab_.end()) return it->second;
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// Encoding.

bool HfBpeTokenizer::Normalize(std::string_view span, std::string* out) const {
  bool changed = false;
  std::string_view cur = span;
  for (NormForm form : normalizers_) {
    bool ascii = true;
    bool below_combining = true;  // every code point < U+0300: NFC leaves such text unchanged
    for (unsigned char c : cur) {
      if (c >= 0x80) ascii = false;
      if (c >= 0xCC) {
        below_combining = false;
        break;
      }
    }
    if (ascii || (form == NormForm::kNfc && below_combining)) continue;
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
    if (n >= 0) {
      out->assign(reinterpret_cast<const char*>(dst), static_cast<size_t>(n));
      cur = *out;
      changed = true;
    }
    std::free(dst);
  }
  return changed;
}

namespace {
inline uint64_t MixPair(uint64_t key) {
  key *= 0x9E3779B97F4A7C15ULL;
  return key ^ (key >> 29);
}
}  // namespace

void HfBpeTokenizer::AddMerge(uint64_t key, MergeInfo info) {
  for (uint64_t i = MixPair(key) & merge_mask_;; i = (i + 1) & merge_mask_) {
    MergeSlot& slot = merge_table_[i];
    if (slot.key == kEmptyPair) {
      slot = {key, info};
      ++merge_count_;
      return;
    }
    if (slot.key == key) {
      slot.info = info;
      return;
    }
  }
}

const HfBpeTokenizer::MergeInfo* HfBpeTokenizer::FindMerge(uint32_t a, uint32_t b) const {
  const uint64_t key = PairKey(a, b);
  for (uint64_t i = MixPair(key) & merge_mask_;; i = (i + 1) & merge_mask_) {
    const MergeSlot& slot = merge_table_[i];
    if (slot.key == key) return &slot.info;
    if (slot.key == kEmptyPair) return nullptr;
  }
}

void HfBpeTokenizer::MergeSmall(std::string_view piece, std::vector<uint32_t>* out) const {
  // Symbols and the rank of each adjacent pair; merge the lowest rank (leftmost on ties) until
  // no pair has a merge. Only the two pairs around a merge are looked up again. Pieces here are
  // at most kSmallPieceBytes long, so everything lives on the stack.
  constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
  std::array<uint32_t, kSmallPieceBytes> ids, ranks, merged;
  size_t n = 0;
  for (unsigned char c : piece) {
    if (byte_id_[c] >= 0) {
      ids[n++] = static_cast<uint32_t>(byte_id_[c]);
    } else if (unk_id_) {
      ids[n++] = *unk_id_;
    }
  }
  auto lookup = [&](size_t i) {
    const MergeInfo* m = FindMerge(ids[i], ids[i + 1]);
    ranks[i] = m ? m->rank : kNone;
    merged[i] = m ? m->merged_id : 0;
  };
  size_t pairs = n == 0 ? 0 : n - 1;
  for (size_t i = 0; i < pairs; ++i) lookup(i);
  while (pairs > 0) {
    size_t best = 0;
    for (size_t i = 1; i < pairs; ++i) {
      if (ranks[i] < ranks[best]) best = i;
    }
    if (ranks[best] == kNone) break;
    ids[best] = merged[best];
    // Drop symbol best+1 and pair `best`; pairs after it shift left by one.
    for (size_t i = best + 1; i + 1 < n; ++i) ids[i] = ids[i + 1];
    for (size_t i = best; i + 1 < pairs; ++i) {
      ranks[i] = ranks[i + 1];
      merged[i] = merged[i + 1];
    }
    --n;
    --pairs;
    if (best > 0) lookup(best - 1);
    if (best < pairs) lookup(best);
  }
  out->insert(out->end(), ids.begin(), ids.begin() + static_cast<ptrdiff_t>(n));
}

void HfBpeTokenizer::MergeHeap(std::string_view piece, std::vector<uint32_t>* out) const {
  // Linked list of symbols plus a min-heap of candidate pairs keyed (rank, position); stale
  // entries are skipped when popped. O(n log n) for long pieces such as white-space runs.
  struct Sym {
    uint32_t id;
    int32_t prev, next;
    bool alive;
  };
  std::vector<Sym> syms;
  syms.reserve(piece.size());
  for (unsigned char c : piece) {
    uint32_t id;
    if (byte_id_[c] >= 0) {
      id = static_cast<uint32_t>(byte_id_[c]);
    } else if (unk_id_) {
      id = *unk_id_;
    } else {
      continue;
    }
    const auto idx = static_cast<int32_t>(syms.size());
    syms.push_back({id, idx - 1, idx + 1, true});
  }
  if (syms.empty()) return;
  syms.back().next = -1;
  struct Cand {
    uint32_t rank;
    int32_t pos;
    uint32_t left, right, merged;
    bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> heap;
  auto push = [&](int32_t pos) {
    const int32_t nx = syms[pos].next;
    if (nx < 0) return;
    if (const MergeInfo* m = FindMerge(syms[pos].id, syms[nx].id)) {
      heap.push({m->rank, pos, syms[pos].id, syms[nx].id, m->merged_id});
    }
  };
  for (int32_t i = 0; i < static_cast<int32_t>(syms.size()); ++i) push(i);
  while (!heap.empty()) {
    const Cand c = heap.top();
    heap.pop();
    Sym& left = syms[c.pos];
    if (!left.alive || left.next < 0 || left.id != c.left || syms[left.next].id != c.right)
      continue;
    Sym& right = syms[left.next];
    left.id = c.merged;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) syms[right.next].prev = c.pos;
    if (left.prev >= 0) push(left.prev);
    push(c.pos);
  }
  for (int32_t i = 0; i >= 0; i = syms[i].next) out->push_back(syms[i].id);
}

void HfBpeTokenizer::Merge(std::string_view piece, std::vector<uint32_t>* out) const {
  if (ignore_merges_) {
    if (auto it = bytes_vocab_.find(std::string(piece)); it != bytes_vocab_.end()) {
      out->push_back(it->second);
      return;
    }
  }
  if (piece.size() <= kSmallPieceBytes) {
    MergeSmall(piece, out);
  } else {
    MergeHeap(piece, out);
  }
}

std::vector<uint32_t> HfBpeTokenizer::MergeForTest(std::string_view piece, bool use_heap) const {
  std::vector<uint32_t> out;
  if (use_heap || piece.size() > kSmallPieceBytes) {
    MergeHeap(piece, &out);
  } else {
    MergeSmall(piece, &out);
  }
  return out;
}

template <typename Sink>
void HfBpeTokenizer::EncodePiece(std::string_view piece, Sink& sink) const {
  if (piece.empty()) return;
  if (piece.size() == 1) {
    const int64_t id = byte_id_[static_cast<unsigned char>(piece[0])];
    if (id >= 0) {
      sink.Add(static_cast<uint32_t>(id));
    } else if (unk_id_) {
      sink.Add(*unk_id_);
    }
    return;
  }
  thread_local std::vector<uint32_t> ids;
  ids.clear();
  if (piece.size() > PieceCache::kMaxKeyBytes) {
    Merge(piece, &ids);
    sink.AddSpan(ids.data(), ids.size());
    return;
  }
  const uint64_t hash = PieceCache::Hash(piece);
  if (!cache_.Lookup(piece, hash, &ids)) {
    Merge(piece, &ids);
    cache_.Insert(piece, hash, ids.data(), ids.size());
  }
  sink.AddSpan(ids.data(), ids.size());
}

template <typename Emit>
void HfBpeTokenizer::PreTokenize(size_t step_index, std::string_view piece, Emit& emit) const {
  if (piece.empty()) return;
  if (step_index == pre_steps_.size()) {
    emit(piece);
    return;
  }
  const PreStep& step = pre_steps_[step_index];
  std::string prefixed;
  if (step.kind == PreStep::Kind::kByteLevel && step.add_prefix_space && piece[0] != ' ') {
    prefixed.reserve(piece.size() + 1);
    prefixed.push_back(' ');
    prefixed.append(piece);
    piece = prefixed;
  }
  if (!step.regex) {
    PreTokenize(step_index + 1, piece, emit);
    return;
  }
  size_t gap_start = 0;
  size_t pos = 0;
  size_t mb, me;
  while (pos < piece.size() && step.regex->Find(piece, pos, &mb, &me)) {
    if (me == mb) {
      // An empty match cuts nothing; step over one character.
      size_t bad;
      const size_t len = utf8::SequenceLength(piece, mb, &bad);
      pos = mb + (len == 0 ? 1 : len);
      continue;
    }
    if (mb > gap_start) PreTokenize(step_index + 1, piece.substr(gap_start, mb - gap_start), emit);
    if (step.behavior == SplitBehavior::kIsolated) {
      PreTokenize(step_index + 1, piece.substr(mb, me - mb), emit);
    }
    gap_start = pos = me;
  }
  if (gap_start < piece.size()) PreTokenize(step_index + 1, piece.substr(gap_start), emit);
}

template <typename Sink>
void HfBpeTokenizer::EncodeNormalizedSpan(std::string_view span, Sink& sink) const {
  auto emit = [&](std::string_view piece) { EncodePiece(piece, sink); };
  auto on_span = [&](std::string_view s) { PreTokenize(0, s, emit); };
  auto on_token = [&](uint32_t id) { sink.Add(id); };
  SplitOnAdded(normalized_added_, span, on_span, on_token);
}

template <typename Sink>
void HfBpeTokenizer::EncodeImpl(std::string_view text, bool add_special_tokens, Sink&& sink) const {
  std::string repaired;
  if (!utf8::IsValid(text)) {
    repaired = utf8::Sanitize(text);
    text = repaired;
  }
  if (add_special_tokens) sink.AddSpan(post_prefix_ids_.data(), post_prefix_ids_.size());
  auto on_span = [&](std::string_view s) {
    std::string normalized;
    if (!normalizers_.empty() && Normalize(s, &normalized)) {
      EncodeNormalizedSpan(normalized, sink);
    } else {
      EncodeNormalizedSpan(s, sink);
    }
  };
  auto on_token = [&](uint32_t id) { sink.Add(id); };
  SplitOnAdded(raw_added_, text, on_span, on_token);
  if (add_special_tokens) sink.AddSpan(post_suffix_ids_.data(), post_suffix_ids_.size());
}

std::vector<uint32_t> HfBpeTokenizer::Encode(std::string_view text, bool add_special_tokens) const {
  std::vector<uint32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  EncodeImpl(text, add_special_tokens, IdSink{&ids});
  return ids;
}

size_t HfBpeTokenizer::CountTokens(std::string_view text, bool add_special_tokens) const {
  CountSink sink;
  EncodeImpl(text, add_special_tokens, sink);
  return sink.count;
}

std::vector<std::string> HfBpeTokenizer::PreTokenizeForTest(std::string_view text) const {
  std::vector<std::string> pieces;
  auto emit = [&](std::string_view p) { pieces.emplace_back(p); };
  PreTokenize(0, text, emit);
  return pieces;
}

}  // namespace ww
