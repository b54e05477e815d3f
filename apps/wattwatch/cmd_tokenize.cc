// `wattwatch tokenize --tokenizer FILE INPUT.jsonl`: token counts or ids of a JSON-lines corpus,
// exactly as training will tokenize it. Parses flags; the work is in
// src/dataset/tokenize_corpus.h over src/tokenizer/.
#include <iostream>
#include <memory>
#include <string>

#include "commands.h"
#include "core/exit_codes.h"
#include "dataset/tokenize_corpus.h"

namespace ww::app {

void AddTokenizeCommand(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand(
      "tokenize",
      "Tokenize a JSON-lines corpus exactly as training will, to count tokens (and so predict each "
      "rank's steps before launch) or to print the ids.\n\n"
      "Reads one JSON object per line and tokenizes its --field with a Hugging "
      "Face tokenizer.json (byte-level BPE: Qwen2/Qwen3, Llama-3, GPT-2) or a SentencePiece "
      "tokenizer.model (Llama-2, Gemma). Ids equal those of the Rust `tokenizers` library; "
      "special tokens written in the text are recognised. Lone surrogate escapes (\\udc80) and "
      "invalid UTF-8 bytes become U+FFFD, as in Python/JavaScript. Blank lines are skipped. "
      "Work is split over --threads threads; output keeps the input order.\n\n"
      "Examples:\n"
      "  wattwatch tokenize --tokenizer Qwen3-32B/tokenizer.json train.jsonl\n"
      "  wattwatch tokenize --tokenizer tokenizer.json --count --json train.jsonl | jq .tokens\n"
      "  wattwatch tokenize --tokenizer tokenizer.model --ids --field content chat.jsonl\n\n"
      "Exit codes: 0 ok; 2 bad input (unreadable file, a line that is not a JSON object with a "
      "string --field: the message names FILE:LINE; a tokenizer feature that is not supported: "
      "the message names it).");
  auto o = std::make_shared<dataset::TokenizeCorpusOptions>();
  cmd->add_option("--tokenizer", o->tokenizer_path, "tokenizer.json or tokenizer.model")
      ->required();
  cmd->add_option("INPUT", o->input_path, "JSON-lines file, or - for standard input")->required();
  cmd->add_option("--field", o->jsonl.field, "JSON key holding the text")->capture_default_str();
  // --count is the default output; the flag exists to say so and to exclude --ids.
  auto* count = cmd->add_flag_callback(
      "--count", [] {}, "print totals and tokens-per-record statistics (the default)");
  auto* ids = cmd->add_flag("--ids", o->ids, "print one JSON array of ids per record");
  count->excludes(ids);
  cmd->add_flag("--json", o->json, "with --count: print the statistics as one JSON object");
  cmd->add_flag("--add-special-tokens", o->jsonl.add_special_tokens,
                "apply the post-processor (e.g. Llama-3's <|begin_of_text|>; SentencePiece BOS)");
  cmd->add_option("--threads", o->jsonl.threads, "worker threads")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmd->callback([o, exit_code]() {
    Status st = dataset::TokenizeCorpus(*o, std::cin, std::cout);
    if (!st.ok()) {
      std::cout.flush();
      std::cerr << "wattwatch tokenize: " << st.message() << "\n";
      *exit_code = kExitBadInput;
      return;
    }
    *exit_code = kExitOk;
  });
}

}  // namespace ww::app
