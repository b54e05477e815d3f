#include "gate/tokenizer_bridge.h"

#include <fmt/format.h>

#if __has_include("tokenizer/tokenizer.h")
#include "tokenizer/tokenizer.h"
#define WW_GATE_HAS_TOKENIZER 1
#endif

namespace ww::gate {

#ifdef WW_GATE_HAS_TOKENIZER
namespace {

// Adapts the gate's TokenCounter to ww::Tokenizer (src/tokenizer/). Special tokens are not
// added: data loaders that add BOS/EOS do it per sample, and the count of those is a constant
// the user's spec can absorb; the step replay cares about text tokens.
class TokenizerCounter final : public TokenCounter {
 public:
  explicit TokenizerCounter(std::unique_ptr<Tokenizer> tokenizer)
      : tokenizer_(std::move(tokenizer)) {}
  Status Encode(std::string_view text, std::vector<uint32_t>* ids) override {
    *ids = tokenizer_->Encode(text, /*add_special_tokens=*/false);
    return Status::Ok();
  }

 private:
  std::unique_ptr<Tokenizer> tokenizer_;
};

}  // namespace

Result<std::unique_ptr<TokenCounter>> MakeTokenizerCounter(const std::string& tokenizer_json_path) {
  auto tokenizer = Tokenizer::Load(tokenizer_json_path);
  if (!tokenizer.ok()) {
    return Status::InvalidInput(fmt::format("data.tokenizer: {}", tokenizer.status().message()));
  }
  return std::unique_ptr<TokenCounter>(new TokenizerCounter(std::move(*tokenizer)));
}

#else

Result<std::unique_ptr<TokenCounter>> MakeTokenizerCounter(const std::string& tokenizer_json_path) {
  return Status::Unavailable(
      fmt::format("{}: text-jsonl is unavailable: tokenizer not built (src/gate/tokenizer is "
                  "missing from this build)",
                  tokenizer_json_path));
}

#endif

}  // namespace ww::gate
