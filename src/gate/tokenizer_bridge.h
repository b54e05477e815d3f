// Connects text-jsonl to the BPE tokenizer in src/tokenizer/ when that library is built.
// Without it, MakeTokenizerCounter returns Unavailable("... tokenizer not built"), so the gate
// builds and runs, and text-jsonl reports itself unavailable instead of failing to compile.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "gate/readers/sample_length_reader.h"

namespace ww::gate {

Result<std::unique_ptr<TokenCounter>> MakeTokenizerCounter(const std::string& tokenizer_json_path);

}  // namespace ww::gate
