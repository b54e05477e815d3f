// Hugging Face tokenizer.json with a byte-level BPE model, implemented to give the same ids as
// the Rust `tokenizers` library (and tokenizers.js), step by step:
//   1. added tokens with normalized=false are split out of the raw text (leftmost-longest);
//   2. each remaining span is normalized (NFC, NFD, NFKC, NFKD or a Sequence of them);
//   3. added tokens with normalized=true are split out of the normalized text;
//   4. the pre-tokenizer cuts spans into pieces (Split with a regex or string, ByteLevel with or
//      without its GPT-2 regex and prefix space, or a Sequence of those);
//   5. each piece's bytes are merged by rank (byte-level: every byte is an initial symbol);
//   6. with add_special_tokens, the post-processor (TemplateProcessing, ByteLevel, Sequence).
// Anything else in the file is refused at load by name.
//
// Regex semantics: patterns are compiled with PCRE2 (UTF, UCP, JIT). `\s`, `\S` are rewritten to
// Oniguruma's white-space set (that of the Rust library and tokenizers.js), which differs from
// PCRE2's. \p{L}, \p{N} follow PCRE2's Unicode tables (10.42: Unicode 14), so letters first
// assigned in Unicode 15 (e.g. CJK Extension H) are not letters here; see docs/tokenizer.md.
//
// Thread-safety: immutable after construction except the piece cache, which is sharded and
// guarded by a mutex per shard; all const methods may run concurrently.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "tokenizer/piece_cache.h"
#include "tokenizer/tokenizer.h"

namespace ww {

class PcreRegex;  // hf_bpe.cc

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
  enum class SplitBehavior { kIsolated, kRemoved, kMergedWithPrevious, kMergedWithNext };
  struct PreStep {
    enum class Kind { kSplit, kByteLevel } kind = Kind::kSplit;
    std::shared_ptr<PcreRegex> regex;  // Split, or ByteLevel with use_regex
    SplitBehavior behavior = SplitBehavior::kIsolated;
    bool add_prefix_space = false;  // ByteLevel only
  };

 private:
  HfBpeTokenizer();

  template <typename Sink>
  void EncodeImpl(std::string_view text, bool add_special_tokens, Sink&& sink) const;
  template <typename Sink>
  void EncodeNormalizedSpan(std::string_view span, Sink& sink) const;
  template <typename Emit>
  void PreTokenize(size_t step, std::string_view piece, Emit& emit) const;
  template <typename Sink>
  void EncodePiece(std::string_view piece, Sink& sink) const;
  static constexpr size_t kSmallPieceBytes = 64;  // longer pieces use the heap loop
  void MergeSmall(std::string_view piece, std::vector<uint32_t>* out) const;
  void MergeHeap(std::string_view piece, std::vector<uint32_t>* out) const;
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
  std::unordered_map<std::string, uint32_t> vocab_;        // surface form ("Ġthe") -> id
  std::unordered_map<std::string, uint32_t> bytes_vocab_;  // raw bytes (" the") -> id
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

  std::vector<NormForm> normalizers_;
  std::vector<PreStep> pre_steps_;
  std::vector<uint32_t> post_prefix_ids_, post_suffix_ids_;
  std::string describe_;

  mutable PieceCache cache_;
};

}  // namespace ww
