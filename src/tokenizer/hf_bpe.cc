#include "tokenizer/hf_bpe.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <fmt/format.h>
#include <pcre2.h>
#include <utf8proc.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <queue>

#include "tokenizer/json_scan.h"
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
    // PCRE2_LITERAL refuses PCRE2_UCP (it has no classes to apply it to).
    uint32_t options = literal ? (PCRE2_UTF | PCRE2_LITERAL) : (PCRE2_UTF | PCRE2_UCP);
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

// Bounds on hostile files, checked at load (docs/tokenizer.md): the JSON outside model.vocab and
// model.merges may nest at most kMaxJsonDepth levels (Sequences inside Sequences recurse, 40,000
// of them overflow the stack), and the Replace normalizers together may make text at most
// kMaxNormalizerGrowth times longer (20 chained Replace "a" -> "aaaaaaaa" turn 16 bytes into
// 18 EB).
constexpr size_t kMaxJsonDepth = 128;
constexpr double kMaxNormalizerGrowth = 1024;

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

// At most 40 bytes of a string from the file, for a message (may cut a UTF-8 sequence).
std::string Clip(const std::string& s) { return s.size() <= 40 ? s : s.substr(0, 40) + "..."; }

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

HfBpeTokenizer::HfBpeTokenizer() {
  byte_id_.fill(-1);
  fallback_id_.fill(-1);
}
HfBpeTokenizer::~HfBpeTokenizer() = default;

// ---------------------------------------------------------------------------------------------
// Loading.

namespace {

// Compiles a tokenizer.json pattern object ({"Regex": ...} or {"String": ...}).
Result<std::shared_ptr<PcreRegex>> CompilePattern(const json& pat, const std::string& where) {
  if (pat.is_object() && pat.contains("Regex") && pat["Regex"].is_string()) {
    return PcreRegex::Compile(OnigToPcre(pat["Regex"].get<std::string>()), false, where);
  }
  if (pat.is_object() && pat.contains("String") && pat["String"].is_string()) {
    return PcreRegex::Compile(pat["String"].get<std::string>(), true, where);
  }
  return Status::InvalidInput(where + " has no Regex or String");
}

Result<HfBpeTokenizer::SplitBehavior> ParseBehavior(const json& p, const std::string& source,
                                                    const char* fallback) {
  using B = HfBpeTokenizer::SplitBehavior;
  const std::string b = p.contains("behavior") && p["behavior"].is_string()
                            ? p["behavior"].get<std::string>()
                            : std::string(fallback);
  if (b == "Isolated") return B::kIsolated;
  if (b == "Removed") return B::kRemoved;
  if (b == "MergedWithPrevious") return B::kMergedWithPrevious;
  if (b == "MergedWithNext") return B::kMergedWithNext;
  if (b == "Contiguous") return B::kContiguous;
  return Unsupported(source, "pre_tokenizer behavior '" + b + "'");
}

}  // namespace

Result<std::unique_ptr<HfBpeTokenizer>> HfBpeTokenizer::FromJsonText(std::string_view json_text,
                                                                     const std::string& source) {
  // The vocabulary and merges are decoded by the fast scanner; the rest goes through the DOM.
  auto big = tokjson::SplitBigMembers(json_text, source);
  if (!big.ok()) return big.status();
  // Before the DOM parse and the recursive walks below: the rest is small, the two big members
  // are flat and parsed by the scanner.
  WW_RETURN_IF_ERROR(tokjson::CheckNestingDepth(big->rest, kMaxJsonDepth, source));
  json root;
  try {
    root = json::parse(big->rest);
  } catch (const json::exception& e) {
    return Status::InvalidInput(fmt::format("{}: not valid JSON: {}", source, e.what()));
  }
  if (!root.is_object()) return Status::InvalidInput(source + ": top level is not a JSON object");
  std::unique_ptr<HfBpeTokenizer> t(new HfBpeTokenizer());
  std::vector<std::string> desc_parts;

  try {
    // --- model type and options
    if (!root.contains("model") || !root["model"].is_object()) {
      return Status::InvalidInput(source + ": key 'model' missing or not an object");
    }
    const json& model = root["model"];
    std::string model_type = "BPE";
    if (model.contains("type") && model["type"].is_string()) {
      model_type = model["type"].get<std::string>();
    } else if (model.contains("vocab") && model["vocab"].is_array()) {
      model_type = "Unigram";  // what the reference infers from a list vocabulary
    } else if (big->merges.empty() && !model.contains("merges")) {
      model_type = "WordPiece";
    }
    if (model_type != "BPE") {
      return Status::InvalidInput(
          fmt::format("{}: model type '{}' is not supported (only BPE models are implemented; "
                      "Unigram and WordPiece are not)",
                      source, model_type));
    }
    if (model.contains("dropout") && model["dropout"].is_number() &&
        model["dropout"].get<double>() > 0) {
      return Unsupported(source, "model.dropout (BPE dropout is random, training would differ)");
    }
    auto str_opt = [&](const char* k) {
      return model.contains(k) && model[k].is_string() ? model[k].get<std::string>()
                                                       : std::string();
    };
    t->continuing_prefix_ = str_opt("continuing_subword_prefix");
    t->end_of_word_suffix_ = str_opt("end_of_word_suffix");
    t->ignore_merges_ = FlagTrue(model, "ignore_merges");
    t->byte_fallback_ = FlagTrue(model, "byte_fallback");
    t->fuse_unk_ = FlagTrue(model, "fuse_unk");
    if (big->vocab.empty()) {
      return Status::InvalidInput(source + ": key 'model.vocab' missing or not an object");
    }
    if (big->merges.empty()) {
      return Status::InvalidInput(source + ": key 'model.merges' missing or not an array");
    }

    // --- normalizer
    // The worst-case factor by which the Replace steps so far can lengthen text: a literal
    // replaced by a longer content multiplies by their ratio; a regex (which may match empty,
    // inserting content before every character) by content + 1 bytes per byte.
    double growth = 1;
    int norm_index = 0;
    std::function<Status(const json&)> add_norm = [&](const json& n) -> Status {
      const std::string type = TypeOf(n);
      NormStep step;
      if (type == "Sequence") {
        for (const json& c : n.at("normalizers")) WW_RETURN_IF_ERROR(add_norm(c));
        return Status::Ok();
      } else if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD") {
        step.kind = NormStep::Kind::kUnicode;
        step.form = type == "NFC"    ? NormForm::kNfc
                    : type == "NFD"  ? NormForm::kNfd
                    : type == "NFKC" ? NormForm::kNfkc
                                     : NormForm::kNfkd;
      } else if (type == "Lowercase") {
        step.kind = NormStep::Kind::kLowercase;
      } else if (type == "Strip") {
        step.kind = NormStep::Kind::kStrip;
        step.strip_left = FlagTrue(n, "strip_left");
        step.strip_right = FlagTrue(n, "strip_right");
      } else if (type == "StripAccents") {
        step.kind = NormStep::Kind::kStripAccents;
      } else if (type == "Prepend") {
        step.kind = NormStep::Kind::kPrepend;
        step.text = n.at("prepend").get<std::string>();
      } else if (type == "Replace") {
        step.kind = NormStep::Kind::kReplace;
        step.text = n.at("content").get<std::string>();
        const json& pat = n.at("pattern");
        if (pat.contains("String") && pat["String"].is_string()) {
          step.literal = pat["String"].get<std::string>();
          if (step.literal.empty()) return Status::Ok();  // matches nothing
        } else {
          auto r = CompilePattern(pat, source + ": normalizer Replace pattern");
          if (!r.ok()) return r.status();
          step.regex = r.value();
        }
        const double factor =
            step.regex ? static_cast<double>(step.text.size()) + 1
                       : std::max(1.0, std::ceil(static_cast<double>(step.text.size()) /
                                                 static_cast<double>(step.literal.size())));
        growth *= factor;
        if (growth > kMaxNormalizerGrowth) {
          return Status::InvalidInput(fmt::format(
              "{}: normalizer {} (Replace '{}' -> '{}'): the Replace normalizers together can "
              "make text up to {:.3g} times longer; more than {:g} times is refused (a chain "
              "that multiplies text, not a tokenizer)",
              source, norm_index, Clip(step.regex ? "<regex>" : step.literal), Clip(step.text),
              growth, kMaxNormalizerGrowth));
        }
      } else {
        return Unsupported(source, "normalizer '" + type + "'");
      }
      desc_parts.push_back(type);
      ++norm_index;
      t->normalizers_.push_back(std::move(step));
      return Status::Ok();
    };
    if (root.contains("normalizer") && !root["normalizer"].is_null()) {
      WW_RETURN_IF_ERROR(add_norm(root["normalizer"]));
    }

    // --- pre-tokenizer
    bool byte_level = false;
    std::function<Status(const json&)> add_pre = [&](const json& p) -> Status {
      const std::string type = TypeOf(p);
      if (type == "Sequence") {
        for (const json& c : p.at("pretokenizers")) WW_RETURN_IF_ERROR(add_pre(c));
        return Status::Ok();
      }
      if (byte_level) {
        // After ByteLevel the Rust library hands later steps the byte-mapped text ("Ġthe").
        return Unsupported(source, "pre_tokenizer '" + type + "' after ByteLevel");
      }
      PreStep step;
      if (type == "Split") {
        step.kind = PreStep::Kind::kSplit;
        step.invert = FlagTrue(p, "invert");
        auto b = ParseBehavior(p, source, "Isolated");
        if (!b.ok()) return b.status();
        step.behavior = *b;
        auto r = CompilePattern(p.at("pattern"), source + ": pre_tokenizer Split pattern");
        if (!r.ok()) return r.status();
        step.regex = r.value();
        desc_parts.push_back("Split");
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
      } else if (type == "Metaspace") {
        step.kind = PreStep::Kind::kMetaspace;
        step.replacement = p.value("replacement", std::string("\xE2\x96\x81"));
        size_t bad;
        if (step.replacement.empty() ||
            utf8::SequenceLength(step.replacement, 0, &bad) != step.replacement.size()) {
          return Status::InvalidInput(source +
                                      ": pre_tokenizer Metaspace replacement is not one character");
        }
        if (p.contains("prepend_scheme") && p["prepend_scheme"].is_string()) {
          const std::string scheme = p["prepend_scheme"].get<std::string>();
          if (scheme == "always") {
            step.prepend = PreStep::Prepend::kAlways;
          } else if (scheme == "first") {
            step.prepend = PreStep::Prepend::kFirst;
          } else if (scheme == "never") {
            step.prepend = PreStep::Prepend::kNever;
          } else {
            return Unsupported(source, "Metaspace prepend_scheme '" + scheme + "'");
          }
        } else if (p.contains("add_prefix_space") && p["add_prefix_space"].is_boolean()) {
          // Files older than prepend_scheme.
          step.prepend = p["add_prefix_space"].get<bool>() ? PreStep::Prepend::kAlways
                                                           : PreStep::Prepend::kNever;
        }
        step.split = !p.contains("split") || FlagTrue(p, "split");
        desc_parts.push_back("Metaspace");
      } else if (type == "Digits") {
        step.kind = PreStep::Kind::kDigits;
        step.behavior = FlagTrue(p, "individual_digits") ? SplitBehavior::kIsolated
                                                         : SplitBehavior::kContiguous;
        desc_parts.push_back("Digits");
      } else if (type == "Punctuation") {
        step.kind = PreStep::Kind::kPunctuation;
        auto b = ParseBehavior(p, source, "Isolated");
        if (!b.ok()) return b.status();
        step.behavior = *b;
        desc_parts.push_back("Punctuation");
      } else if (type == "WhitespaceSplit") {
        step.kind = PreStep::Kind::kWhitespaceSplit;
        step.behavior = SplitBehavior::kRemoved;
        desc_parts.push_back("WhitespaceSplit");
      } else {
        return Unsupported(source, "pre_tokenizer '" + type + "'");
      }
      t->pre_steps_.push_back(std::move(step));
      return Status::Ok();
    };
    if (root.contains("pre_tokenizer") && !root["pre_tokenizer"].is_null()) {
      WW_RETURN_IF_ERROR(add_pre(root["pre_tokenizer"]));
    }
    t->byte_level_ = byte_level;

    // --- vocabulary
    std::array<int16_t, 512> u2b;
    u2b.fill(-1);
    {
      int extra = 0;
      for (int b = 0; b < 256; ++b) {
        const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
        u2b[printable ? b : 256 + extra++] = static_cast<int16_t>(b);
      }
    }
    uint32_t max_id = 0;
    bool id_too_large = false;
    t->vocab_.Reserve(big->vocab.size() / 16 + 16);
    if (byte_level) t->bytes_vocab_.Reserve(big->vocab.size() / 16 + 16);
    std::string bytes;
    WW_RETURN_IF_ERROR(
        tokjson::ParseVocab(big->vocab, source, [&](const std::string& token, uint64_t id64) {
          if (id64 > std::numeric_limits<uint32_t>::max() - 1) {
            id_too_large = true;
            return;
          }
          const auto id = static_cast<uint32_t>(id64);
          max_id = std::max(max_id, id);
          if (byte_level) {
            // Byte form of the token; tokens with code points outside the byte map have none.
            bytes.clear();
            bool mappable = true;
            for (size_t i = 0; i < token.size();) {
              size_t bad;
              if (utf8::SequenceLength(token, i, &bad) == 0) {
                mappable = false;
                break;
              }
              const char32_t cp = utf8::Decode(token, &i);
              if (cp >= u2b.size() || u2b[cp] < 0) {
                mappable = false;
                break;
              }
              bytes.push_back(static_cast<char>(u2b[cp]));
            }
            if (mappable) {
              if (bytes.size() == 1) t->byte_id_[static_cast<unsigned char>(bytes[0])] = id;
              if (!t->bytes_vocab_.Find(bytes)) t->bytes_vocab_.Put(bytes, id);
            }
          } else if (token.size() == 6 && token[0] == '<' && token[1] == '0' && token[2] == 'x' &&
                     token[5] == '>') {
            // byte_fallback's "<0xAB>" (upper-case hex, as the Rust library formats it).
            const std::string hex = token.substr(3, 2);
            if (std::isxdigit(static_cast<unsigned char>(hex[0])) &&
                std::isxdigit(static_cast<unsigned char>(hex[1])) &&
                hex == fmt::format("{:02X}", std::stoi(hex, nullptr, 16))) {
              t->fallback_id_[std::stoi(hex, nullptr, 16)] = id;
            }
          }
          t->vocab_.Put(token, id);
        }));
    if (id_too_large) return Status::InvalidInput(source + ": model.vocab has an id >= 2^32");
    if (model.contains("unk_token") && model["unk_token"].is_string()) {
      t->unk_id_ = t->vocab_.Find(model["unk_token"].get<std::string>());
    }

    // --- merges, by (left id, right id): collected in one pass, then the table is sized once.
    struct MergeEntry {
      uint32_t a, b, merged;
    };
    std::vector<MergeEntry> entries;
    entries.reserve(big->merges.size() / 10 + 16);
    const size_t prefix_len = t->continuing_prefix_.size();
    std::string merged;
    WW_RETURN_IF_ERROR(tokjson::ParseMerges(
        big->merges, source,
        [&](size_t rank, const std::string& a, const std::string& b, bool pair_form) -> Status {
          std::string_view left = a, right = b;
          if (!pair_form) {  // "a b" (older files)
            const size_t sp = a.find(' ', 1);
            if (sp == std::string::npos) {
              return Status::InvalidInput(
                  fmt::format("{}: model.merges[{}] '{}' has no space", source, rank, a));
            }
            left = std::string_view(a).substr(0, sp);
            right = std::string_view(a).substr(sp + 1);
          }
          // The merged token drops the right side's continuing_subword_prefix ("##").
          merged.assign(left);
          if (prefix_len > 0 && right.substr(0, prefix_len) == t->continuing_prefix_) {
            merged.append(right.substr(prefix_len));
          } else {
            merged.append(right);
          }
          const auto ia = t->vocab_.Find(left), ib = t->vocab_.Find(right),
                     im = t->vocab_.Find(merged);
          if (!ia || !ib || !im) {
            return Status::InvalidInput(fmt::format(
                "{}: model.merges[{}] ('{}', '{}') uses a token missing from model.vocab", source,
                rank, left, right));
          }
          entries.push_back({*ia, *ib, *im});
          return Status::Ok();
        }));
    {
      size_t capacity = 1024;
      while (capacity < entries.size() * 2 + 2) capacity *= 2;
      t->merge_table_.assign(capacity, MergeSlot{kEmptyPair, {0, 0}});
      t->merge_mask_ = capacity - 1;
      // Like the Rust library (a HashMap collected in order), a repeated pair keeps its last
      // rank.
      for (size_t rank = 0; rank < entries.size(); ++rank) {
        const MergeEntry& e = entries[rank];
        t->AddMerge(PairKey(e.a, e.b), {static_cast<uint32_t>(rank), e.merged});
      }
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
        // Both references default `normalized` to !special.
        tok.normalized = a.contains("normalized") && a["normalized"].is_boolean()
                             ? a["normalized"].get<bool>()
                             : !FlagTrue(a, "special");
        max_id = std::max(max_id, tok.id);
        if (tok.normalized && !t->normalizers_.empty()) {
          // Matched against normalized text, so by its normalized content.
          std::string norm;
          if (t->Normalize(tok.content, &norm)) tok.content = std::move(norm);
          if (tok.content.empty()) continue;
        } else {
          tok.normalized = false;
        }
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

    // --- post-processor (only used with add_special_tokens)
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
  } catch (const json::exception& e) {
    return Status::InvalidInput(fmt::format("{}: unexpected structure: {}", source, e.what()));
  } catch (const std::exception& e) {
    return Status::InvalidInput(fmt::format("{}: unexpected structure: {}", source, e.what()));
  }

  std::vector<std::string> model_opts;
  if (t->byte_fallback_) model_opts.push_back("byte_fallback");
  if (t->ignore_merges_) model_opts.push_back("ignore_merges");
  t->describe_ =
      fmt::format("{}BPE (tokenizer.json, {} ids, {} merges, {} added tokens{}{}{}{})",
                  t->byte_level_ ? "byte-level " : "", t->vocab_size_, t->merge_count_,
                  t->added_.size(), model_opts.empty() ? "" : ", ", fmt::join(model_opts, ", "),
                  desc_parts.empty() ? "" : ", ", fmt::join(desc_parts, "+"));
  return t;
}

std::string HfBpeTokenizer::Describe() const { return describe_; }

std::optional<uint32_t> HfBpeTokenizer::TokenToId(std::string_view token) const {
  if (auto it = added_by_content_.find(std::string(token)); it != added_by_content_.end()) {
    return it->second;
  }
  return vocab_.Find(token);
}

// ---------------------------------------------------------------------------------------------
// Normalization.

namespace {

bool IsMark(char32_t c) {
  const utf8proc_category_t cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return cat == UTF8PROC_CATEGORY_MN || cat == UTF8PROC_CATEGORY_MC || cat == UTF8PROC_CATEGORY_ME;
}

// Rust's char::is_numeric: general categories Nd, Nl, No.
bool IsNumeric(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  const utf8proc_category_t cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return cat == UTF8PROC_CATEGORY_ND || cat == UTF8PROC_CATEGORY_NL || cat == UTF8PROC_CATEGORY_NO;
}

// The Rust library's is_punc: ASCII punctuation (which includes $+<=>^`|~) or a P* category.
bool IsPunctuation(char32_t c) {
  if (c < 0x80)
    return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
           (c >= 0x7B && c <= 0x7E);
  const utf8proc_category_t cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return cat >= UTF8PROC_CATEGORY_PC && cat <= UTF8PROC_CATEGORY_PO;
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

void HfBpeTokenizer::InitialSymbols(std::string_view piece, std::vector<uint32_t>* out) const {
  if (byte_level_) {
    for (unsigned char c : piece) {
      if (byte_id_[c] >= 0) {
        out->push_back(static_cast<uint32_t>(byte_id_[c]));
      } else if (unk_id_) {
        out->push_back(*unk_id_);
      }
    }
    return;
  }
  // One symbol per character (with the model's prefix and suffix), as the Rust library's
  // BPE::merge_word: unknown characters fall back to their bytes' <0xXX> tokens, else to
  // unk_token, consecutive unknowns fused into one with fuse_unk.
  thread_local std::string key;
  bool last_was_unk = false;
  for (size_t i = 0; i < piece.size();) {
    size_t bad;
    size_t len = utf8::SequenceLength(piece, i, &bad);
    if (len == 0) len = bad;  // not reached: input is valid UTF-8
    std::string_view ch = piece.substr(i, len);
    const bool first = i == 0;
    i += len;
    const bool last = i >= piece.size();
    std::string_view lookup = ch;
    if ((!first && !continuing_prefix_.empty()) || (last && !end_of_word_suffix_.empty())) {
      key.clear();
      if (!first) key += continuing_prefix_;
      key += ch;
      if (last) key += end_of_word_suffix_;
      lookup = key;
    }
    if (const auto id = vocab_.Find(lookup)) {
      out->push_back(*id);
      last_was_unk = false;
      continue;
    }
    if (byte_fallback_) {
      bool all = true;
      for (unsigned char b : lookup) all = all && fallback_id_[b] >= 0;
      if (all) {
        for (unsigned char b : lookup) out->push_back(static_cast<uint32_t>(fallback_id_[b]));
        last_was_unk = false;
        continue;
      }
    }
    if (unk_id_) {
      if (!(fuse_unk_ && last_was_unk)) out->push_back(*unk_id_);
      last_was_unk = true;
    }
  }
}

void HfBpeTokenizer::MergeSmall(std::vector<uint32_t>* symbols) const {
  // Symbols and the rank of each adjacent pair; merge the lowest rank (leftmost on ties) until
  // no pair has a merge. Only the two pairs around a merge are looked up again. At most
  // kSmallPieceBytes symbols, so everything lives on the stack.
  constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
  std::array<uint32_t, kSmallPieceBytes> ids, ranks, merged;
  size_t n = symbols->size();
  std::copy(symbols->begin(), symbols->end(), ids.begin());
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
  symbols->assign(ids.begin(), ids.begin() + static_cast<ptrdiff_t>(n));
}

void HfBpeTokenizer::MergeHeap(std::vector<uint32_t>* symbols) const {
  // Linked list of symbols plus a min-heap of candidate pairs keyed (rank, position); stale
  // entries are skipped when popped. O(n log n) for long pieces such as white-space runs.
  struct Sym {
    uint32_t id;
    int32_t prev, next;
    bool alive;
  };
  if (symbols->empty()) return;
  std::vector<Sym> syms;
  syms.reserve(symbols->size());
  for (uint32_t id : *symbols) {
    const auto idx = static_cast<int32_t>(syms.size());
    syms.push_back({id, idx - 1, idx + 1, true});
  }
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
  symbols->clear();
  for (int32_t i = 0; i >= 0; i = syms[i].next) symbols->push_back(syms[i].id);
}

void HfBpeTokenizer::Merge(std::string_view piece, std::vector<uint32_t>* out) const {
  if (ignore_merges_) {
    const TokenTable& whole = byte_level_ ? bytes_vocab_ : vocab_;
    if (const auto id = whole.Find(piece)) {
      out->push_back(*id);
      return;
    }
  }
  thread_local std::vector<uint32_t> symbols;
  symbols.clear();
  InitialSymbols(piece, &symbols);
  if (symbols.size() <= kSmallPieceBytes) {
    MergeSmall(&symbols);
  } else {
    MergeHeap(&symbols);
  }
  out->insert(out->end(), symbols.begin(), symbols.end());
}

std::vector<uint32_t> HfBpeTokenizer::MergeForTest(std::string_view piece, bool use_heap) const {
  std::vector<uint32_t> symbols;
  InitialSymbols(piece, &symbols);
  if (use_heap || symbols.size() > kSmallPieceBytes) {
    MergeHeap(&symbols);
  } else {
    MergeSmall(&symbols);
  }
  return symbols;
}

template <typename Sink>
void HfBpeTokenizer::EncodePiece(std::string_view piece, Sink& sink) const {
  if (piece.empty()) return;
  if (byte_level_ && piece.size() == 1) {
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

// ---------------------------------------------------------------------------------------------
// Pre-tokenization.

namespace {

struct Segment {
  size_t begin, end;
  bool match;
};

// The Rust library's SplitDelimiterBehavior over a list of (range, is_match) segments covering
// the text; returns the pieces' ranges (empty ones dropped by the caller).
void ApplyBehavior(const std::vector<Segment>& segs, HfBpeTokenizer::SplitBehavior behavior,
                   std::vector<std::pair<size_t, size_t>>* out) {
  using B = HfBpeTokenizer::SplitBehavior;
  out->clear();
  switch (behavior) {
    case B::kIsolated:
      for (const Segment& s : segs) out->emplace_back(s.begin, s.end);
      break;
    case B::kRemoved:
      for (const Segment& s : segs) {
        if (!s.match) out->emplace_back(s.begin, s.end);
      }
      break;
    case B::kMergedWithPrevious: {
      bool previous_match = false;
      for (const Segment& s : segs) {
        if (s.match && !previous_match && !out->empty()) {
          out->back().second = s.end;
        } else {
          out->emplace_back(s.begin, s.end);
        }
        previous_match = s.match;
      }
      break;
    }
    case B::kMergedWithNext: {
      bool previous_match = false;
      for (size_t k = segs.size(); k-- > 0;) {
        const Segment& s = segs[k];
        if (s.match && !previous_match && !out->empty()) {
          out->back().first = s.begin;
        } else {
          out->emplace_back(s.begin, s.end);
        }
        previous_match = s.match;
      }
      std::reverse(out->begin(), out->end());
      break;
    }
    case B::kContiguous: {
      bool previous_match = false;
      for (const Segment& s : segs) {
        if (s.match == previous_match && !out->empty()) {
          out->back().second = s.end;
        } else {
          out->emplace_back(s.begin, s.end);
        }
        previous_match = s.match;
      }
      break;
    }
  }
}

// Segments where each character satisfying `pred` is a match of its own (the Rust library's
// Pattern for `Fn(char) -> bool`), non-matching runs one segment each.
template <typename Pred>
void CharSegments(std::string_view s, Pred&& pred, std::vector<Segment>* segs) {
  segs->clear();
  size_t run = 0;
  for (size_t i = 0; i < s.size();) {
    const size_t start = i;
    const char32_t cp = utf8::Decode(s, &i);
    if (pred(cp)) {
      if (run < start) segs->push_back({run, start, false});
      segs->push_back({start, i, true});
      run = i;
    }
  }
  if (run < s.size()) segs->push_back({run, s.size(), false});
}

}  // namespace

template <typename Emit>
void HfBpeTokenizer::SplitGeneral(size_t step_index, std::string_view piece, bool at_text_start,
                                  Emit& emit) const {
  const PreStep& step = pre_steps_[step_index];
  std::vector<Segment> segs;
  switch (step.kind) {
    case PreStep::Kind::kSplit: {
      size_t pos = 0, last_end = 0, mb, me;
      bool any = false;
      while (pos <= piece.size() && step.regex->Find(piece, pos, &mb, &me)) {
        if (me == mb && any && mb == last_end) {
          // Oniguruma's iteration never reports an empty match right after a match.
        } else {
          if (mb > last_end) segs.push_back({last_end, mb, false});
          segs.push_back({mb, me, true});
          last_end = me;
          any = true;
        }
        if (me == mb) {
          if (mb >= piece.size()) break;
          size_t bad;
          const size_t len = utf8::SequenceLength(piece, mb, &bad);
          pos = mb + (len == 0 ? 1 : len);
        } else {
          pos = me;
        }
      }
      if (last_end < piece.size()) segs.push_back({last_end, piece.size(), false});
      if (step.invert) {
        for (Segment& s : segs) s.match = !s.match;
      }
      break;
    }
    case PreStep::Kind::kDigits:
      CharSegments(piece, IsNumeric, &segs);
      break;
    case PreStep::Kind::kPunctuation:
      CharSegments(piece, IsPunctuation, &segs);
      break;
    case PreStep::Kind::kWhitespaceSplit:
      CharSegments(piece, utf8::IsWhiteSpace, &segs);
      break;
    case PreStep::Kind::kMetaspace: {
      size_t i = 0;
      const char32_t rep = utf8::Decode(step.replacement, &i);
      CharSegments(
          piece, [rep](char32_t c) { return c == rep; }, &segs);
      break;
    }
    case PreStep::Kind::kByteLevel:
      break;  // not reached
  }
  std::vector<std::pair<size_t, size_t>> ranges;
  ApplyBehavior(
      segs, step.kind == PreStep::Kind::kMetaspace ? SplitBehavior::kMergedWithNext : step.behavior,
      &ranges);
  for (const auto& [b, e] : ranges) {
    if (e > b) PreTokenize(step_index + 1, piece.substr(b, e - b), at_text_start && b == 0, emit);
  }
}

template <typename Emit>
void HfBpeTokenizer::PreTokenize(size_t step_index, std::string_view piece, bool at_text_start,
                                 Emit& emit) const {
  if (piece.empty()) return;
  if (step_index == pre_steps_.size()) {
    emit(piece);
    return;
  }
  const PreStep& step = pre_steps_[step_index];
  switch (step.kind) {
    case PreStep::Kind::kMetaspace: {
      std::string replaced;
      replaced.reserve(piece.size() + 8);
      const bool prepend = step.prepend == PreStep::Prepend::kAlways ||
                           (step.prepend == PreStep::Prepend::kFirst && at_text_start);
      for (char c : piece) {
        if (c == ' ') {
          replaced += step.replacement;
        } else {
          replaced.push_back(c);
        }
      }
      if (prepend && replaced.compare(0, step.replacement.size(), step.replacement) != 0) {
        replaced.insert(0, step.replacement);
      }
      if (step.split) {
        SplitGeneral(step_index, replaced, at_text_start, emit);
      } else {
        PreTokenize(step_index + 1, replaced, at_text_start, emit);
      }
      return;
    }
    case PreStep::Kind::kDigits:
    case PreStep::Kind::kPunctuation:
    case PreStep::Kind::kWhitespaceSplit:
      SplitGeneral(step_index, piece, at_text_start, emit);
      return;
    case PreStep::Kind::kSplit:
      if (step.invert ||
          (step.behavior != SplitBehavior::kIsolated && step.behavior != SplitBehavior::kRemoved)) {
        SplitGeneral(step_index, piece, at_text_start, emit);
        return;
      }
      break;  // the streaming loop below
    case PreStep::Kind::kByteLevel:
      break;
  }
  std::string prefixed;
  if (step.kind == PreStep::Kind::kByteLevel && step.add_prefix_space && piece[0] != ' ') {
    prefixed.reserve(piece.size() + 1);
    prefixed.push_back(' ');
    prefixed.append(piece);
    piece = prefixed;
  }
  if (!step.regex) {
    PreTokenize(step_index + 1, piece, at_text_start, emit);
    return;
  }
  // Isolated or Removed without invert: stream the pieces, no segment list.
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
    if (mb > gap_start) {
      PreTokenize(step_index + 1, piece.substr(gap_start, mb - gap_start),
                  at_text_start && gap_start == 0, emit);
    }
    if (step.behavior == SplitBehavior::kIsolated) {
      PreTokenize(step_index + 1, piece.substr(mb, me - mb), at_text_start && mb == 0, emit);
    }
    gap_start = pos = me;
  }
  if (gap_start < piece.size()) {
    PreTokenize(step_index + 1, piece.substr(gap_start), at_text_start && gap_start == 0, emit);
  }
}

template <typename Sink>
void HfBpeTokenizer::EncodeNormalizedSpan(std::string_view span, bool at_text_start,
                                          Sink& sink) const {
  auto emit = [&](std::string_view piece) { EncodePiece(piece, sink); };
  auto on_span = [&](std::string_view s) {
    PreTokenize(0, s, at_text_start && s.data() == span.data(), emit);
  };
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
    const bool at_start = s.data() == text.data();
    std::string normalized;
    if (!normalizers_.empty() && Normalize(s, &normalized)) {
      EncodeNormalizedSpan(normalized, at_start, sink);
    } else {
      EncodeNormalizedSpan(s, at_start, sink);
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
  PreTokenize(0, text, true, emit);
  return pieces;
}

}  // namespace ww
