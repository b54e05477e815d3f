// Fuzz target for the tokenizer's parsers and encoder. Each input is used three ways:
//   1. as a tokenizer.json (Load must return a Status, never crash, whatever the bytes); one
//      that loads encodes a fixed text and the input itself (ids in range, counts agree), so the
//      corpus's small tokenizer.json variants run every normalizer, pre-tokenizer and model
//      option;
//   2. as text for a small byte-level BPE tokenizer with an NFC normalizer, a Split regex with
//      `\s+(?!\S)`, added tokens with lstrip/rstrip, and merges (Encode must give ids that
//      CountTokens agrees with, for any bytes, valid UTF-8 or not);
//   3. as a JSON line for ExtractJsonlText (lone surrogates, invalid bytes, bad JSON).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "tokenizer/jsonl_text.h"
#include "tokenizer/tokenizer.h"

namespace {

const char kTinyTokenizer[] = R"({
  "added_tokens": [
    {"id": 300, "content": "<|end|>", "lstrip": true, "rstrip": true, "normalized": false},
    {"id": 301, "content": "<s>", "normalized": true}],
  "normalizer": {"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "NFKD"}]},
  "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
    {"type": "Split", "pattern": {"Regex":
      "(?i:'s|'t)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
     "behavior": "Isolated"},
    {"type": "ByteLevel", "add_prefix_space": true, "use_regex": true}]},
  "post_processor": {"type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "<s>"}}, {"Sequence": {"id": "A"}}],
    "special_tokens": {"<s>": {"ids": [301]}}},
  "model": {"type": "BPE", "vocab": {VOCAB}, "merges": ["Ġ t", "h e", "Ġt he", "Ġ Ġ", "ĠĠ ĠĠ"]}
})";

std::unique_ptr<ww::Tokenizer> MakeTiny() {
  // The 256 byte-level symbols, then the merged tokens.
  std::string vocab;
  int id = 0;
  int extra = 0;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
    const char32_t cp = printable ? b : 256 + extra++;
    std::string s;
    if (cp < 0x80) {
      if (cp == '"' || cp == '\\') s += '\\';
      s += static_cast<char>(cp);
    } else {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
    vocab += "\"" + s + "\": " + std::to_string(id++) + ", ";
  }
  vocab += R"("Ġt": 256, "he": 257, "Ġthe": 258, "ĠĠ": 259, "ĠĠĠĠ": 260)";
  std::string json = kTinyTokenizer;
  json.replace(json.find("{VOCAB}"), 7, "{" + vocab + "}");
  auto t = ww::Tokenizer::FromJsonText(json, "tiny");
  if (!t.ok()) {
    std::fprintf(stderr, "tiny tokenizer does not load: %s\n", t.status().message().c_str());
    std::abort();
  }
  return std::move(t).value();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::unique_ptr<ww::Tokenizer> tiny = MakeTiny();
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);

  auto loaded = ww::Tokenizer::FromJsonText(bytes, "fuzz.json");
  if (loaded.ok()) {
    const auto ids = (*loaded)->Encode("Hello world  \n\t<|x|> 123 \xC3\xA9", true);
    if ((*loaded)->CountTokens("Hello world  \n\t<|x|> 123 \xC3\xA9", true) != ids.size()) {
      std::abort();
    }
    // The input itself as text, through whatever pipeline it configured.
    const auto own = (*loaded)->Encode(bytes, false);
    if ((*loaded)->CountTokens(bytes, false) != own.size()) std::abort();
    for (uint32_t id : own) {
      if (id >= (*loaded)->VocabSize()) std::abort();
    }
  }

  const auto ids = tiny->Encode(bytes, false);
  if (tiny->CountTokens(bytes, false) != ids.size()) std::abort();
  for (uint32_t id : ids) {
    if (id >= tiny->VocabSize()) std::abort();
  }
  if (ww::SanitizeUtf8(ww::SanitizeUtf8(bytes)) != ww::SanitizeUtf8(bytes)) std::abort();

  auto text = ww::ExtractJsonlText(bytes, "text");
  if (text.ok() && ww::SanitizeUtf8(*text) != *text) std::abort();  // always valid UTF-8
  return 0;
}
