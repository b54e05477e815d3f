// `wattwatch iobench`: reads a training corpus the way a data loader does (per-sample preads in
// sequential or shuffled order, N reader threads) and reports bytes/s and tokens/s with the
// file's pages dropped from the page cache (cold) and cached (warm), the page-cache residency
// before the run and the corpus size against the memory that could cache it.
//
// Why: the field report found NFS as fast as a pretokenized local copy (~53k tok/s) only because
// the corpus fit in the page cache; past memory every epoch reads at the cold rate and the advice
// inverts. This tells a user which side of that line their job is on, on their own storage.
//
// Samples come from the dataset readers (dataset/sample_length_reader.h): lengths in
// tokens and, through SampleExtent, where each sample's bytes lie. Only those bytes are timed;
// indexes (.idx, offsets) are read while planning, before any pass.
//
// The machine (page-cache residency and drop, MemAvailable, the files) is core's Env.
// Ownership: the Env, Clock and TokenCounter passed in must outlive the call.
// Thread-safety: RunIobench starts and joins its own reader threads; call it from one thread.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/env.h"
#include "core/status.h"
#include "dataset/sample_length_reader.h"

namespace ww::measure {

enum class ReadOrder { kSequential, kShuffled };
std::string_view ReadOrderName(ReadOrder order);

struct IobenchOptions {
  dataset::DataFormat format = dataset::DataFormat::kMegatron;
  // jsonl / arrow column, text-jsonl string field; the format's default (DefaultField) when unset.
  std::optional<std::string> field;
  // Counts tokens of text-jsonl while planning (not timed). Without it raw text has no token
  // ids, and only bytes/s is measured.
  dataset::TokenCounter* tokenizer = nullptr;
  std::vector<ReadOrder> orders = {ReadOrder::kSequential, ReadOrder::kShuffled};
  int readers = 1;
  uint64_t seed = 1;
  // Sample bytes each pass reads at most (a prefix of its order); 0 reads every sample.
  uint64_t max_bytes = 0;
  // false: no cold pass, so a cache a running job relies on is not evicted; the warm pass is
  // then preceded by an untimed pass that fills the cache.
  bool drop_cache = true;
  // Memory the page cache may use, instead of this machine's MemAvailable (tests; planning for
  // a node with less RAM).
  std::optional<uint64_t> mem_budget_bytes;
  // Tokens/s the GPUs consume; when set the report says whether each pass keeps up.
  std::optional<double> need_tokens_per_s;
};

struct FileFacts {
  std::string path;
  uint64_t size_bytes = 0;
  uint64_t resident_bytes = 0;  // before the run
  std::optional<uint64_t> allocated_bytes;
};

struct PassResult {
  ReadOrder order = ReadOrder::kSequential;
  bool cold = false;
  // Fraction of the corpus files cached when the pass started: near 0 for an honest cold pass,
  // near 1 for a warm one. Reported as measured, not as intended.
  double resident_fraction_before = 0;
  uint64_t samples = 0;
  uint64_t bytes = 0;
  uint64_t tokens = 0;
  double seconds = 0;
  double bytes_per_s = 0;
  std::optional<double> tokens_per_s;  // nullopt when the format has no token ids
};

struct KeepUp {
  bool keeps_up = false;
  double margin = 0;  // measured tokens/s over the need: >= 1 keeps up
};

struct IobenchVerdict {
  double need_tokens_per_s = 0;
  std::optional<KeepUp> cold, warm;  // of the headline passes
  // The rate a long job sees after its first epoch: "warm" when the corpus fits the page cache,
  // "cold" when every epoch has to read it from storage again.
  std::string steady_state;
  bool keeps_up = false;  // both the cold and the warm pass (those that ran) keep up
};

struct IobenchReport {
  dataset::DataFormat format = dataset::DataFormat::kMegatron;
  std::vector<FileFacts> files;
  uint64_t size_bytes = 0;           // every file of the corpus, indexes included
  double resident_fraction = 0;      // cached before the run
  uint64_t mem_available_bytes = 0;  // MemAvailable, or the budget
  bool mem_from_budget = false;
  bool fits_in_page_cache = false;
  uint64_t samples = 0;
  uint64_t sample_bytes = 0;  // bytes of all samples (what a full pass reads)
  std::optional<uint64_t> tokens;
  int readers = 1;
  uint64_t seed = 1;
  uint64_t max_bytes = 0;
  std::vector<PassResult> passes;
  // Headline passes: the shuffled ones when run (training loaders shuffle), else sequential.
  std::optional<PassResult> cold, warm;
  std::optional<IobenchVerdict> verdict;
  std::vector<std::string> notes;  // caveats: cold not reached, sparse files, no token ids
};

// Plans from every path (one corpus per path, in `options.format`) and runs the passes: for each
// order, cold (pages dropped first) then warm. InvalidInput/NotFound for unreadable corpora,
// InvalidInput for a corpus with no sample data (a 1-D npy of lengths) or a need without tokens.
Result<IobenchReport> RunIobench(Env* env, Clock* clock, const std::vector<std::string>& paths,
                                 const IobenchOptions& options);

// {"size_bytes", "resident_fraction", "mem_available_bytes", "fits_in_page_cache",
//  "cold": {"bytes_per_s", "tokens_per_s", ...}, "warm": {...}, "passes": [...], "verdict", ...}
nlohmann::json IobenchToJson(const IobenchReport& report);
std::string FormatIobench(const IobenchReport& report);
// 0, or 1 when a need was given and a headline pass does not keep up.
int IobenchExitCode(const IobenchReport& report);

// "sequential", "shuffled" or "both" (sequential then shuffled); nullopt for anything else.
std::optional<std::vector<ReadOrder>> ParseReadOrders(std::string_view name);

// `wattwatch iobench PATH...`: the command's flags, which the CLI binds straight to these fields
// (so each default lives here, once).
struct IobenchCommandOptions {
  std::vector<std::string> paths;
  // tokenizer.json / tokenizer.model counting text-jsonl tokens before the timed passes.
  std::string tokenizer;
  bool json = false;  // IobenchToJson instead of the table
  IobenchOptions iobench;
};

// Loads the tokenizer (if any), runs the passes and renders the report into *out. Returns the
// exit code the report deserves (IobenchExitCode: 0 or 1); an error Status is unusable input
// (exit 2): a missing or malformed corpus, a path that is not a regular file, a --tokenizer for a
// pretokenized format.
Result<int> RunIobenchCommand(Env* env, Clock* clock, const IobenchCommandOptions& options,
                              std::string* out);

// The order a pass reads samples in: 0..n-1, or a Fisher-Yates shuffle seeded with `seed`
// (same seed, same order on every machine).
std::vector<uint64_t> SampleOrder(uint64_t samples, ReadOrder order, uint64_t seed);

}  // namespace ww::measure
