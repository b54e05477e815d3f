// What the gate knows about a tokenizer.json: its vocabulary size and the ids of its EOS and pad
// tokens (named by tokenizer_config.json next to it, else guessed from common spellings). The
// tokenizer.json itself is read by the tokenizer's scanner (tokjson::FindTokenIds), of any model
// type, so the gate knows nothing of its layout.
#include <fmt/format.h>

#include <array>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "gate/gate.h"
#include "tokenizer/json_scan.h"

namespace ww::gate {

Result<TokenizerFacts> ReadTokenizerFacts(Env* env, const std::string& path) {
  auto text = env->ReadFileToString(path, uint64_t{256} << 20);
  if (!text.ok()) return text.status();
  TokenizerFacts facts;
  facts.path = path;

  // tokenizer_config.json names the special tokens; without it, guess from common spellings.
  const std::string config_path =
      (std::filesystem::path(path).parent_path() / "tokenizer_config.json").string();
  auto token_name = [](const nlohmann::json& v) -> std::optional<std::string> {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_object() && v.contains("content") && v["content"].is_string())
      return v["content"].get<std::string>();
    return std::nullopt;
  };
  if (env->FileExists(config_path)) {
    auto config_text = env->ReadFileToString(config_path, uint64_t{64} << 20);
    if (config_text.ok()) {
      auto c = nlohmann::json::parse(*config_text, nullptr, false);
      if (c.is_object()) {
        if (c.contains("eos_token")) {
          facts.eos_token = token_name(c["eos_token"]);
          facts.eos_source = "tokenizer_config.json";
        }
        if (c.contains("pad_token")) {
          facts.pad_token = token_name(c["pad_token"]);
          facts.pad_source = "tokenizer_config.json";
        }
      }
    }
  }
  static constexpr std::array<std::string_view, 6> kEosGuesses = {
      "<|endoftext|>", "</s>", "<|end_of_text|>", "<eos>", "<|im_end|>", "[SEP]"};
  static constexpr std::array<std::string_view, 4> kPadGuesses = {"<pad>", "<|pad|>", "[PAD]",
                                                                  "<|finetune_right_pad_id|>"};
  // Only the ids of the tokens the checks may name are looked up, not the whole vocabulary.
  std::vector<std::string> wanted;
  if (facts.eos_token) wanted.push_back(*facts.eos_token);
  if (facts.pad_token) wanted.push_back(*facts.pad_token);
  for (auto n : kEosGuesses) wanted.emplace_back(n);
  for (auto n : kPadGuesses) wanted.emplace_back(n);
  auto found = tokjson::FindTokenIds(*text, path, wanted);
  if (!found.ok()) return found.status();
  facts.vocab_size = found->id_count;
  auto known = [&](std::string_view name) { return found->ids.find(name) != found->ids.end(); };
  auto guess = [&](auto names) -> std::optional<std::string> {
    for (auto n : names) {
      if (known(n)) return std::string(n);
    }
    return std::nullopt;
  };
  if (!facts.eos_token) {
    facts.eos_token = guess(kEosGuesses);
    facts.eos_source = "guessed from tokenizer.json";
  }
  if (!facts.pad_token) {
    facts.pad_token = guess(kPadGuesses);
    facts.pad_source = "guessed from tokenizer.json";
  }
  if (facts.eos_token && known(*facts.eos_token))
    facts.eos_id = found->ids.find(*facts.eos_token)->second;
  if (facts.pad_token && known(*facts.pad_token))
    facts.pad_id = found->ids.find(*facts.pad_token)->second;
  return facts;
}

}  // namespace ww::gate
