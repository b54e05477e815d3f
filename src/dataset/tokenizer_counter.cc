#include "dataset/tokenizer_counter.h"

#include <fmt/format.h>

#include "tokenizer/tokenizer.h"

namespace ww::dataset {
namespace {

// Special tokens are not added: data loaders that add BOS/EOS do it per sample, and the count of
// those is a constant the user's spec can absorb; the step replay cares about text tokens.
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

Result<std::unique_ptr<TokenCounter>> MakeTokenizerCounter(const std::string& tokenizer_path) {
  auto tokenizer = Tokenizer::Load(tokenizer_path);
  if (!tokenizer.ok()) {
    return Status::InvalidInput(fmt::format("data.tokenizer: {}", tokenizer.status().message()));
  }
  return std::unique_ptr<TokenCounter>(new TokenizerCounter(std::move(*tokenizer)));
}

}  // namespace ww::dataset
