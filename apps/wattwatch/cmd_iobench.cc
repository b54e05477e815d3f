// `wattwatch iobench PATH...`: cold and warm read throughput of a training corpus, as a data
// loader reads it. Parses flags and prints; the work is in src/measure/.
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "core/clock.h"
#include "core/exit_codes.h"
#include "gate/env.h"
#include "gate/tokenizer_bridge.h"
#include "measure/iobench.h"
#include "measure/page_cache.h"

namespace ww::app {

void AddIobenchCommand(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand(
      "iobench",
      "Reads a training corpus the way a data loader does (one pread per sample, sequential and "
      "shuffled "
      "order, N reader threads) and reports bytes/s and tokens/s cold (the files' pages dropped "
      "from the "
      "page cache with posix_fadvise; no root needed) and warm (cached), the page-cache residency "
      "before the "
      "run (mincore) and the corpus size against the memory that could cache it.\n\n"
      "Why: network storage looks as fast as a local copy while the corpus fits in the page cache; "
      "past "
      "memory every epoch reads at the cold rate. Give --need-tokens-per-s (what your GPUs "
      "consume, e.g. "
      "from `wattwatch scaling`) to learn whether this path keeps up, cold and warm, and by what "
      "margin.\n\n"
      "Tokens/s counts the tokens of the samples read. Raw text (--format text-jsonl) has no token "
      "ids: "
      "bytes/s only, unless --tokenizer counts them (before the timed passes).\n\n"
      "Examples:\n"
      "  wattwatch iobench /data/corpus_text_document                  # Megatron PREFIX "
      "(.idx/.bin)\n"
      "  wattwatch iobench /nfs/corpus --need-tokens-per-s 53000 --readers 8\n"
      "  wattwatch iobench train.arrow --format arrow --max-bytes 4000000000\n"
      "  wattwatch iobench /nfs/corpus --mem-budget-bytes 200000000000 --json | jq "
      "'.fits_in_page_cache'\n\n"
      "Exit codes: 0 measured (and, with --need-tokens-per-s, both the cold and the warm pass keep "
      "up); "
      "1 --need-tokens-per-s was given and the cold or the warm pass does not keep up (the output "
      "says "
      "which); 2 unusable input (a missing or malformed corpus, bad flags).");
  struct Flags {
    std::vector<std::string> paths;
    std::string format = "megatron";
    std::string field = "input_ids";
    std::string order = "both";
    std::string tokenizer;
    int readers = 1;
    uint64_t seed = 1;
    uint64_t max_bytes = 0;
    std::optional<uint64_t> mem_budget_bytes;
    std::optional<double> need_tokens_per_s;
    bool no_drop = false;
    bool json = false;
  };
  auto f = std::make_shared<Flags>();
  cmd->add_option("PATH", f->paths,
                  "corpus: a Megatron PREFIX (or PREFIX.idx), .npy, .jsonl or .arrow file")
      ->required();
  cmd->add_option("--format", f->format,
                  "megatron | npy | jsonl | arrow | text-jsonl (default megatron)")
      ->check(CLI::IsMember({"megatron", "npy", "jsonl", "arrow", "text-jsonl"}));
  cmd->add_option("--field", f->field,
                  "jsonl/arrow column of token ids (default input_ids), or the text-jsonl string "
                  "field (default text)");
  cmd->add_option("--order", f->order,
                  "sequential | shuffled | both (default both; shuffled is the headline)")
      ->check(CLI::IsMember({"sequential", "shuffled", "both"}));
  cmd->add_option("--readers", f->readers, "reader threads, like DataLoader workers (default 1)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--seed", f->seed, "shuffle seed (same seed, same order; default 1)");
  cmd->add_option("--max-bytes", f->max_bytes,
                  "read at most this many sample bytes per pass (default: all)");
  cmd->add_option("--mem-budget-bytes", f->mem_budget_bytes,
                  "judge the page-cache fit against this many bytes instead of MemAvailable (plan "
                  "for a node with "
                  "less RAM)");
  cmd->add_option("--need-tokens-per-s", f->need_tokens_per_s,
                  "tokens/s the GPUs consume; exit 1 when the cold or warm pass reads slower");
  cmd->add_option("--tokenizer", f->tokenizer,
                  "tokenizer.json to count text-jsonl tokens (untimed)");
  cmd->add_flag("--no-drop", f->no_drop,
                "do not drop the corpus from the page cache (no cold pass): for a corpus a running "
                "job is using");
  cmd->add_flag("--json", f->json,
                "print {\"size_bytes\", \"resident_fraction\", \"mem_available_bytes\", "
                "\"fits_in_page_cache\", "
                "\"cold\": {\"bytes_per_s\", \"tokens_per_s\", ...}, \"warm\": {...}, \"passes\", "
                "\"verdict\", "
                "\"notes\"}");
  cmd->callback([f, exit_code]() {
    measure::IobenchOptions options;
    options.format = *gate::ParseDataFormat(f->format);
    options.field = f->field;
    if (f->format == "text-jsonl" && f->field == "input_ids") options.field = "text";
    if (f->order == "sequential") options.orders = {measure::ReadOrder::kSequential};
    if (f->order == "shuffled") options.orders = {measure::ReadOrder::kShuffled};
    options.readers = f->readers;
    options.seed = f->seed;
    options.max_bytes = f->max_bytes;
    options.mem_budget_bytes = f->mem_budget_bytes;
    options.need_tokens_per_s = f->need_tokens_per_s;
    options.drop_cache = !f->no_drop;
    std::unique_ptr<gate::TokenCounter> counter;
    if (!f->tokenizer.empty()) {
      if (f->format != "text-jsonl") {
        std::cerr << "wattwatch iobench: --tokenizer is for --format text-jsonl; pretokenized "
                     "formats carry their "
                     "token ids\n";
        *exit_code = kExitBadInput;
        return;
      }
      auto made = gate::MakeTokenizerCounter(f->tokenizer);
      if (!made.ok()) {
        std::cerr << "wattwatch iobench: " << made.status().message() << "\n";
        *exit_code = kExitBadInput;
        return;
      }
      counter = std::move(*made);
      options.tokenizer = counter.get();
    }
    auto report = measure::RunIobench(gate::DefaultGateEnv(), measure::DefaultPageCache(),
                                      SystemClock(), f->paths, options);
    if (!report.ok()) {
      std::cerr << "wattwatch iobench: " << report.status().message() << "\n";
      *exit_code = kExitBadInput;
      return;
    }
    if (f->json) {
      std::cout << measure::IobenchToJson(*report).dump(2) << "\n";
    } else {
      std::cout << measure::FormatIobench(*report);
    }
    *exit_code = measure::IobenchExitCode(*report) == 0 ? kExitOk : kExitCheckFailed;
  });
}

}  // namespace ww::app
