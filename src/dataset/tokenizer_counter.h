// The TokenCounter of text-jsonl over the tokenizer module (src/tokenizer/): a tokenizer.json or
// tokenizer.model, loaded once, counting the tokens training will see. Used by the gate's
// text-jsonl corpora and `wattwatch iobench --tokenizer`.
// Ownership: the returned counter owns its tokenizer. Thread-safety: one counter per thread.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "dataset/sample_length_reader.h"

namespace ww::dataset {

// InvalidInput "data.tokenizer: ..." when the tokenizer cannot be loaded.
Result<std::unique_ptr<TokenCounter>> MakeTokenizerCounter(const std::string& tokenizer_path);

}  // namespace ww::dataset
