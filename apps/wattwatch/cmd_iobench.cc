// `wattwatch iobench PATH...`: cold and warm read throughput of a training corpus, as a data
// loader reads it. Parses flags and prints; the work is in src/measure/.
#include <fmt/format.h>

#include <iostream>
#include <map>
#include <memory>
#include <string>

#include "commands.h"
#include "core/clock.h"
#include "core/env.h"
#include "core/exit_codes.h"
#include "dataset/sample_length_reader.h"
#include "measure/iobench.h"

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
  auto o = std::make_shared<measure::IobenchCommandOptions>();
  measure::IobenchOptions& io = o->iobench;
  std::map<std::string, dataset::DataFormat> formats;
  std::string format_names;
  for (dataset::DataFormat format : dataset::AllDataFormats()) {
    formats.emplace(dataset::DataFormatName(format), format);
    format_names +=
        (format_names.empty() ? "" : " | ") + std::string(dataset::DataFormatName(format));
  }
  cmd->add_option("PATH", o->paths,
                  "corpus: a Megatron PREFIX (or PREFIX.idx), .npy, .jsonl or .arrow file")
      ->required();
  cmd->add_option("--format", io.format, format_names)
      ->transform(CLI::CheckedTransformer(formats))
      ->default_str(std::string(dataset::DataFormatName(io.format)));
  cmd->add_option(
      "--field", io.field,
      fmt::format("jsonl/arrow column of token ids (default {}), or the text-jsonl string field "
                  "(default {})",
                  dataset::DefaultField(dataset::DataFormat::kJsonl),
                  dataset::DefaultField(dataset::DataFormat::kTextJsonl)));
  cmd->add_option_function<std::string>(
         "--order",
         [o](const std::string& name) { o->iobench.orders = *measure::ParseReadOrders(name); },
         "sequential | shuffled | both (default both; shuffled is the headline)")
      ->check(CLI::IsMember({"sequential", "shuffled", "both"}));
  cmd->add_option("--readers", io.readers, "reader threads, like DataLoader workers")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd->add_option("--seed", io.seed, "shuffle seed (same seed, same order)")->capture_default_str();
  cmd->add_option("--max-bytes", io.max_bytes,
                  "read at most this many sample bytes per pass (0: all)")
      ->capture_default_str();
  cmd->add_option("--mem-budget-bytes", io.mem_budget_bytes,
                  "judge the page-cache fit against this many bytes instead of MemAvailable (plan "
                  "for a node with less RAM)");
  cmd->add_option("--need-tokens-per-s", io.need_tokens_per_s,
                  "tokens/s the GPUs consume; exit 1 when the cold or warm pass reads slower");
  cmd->add_option("--tokenizer", o->tokenizer,
                  "tokenizer.json to count text-jsonl tokens (untimed)");
  cmd->add_flag_callback(
      "--no-drop", [o]() { o->iobench.drop_cache = false; },
      "do not drop the corpus from the page cache (no cold pass): for a corpus a running job is "
      "using");
  cmd->add_flag("--json", o->json,
                "print {\"size_bytes\", \"resident_fraction\", \"mem_available_bytes\", "
                "\"fits_in_page_cache\", "
                "\"cold\": {\"bytes_per_s\", \"tokens_per_s\", ...}, \"warm\": {...}, \"passes\", "
                "\"verdict\", "
                "\"notes\"}");
  cmd->callback([o, exit_code]() {
    std::string out;
    auto code = measure::RunIobenchCommand(DefaultEnv(), SystemClock(), *o, &out);
    if (!code.ok()) {
      std::cerr << "wattwatch iobench: " << code.status().message() << "\n";
      *exit_code = kExitBadInput;
      return;
    }
    std::cout << out;
    *exit_code = *code == 0 ? kExitOk : kExitCheckFailed;
  });
}

}  // namespace ww::app
