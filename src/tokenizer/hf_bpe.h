// Hugging Face tokenizer.json with a BPE model, implemented to give the same ids as the Rust
// `tokenizers` library (and tokenizers.js), step by step:
//   1. added tokens with normalized=false are split out of the raw text (leftmost-longest);
//   2. each remaining span is normalized: NFC/NFD/NFKC/NFKD, Lowercase, Strip, StripAccents,
//      Prepend, Replace (string or regex), in any Sequence;
//   3. added tokens with normalized=true (content normalized too) are split out of that text;
//   4. the pre-tokenizer cuts spans into pieces: Split (regex or string, every behavior, invert),
//      ByteLevel, Metaspace, Digits, Punctuation, WhitespaceSplit, or a Sequence of those;
//   5. each piece is merged by rank. Byte-level (a ByteLevel pre-tokenizer): every byte is an
//      initial symbol. Otherwise (SentencePiece-style, Llama-2, Gemma): every character is,
//      with end_of_word_suffix / continuing_subword_prefix, byte_fallback to <0xXX> tokens for
//      characters outside the vocabulary, else unk_token (fused when fuse_unk);
//   6. with add_special_tokens, the post-processor (TemplateProcessing, ByteLevel, Sequence,
//      Bert/Roberta). The decoder is ignored: counting never decodes.
// Anything else in the file (Unigram or WordPiece models, BertNormalizer, ...) is refused at load
// by name.
//
// Regex semantics: patterns are compiled with PCRE2 (UTF, UCP, JIT). `\s`, `\S` are rewritten to
// Oniguruma's white-space set (that of the Rust library and tokenizers.js), which differs from
// PCRE2's. \p{L}, \p{N} follow PCRE2's Unicode tables widened to utf8proc's, see
// docs/tokenizer.md. Where tokenizers.js departs from the Rust library (Split behaviors other
// than Isolated/Removed, Metaspace split, continuing_subword_prefix), this follows Rust, the
// library training runs.
//
// Thread-safety: immutable after construction except the piece cache, which is sharded and
// guarded by a mutex per shard; all const methods may run concurrently.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "tokenizer/piece_cache.h"
#include "tokenizer/token_table.h"
#include "tokenizer/tokenizer.h"

namespace ww {

class PcreRegex;  // pcre_regex.h

class HfBpeTokenizer final : public Tokenizer {
 public:
  static Result<std::unique_ptr<HfBpeTokenizer>> FromJsonText(std::string_view json_text,
                                                              const std::string& source_name);
  ~HfBpeTokenizer() override;

  std::vector<uint32_t> Encode(std::string_view text, bool add_special_tokens) const override;
  size_t CountTokens(std::string_view text, bool add_special_tokens) const override;
  std::optional<uint32_t> TokenToId(std::string_view token) const override;
  size_t VocabSize() const override { return vocab_size_; }
  std::string Describe() const override;

  // The BPE step alone on raw bytes, bypassing cache and pre-tokenizer. `use_heap` forces the
  // priority-queue merge loop (normally used for long pieces only) so tests can prove both loops
  // agree.
  std::vector<uint32_t> MergeForTest(std::string_view piece_bytes, bool use_heap) const;

  // Pieces the pre-tokenizer makes of `text` (normalized, no added tokens), as raw bytes.
  std::vector<std::string> PreTokenizeForTest(std::string_view text) const;

  struct AddedToken {
    std::string content;
    uint32_t id = 0;
    bool lstrip = false;
    bool rstrip = false;
    bool normalized = false;
  };
  enum class NormForm { kNfc, kNfd, kNfkc, kNfkd };
  struct NormStep {
    enum class Kind { kUnicode, kLowercase, kStrip, kStripAccents, kPrepend, kReplace } kind;
    NormForm form = NormForm::kNfc;                // kUnicode
    bool strip_left = false, strip_right = false;  // kStrip
    std::string text;                  // kPrepend: the prefix; kReplace: the replacement
    std::string literal;               // kReplace with a String pattern
    std::shared_ptr<PcreRegex> regex;  // kReplace with a Regex pattern
  };
  enum class SplitBehavior {
    kIsolated,
    kRemoved,
    kMergedWithPrevious,
    kMergedWithNext,
    kContiguous
  };
  struct PreStep {
    enum class Kind {
      kSplit,
      kByteLevel,
      kMetaspace,
      kDigits,
      kPunctuation,
      kWhitespaceSplit
    } kind = Kind::kSplit;
    std::shared_ptr<PcreRegex> regex;  // Split, or ByteLevel with use_regex
    SplitBehavior behavior = SplitBehavior::kIsolated;
    bool invert = false;            // Split
    bool add_prefix_space = false;  // ByteLevel
    std::string replacement;        // Metaspace (one character)
    enum class Prepend { kAlways, kFirst, kNever } prepend = Prepend::kAlways;  // Metaspace
    bool split = true;                                                          // Metaspace
  };

 private:
  HfBpeTokenizer();

  template <typename Sink>
  void EncodeImpl(std::string_view text, bool add_special_tokens, Sink&& sink) const;
  template <typename Sink>
  void EncodeNormalizedSpan(std::string_view span, bool at_text_start, Sink& sink) const;
  template <typename Emit>
  void PreTokenize(size_t step, std::string_view piece, bool at_text_start, Emit& emit) const;
  template <typename Emit>
  void SplitGeneral(size_t step, std::string_view piece, bool at_text_start, Emit& emit) const;
  template <typename Sink>
  void EncodePiece(std::string_view piece, Sink& sink) const;
  static constexpr size_t kSmallPieceBytes = 64;  // longer pieces use the heap loop
  // Initial symbols of a piece (bytes or characters, see above), appended to *out.
  void InitialSymbols(std::string_view piece, std::vector<uint32_t>* out) const;
  // Merge loops over symbols; the result replaces *ids.
  void MergeSmall(std::vector<uint32_t>* ids) const;
  void MergeHeap(std::vector<uint32_t>* ids) const;
  void Merge(std::string_view piece, std::vector<uint32_t>* out) const;
  // Normalized form of `span`, in *out; returns false (leaving *out alone) when unchanged.
  bool Normalize(std::string_view span, std::string* out) const;

  struct MergeInfo {
    uint32_t rank;
    uint32_t merged_id;
  };
  static uint64_t PairKey(uint32_t a, uint32_t b) { return (uint64_t{a} << 32) | b; }
  const MergeInfo* FindMerge(uint32_t a, uint32_t b) const;

  // Model.
  TokenTable vocab_;        // surface form ("Ġthe", "▁the") -> id
  TokenTable bytes_vocab_;  // byte-level only: " the" -> id
  bool byte_level_ = false;
  bool byte_fallback_ = false;
  bool fuse_unk_ = false;
  std::string continuing_prefix_, end_of_word_suffix_;
  std::array<int64_t, 256> fallback_id_{};  // id of "<0xXX>" for each byte, -1 when absent
  // Merges by (left id, right id): open addressing, linear probing, kEmptyPair marks a free slot.
  // Flat because merge lookups are the inner loop of every cache miss.
  struct MergeSlot {
    uint64_t key;
    MergeInfo info;
  };
  static constexpr uint64_t kEmptyPair = ~uint64_t{0};
  std::vector<MergeSlot> merge_table_;
  uint64_t merge_mask_ = 0;
  size_t merge_count_ = 0;
  void AddMerge(uint64_t key, MergeInfo info);
  std::array<int64_t, 256> byte_id_{};  // id of each single byte, -1 when absent
  std::optional<uint32_t> unk_id_;
  bool ignore_merges_ = false;
  size_t vocab_size_ = 0;

  // Added tokens, leftmost-longest. Per first byte, candidates sorted longest first.
  struct AddedSet {
    std::array<std::vector<const AddedToken*>, 256> by_first_byte;
    std::array<bool, 256> is_first_byte{};
    bool empty = true;
  };
  std::vector<AddedToken> added_;
  AddedSet raw_added_, normalized_added_;
  std::unordered_map<std::string, uint32_t> added_by_content_;

  std::vector<NormStep> normalizers_;
  std::vector<PreStep> pre_steps_;
  std::vector<uint32_t> post_prefix_ids_, post_suffix_ids_;
  std::string describe_;

  mutable PieceCache cache_;
};

}  // namespace ww
