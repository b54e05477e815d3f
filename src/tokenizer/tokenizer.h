// Exact tokenization for the gate: the gate predicts each rank's step count before launch, so it
// must produce the very ids training will produce.
//
// Two back ends behind one interface:
//  * Hugging Face `tokenizer.json` with a byte-level BPE model (Qwen2/Qwen3, Llama-3, GPT-2
//    families): added/special tokens split out first, the normalizer (NFC/NFD/NFKC/NFKD via
//    utf8proc), the pre-tokenizer (Split regex through PCRE2 with UTF+UCP+JIT, ByteLevel, Digits),
//    byte-level mapping and merges by rank, with a cache of already-encoded pieces.
//  * SentencePiece `tokenizer.model` (Llama-2, Gemma) through libsentencepiece.
// Features of tokenizer.json this code does not implement are refused at Load() by name
// ("normalizer 'Lowercase' is not supported"), never silently approximated.
//
// Invalid UTF-8 in the input is replaced by U+FFFD, one per maximal ill-formed subpart (the rule
// of the WHATWG decoder and Rust's String::from_utf8_lossy), before anything else happens.
//
// Ownership and threads: Load() returns a Tokenizer the caller owns. After Load() a Tokenizer is
// immutable except for an internal piece cache guarded by sharded locks, so every const method
// may be called from any number of threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace ww {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Loads `path`: a SentencePiece model when the file is a protobuf (`*.model`), otherwise a
  // Hugging Face tokenizer.json. Errors name the file and the unsupported feature or bad key.
  static Result<std::unique_ptr<Tokenizer>> Load(const std::string& path);

  // Parses tokenizer.json text already in memory; `source_name` is used in error messages.
  static Result<std::unique_ptr<Tokenizer>> FromJsonText(std::string_view json_text,
                                                         const std::string& source_name);

  // Token ids of `text` (bytes, ideally UTF-8). Added and special tokens in the text are always
  // recognised, as Hugging Face does by default. `add_special_tokens` applies the post-processor
  // (e.g. Llama-3's <|begin_of_text|>; nothing for Qwen3) or SentencePiece's BOS.
  virtual std::vector<uint32_t> Encode(std::string_view text,
                                       bool add_special_tokens = false) const = 0;

  // Same count as Encode(text, add_special_tokens).size(), without keeping the ids.
  virtual size_t CountTokens(std::string_view text, bool add_special_tokens = false) const {
    return Encode(text, add_special_tokens).size();
  }

  // Id of a token given by its surface string, e.g. "<|endoftext|>" or "<|im_end|>". Looks in
  // added tokens first, then the model vocabulary (byte-level form, e.g. "Ġthe").
  virtual std::optional<uint32_t> TokenToId(std::string_view token) const = 0;

  // Number of distinct ids: max id + 1 over vocabulary and added tokens.
  virtual size_t VocabSize() const = 0;

  // One line for logs: "byte-level BPE (tokenizer.json, 151669 ids, NFC, 1 Split regex)".
  virtual std::string Describe() const = 0;
};

// Replaces every ill-formed UTF-8 subsequence of `bytes` with U+FFFD (EF BF BD), one replacement
// per maximal subpart. Returns the input unchanged (copied) when it is already valid.
std::string SanitizeUtf8(std::string_view bytes);

}  // namespace ww
