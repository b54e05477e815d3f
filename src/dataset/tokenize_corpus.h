// `wattwatch tokenize`: token counts (or the ids) of a JSON-lines corpus, exactly as training
// will tokenize it, with per-record statistics. The tokenizing is the tokenizer module's
// (TokenizeJsonl); this is the corpus-level report over it.
// Thread-safety: TokenizeCorpus runs the tokenizer's worker threads internally; call it from one
// thread. SummarizeTokensPerRecord is pure.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "tokenizer/jsonl_text.h"

namespace ww::dataset {

// The command's flags, which the CLI binds straight to these fields.
struct TokenizeCorpusOptions {
  std::string tokenizer_path;  // tokenizer.json or tokenizer.model
  std::string input_path;      // JSON lines, or "-" for standard input
  bool ids = false;            // one JSON array of ids per record instead of the statistics
  bool json = false;           // the statistics as one JSON object
  JsonlTokenizeOptions jsonl;  // field, threads, add_special_tokens (keep_ids follows `ids`)
  Clock* clock = nullptr;      // for the elapsed time; SystemClock() when null
};

// Tokens per record: nearest-rank percentiles (ww::Percentile), the mean over records.
struct TokensPerRecord {
  uint64_t min = 0, p50 = 0, p95 = 0, max = 0;
  double mean = 0;
};
TokensPerRecord SummarizeTokensPerRecord(std::vector<uint64_t> tokens_per_record);

// Tokenizes the input and writes the ids, or the statistics (a table, or JSON), to `out`.
// `standard_input` is read for input_path "-". InvalidInput / NotFound naming the file (and
// FILE:LINE for a bad record) for anything unusable; ids already written stay written.
Status TokenizeCorpus(const TokenizeCorpusOptions& options, std::istream& standard_input,
                      std::ostream& out);

}  // namespace ww::dataset
