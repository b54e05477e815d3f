// SentencePiece `tokenizer.model` files (Llama-2, Gemma, ...) through libsentencepiece, behind the
// Tokenizer interface. Input is repaired to valid UTF-8 first, as for tokenizer.json.
// Thread-safety: SentencePieceProcessor::Encode is const and keeps no state between calls.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"
#include "tokenizer/tokenizer.h"

namespace ww {

// `model_bytes` is the serialized ModelProto; `source_name` names it in errors.
Result<std::unique_ptr<Tokenizer>> LoadSentencePiece(std::string_view model_bytes,
                                                     const std::string& source_name);

}  // namespace ww
