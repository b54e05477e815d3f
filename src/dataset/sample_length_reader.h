// Dataset readers that yield per-sample token counts ("lengths") the way a data loader would
// walk a corpus: streaming, in chunks, never loading token data whole. The gate replays sharding,
// packing and batching from these lengths; `wattwatch iobench` can reuse them to read a corpus.
//
// Formats (see docs/gate.md for the on-disk layouts each accepts):
//   megatron   PREFIX.idx / PREFIX.bin (MMIDIDX v1); lengths from the .idx alone
//   npy        a 1-D integer lengths array (X.npy), a 2-D (samples, tokens) token array, or
//              PREFIX.offsets.npy + PREFIX.tokens.npy
//   jsonl      one JSON object per line with a list of token ids under `field`
//   arrow      Arrow IPC stream (HF datasets cache .arrow) with a list<int> / large_list<int>
//              column `field`
//   text-jsonl one JSON object per line with a string under `field`, tokenized with a
//              TokenCounter
//
// Every reader validates what it reads: a header that lies about counts, offsets out of order
// or a truncated file give a Status naming the file and the position, never a crash, and no
// allocation is sized by an unchecked header field.
//
// Ownership: a reader owns its open files; the Env and TokenCounter passed in must outlive it.
// Thread-safety: one reader per thread; distinct readers are independent.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/env.h"
#include "core/status.h"

namespace ww::dataset {

enum class DataFormat { kMegatron, kNpy, kJsonl, kArrow, kTextJsonl };

std::optional<DataFormat> ParseDataFormat(std::string_view name);
std::string_view DataFormatName(DataFormat format);
// Every format, in the order help texts list them.
const std::vector<DataFormat>& AllDataFormats();
// The field a format reads when none is given: "text" for text-jsonl, "input_ids" otherwise.
std::string_view DefaultField(DataFormat format);

// How token ids are stored on disk (Megatron dtype code, npy descr, Arrow Int child).
struct TokenDtype {
  std::string name;  // "uint16", "int32", ...
  int bits = 0;
  bool is_signed = false;
  bool is_integer = true;
  // Largest id the storage can hold (0 for non-integer storage).
  uint64_t max_id() const;
};

// Range of token ids a reader has seen: every id for text formats, a bounded sample of the
// token storage for binary formats (see ReaderOptions::token_sample_bytes).
struct TokenIdRange {
  uint64_t ids_seen = 0;
  int64_t min_id = std::numeric_limits<int64_t>::max();
  int64_t max_id = std::numeric_limits<int64_t>::min();
  void Add(int64_t id) {
    ++ids_seen;
    if (id < min_id) min_id = id;
    if (id > max_id) max_id = id;
  }
  void Merge(const TokenIdRange& other);
};

// Turns text into token ids for text-jsonl. Implemented over the tokenizer in
// src/tokenizer/ when it is built (see MakeTokenizerCounter in dataset/tokenizer_counter.h).
class TokenCounter {
 public:
  virtual ~TokenCounter() = default;
  // Appends the ids of `text` to *ids (cleared first).
  virtual Status Encode(std::string_view text, std::vector<uint32_t>* ids) = 0;
};

struct ReaderOptions {
  std::string field = "input_ids";  // jsonl / arrow column, text-jsonl string field
  size_t chunk_samples = size_t{1} << 16;
  // Bytes of binary token storage (.bin, tokens .npy, Arrow values) sampled for the id range;
  // spread over the file. 0 reads no token data at all (lengths only).
  uint64_t token_sample_bytes = uint64_t{1} << 20;
  TokenCounter* tokenizer = nullptr;  // required for text-jsonl
  // Longest JSON line accepted; a longer one is an error instead of an unbounded buffer.
  size_t max_line_bytes = size_t{64} << 20;
};

// Where one sample's stored bytes lie: [offset, offset + bytes) of files()[file_index]. For
// binary formats that is the sample's token ids; for jsonl, its whole line (newline included).
struct SampleExtent {
  uint64_t offset = 0;
  uint64_t bytes = 0;
  uint32_t file_index = 0;
};

class SampleLengthReader {
 public:
  virtual ~SampleLengthReader() = default;
  // Appends the next chunk (at most options.chunk_samples) of sample lengths, in tokens, to
  // *lengths and returns how many were appended; 0 means the corpus is exhausted.
  virtual Result<size_t> Next(std::vector<uint32_t>* lengths) = 0;
  // Samples declared by the header, when the format has one.
  virtual std::optional<uint64_t> declared_samples() const { return std::nullopt; }
  // Storage type of token ids, when the format declares one.
  virtual std::optional<TokenDtype> token_dtype() const { return std::nullopt; }
  // Token ids seen so far; complete once Next() has returned 0.
  const TokenIdRange& token_ids() const { return token_ids_; }
  // Bytes read from storage so far (headers, indexes, sampled tokens, text).
  uint64_t bytes_read() const { return bytes_read_; }
  // The files this source is made of, with their sizes (for page cache and size checks).
  const std::vector<std::pair<std::string, uint64_t>>& files() const { return files_; }
  // When set, Next() also appends one SampleExtent per length it appends, so a caller can read
  // the samples back the way a loader does (`wattwatch iobench`). A 1-D npy of lengths stores no
  // samples and appends none. `extents` is not owned and must outlive the reads.
  void set_extent_sink(std::vector<SampleExtent>* extents) { extents_ = extents; }

 protected:
  std::vector<SampleExtent>* extents_ = nullptr;
  TokenIdRange token_ids_;
  uint64_t bytes_read_ = 0;
  std::vector<std::pair<std::string, uint64_t>> files_;
};

// Opens `path` (a file, or a prefix for megatron and offset/token npy pairs).
// NotFound when the files are missing, InvalidInput when they are malformed, Unavailable for
// text-jsonl without a tokenizer.
Result<std::unique_ptr<SampleLengthReader>> OpenSampleLengthReader(Env* env, DataFormat format,
                                                                   const std::string& path,
                                                                   const ReaderOptions& options);

// Per-format constructors (used by OpenSampleLengthReader and the fuzz targets).
Result<std::unique_ptr<SampleLengthReader>> OpenMegatronReader(Env* env, const std::string& prefix,
                                                               const ReaderOptions& options);
Result<std::unique_ptr<SampleLengthReader>> OpenNpyReader(Env* env, const std::string& path,
                                                          const ReaderOptions& options);
Result<std::unique_ptr<SampleLengthReader>> OpenJsonlReader(Env* env, const std::string& path,
                                                            const ReaderOptions& options,
                                                            bool text);
Result<std::unique_ptr<SampleLengthReader>> OpenArrowReader(Env* env, const std::string& path,
                                                            const ReaderOptions& options);

// Reads every chunk of `reader` into *lengths (a convenience for callers that need all lengths).
Status ReadAllLengths(SampleLengthReader* reader, std::vector<uint32_t>* lengths);

}  // namespace ww::dataset
