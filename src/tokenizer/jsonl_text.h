// Text from JSON-lines datasets, tokenized in parallel and in order. Shared by
// `wattwatch tokenize` and the gate's `text-jsonl` data format, so both count the same tokens.
//
// Invalid text in JSON: a JSON string cannot carry raw invalid UTF-8, but it can carry lone
// surrogate escapes (\udc80) and real files carry stray bytes. Both become U+FFFD: a lone
// surrogate escape is one U+FFFD (what JavaScript's TextEncoder and Rust's from_utf8_lossy make
// of it), invalid raw bytes become one U+FFFD per maximal ill-formed subpart (SanitizeUtf8).
// Blank lines (only spaces, tabs, CR) are skipped and not counted as records.
//
// Thread-safety: free functions; TokenizeJsonl uses `threads` std::threads internally and calls
// `on_line` from the calling thread only, in file order.
#pragma once

#include <cstdint>
#include <functional>
#include <istream>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "tokenizer/tokenizer.h"

namespace ww {

// The string value of `field` in the JSON object `line`, with invalid text repaired as above.
// Errors (InvalidInput) say what is wrong without file/line; callers add them.
Result<std::string> ExtractJsonlText(std::string_view line, std::string_view field);

struct JsonlTokenizeOptions {
  std::string field = "text";
  bool add_special_tokens = false;
  int threads = 2;
  // Lines handed to the workers per batch; order is preserved across batches.
  size_t batch_lines = 4096;
  // When false, on_line receives an empty ids vector and only the count (faster, less memory).
  bool keep_ids = false;
};

struct JsonlLineResult {
  uint64_t line_number = 0;  // 1-based line in the file
  uint64_t text_bytes = 0;   // UTF-8 bytes of the field after repair
  uint64_t token_count = 0;
  std::vector<uint32_t> ids;  // only when keep_ids
};

struct JsonlTokenizeSummary {
  uint64_t records = 0;
  uint64_t text_bytes = 0;
  uint64_t tokens = 0;
};

// Reads `in` (named `source_name` in errors) line by line, tokenizes `options.field` of each
// record with `tokenizer` on `options.threads` threads, and calls `on_line` in file order. The
// first bad line stops the run with InvalidInput "FILE:LINE: field 'text': ...".
Result<JsonlTokenizeSummary> TokenizeJsonl(
    std::istream& in, const std::string& source_name, const Tokenizer& tokenizer,
    const JsonlTokenizeOptions& options,
    const std::function<void(const JsonlLineResult&)>& on_line);

}  // namespace ww
