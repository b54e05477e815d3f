// Loading a tokenizer.json into an HfBpeTokenizer: the two big members through the shared scanner
// (json_scan.h), the rest (normalizers, pre-tokenizers, added tokens, post-processor) from the
// DOM, each refused by name when not supported, and the bounds on hostile files.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>

#include "tokenizer/hf_bpe.h"
#include "tokenizer/json_scan.h"
#include "tokenizer/pcre_regex.h"
#include "tokenizer/utf8.h"

namespace ww {
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

}  // namespace ww
