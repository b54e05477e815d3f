#include "tokenizer/sentencepiece_backend.h"

#include <fmt/format.h>
#include <sentencepiece_processor.h>

#include "tokenizer/utf8.h"

namespace ww {
namespace {

class SentencePieceTokenizer final : public Tokenizer {
 public:
  explicit SentencePieceTokenizer(std::unique_ptr<sentencepiece::SentencePieceProcessor> sp)
      : sp_(std::move(sp)) {}

  std::vector<uint32_t> Encode(std::string_view text, bool add_special_tokens) const override {
    std::string repaired;
    if (!utf8::IsValid(text)) {
      repaired = utf8::Sanitize(text);
      text = repaired;
    }
    std::vector<int> ids;
    // Encode only fails when no model is loaded, which Load() rules out.
    sp_->Encode(text, &ids).IgnoreError();
    std::vector<uint32_t> out;
    out.reserve(ids.size() + 1);
    // Hugging Face's Llama-2/Gemma tokenizers add BOS only; so does add_special_tokens here.
    if (add_special_tokens && sp_->bos_id() >= 0)
      out.push_back(static_cast<uint32_t>(sp_->bos_id()));
    for (int id : ids) out.push_back(static_cast<uint32_t>(id));
    return out;
  }

  std::optional<uint32_t> TokenToId(std::string_view token) const override {
    const int id = sp_->PieceToId(token);
    // PieceToId answers unk_id for unknown pieces; only the unk piece itself maps to it.
    if (id == sp_->unk_id() && sp_->IdToPiece(id) != token) return std::nullopt;
    if (id < 0) return std::nullopt;
    return static_cast<uint32_t>(id);
  }

  size_t VocabSize() const override { return static_cast<size_t>(sp_->GetPieceSize()); }

  std::string Describe() const override {
    return fmt::format("SentencePiece ({} ids)", sp_->GetPieceSize());
  }

 private:
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
};

}  // namespace

Result<std::unique_ptr<Tokenizer>> LoadSentencePiece(std::string_view model_bytes,
                                                     const std::string& source_name) {
  auto sp = std::make_unique<sentencepiece::SentencePieceProcessor>();
  const auto st = sp->LoadFromSerializedProto(model_bytes);
  if (!st.ok()) {
    return Status::InvalidInput(
        fmt::format("{}: neither a tokenizer.json (no JSON object) nor a SentencePiece model ({})",
                    source_name, st.ToString()));
  }
  return std::unique_ptr<Tokenizer>(std::make_unique<SentencePieceTokenizer>(std::move(sp)));
}

}  // namespace ww
