// Replays what a data loader does with a corpus — shard samples to data-parallel ranks, pack
// them into sequences of seq_len, batch, accumulate — and counts optimizer steps per rank per
// epoch. Pure functions over sample lengths: no I/O, so every rule here is table-tested.
//
// Semantics (docs/gate.md has the same text for users):
//  * Sharding (the unit is a sample when packing_scope is rank or packing is none, a packed
//    sequence when packing_scope is global):
//      strided     rank r gets units r, r+D, r+2D, ... (torch DistributedSampler, no shuffle)
//      contiguous  rank r gets the r-th block of consecutive units
//      by_file     shard file f goes whole to rank f mod D (samples only, rank-scope packing)
//    For strided and contiguous every rank gets floor(N/D) units with drop_last, or ceil(N/D)
//    (the last ranks wrap around to the first units) without, as DistributedSampler does.
//  * Packing into bins of seq_len tokens; a sample longer than seq_len is truncated to seq_len
//    (not split); empty samples are dropped by greedy and bfd:
//      none    one sample per sequence (padded)
//      greedy  samples in order, each into the first open bin with room (first-fit)
//      bfd     best-fit decreasing: longest first, each into the fullest bin with room
//  * micro_batches = bins / micro_batch_size, steps = micro_batches / grad_accum, each rounded
//    down with drop_last and up without; max_steps, when set, caps steps per epoch.
// Thread-safety: pure functions; safe from any thread. PlanSteps packs ranks on up to
// min(8, hardware threads) short-lived threads of its own.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace ww::gate {

enum class Sharding { kContiguous, kStrided, kByFile };
enum class Packing { kNone, kGreedy, kBfd };
enum class PackingScope { kRank, kGlobal };

std::optional<Sharding> ParseSharding(std::string_view s);
std::optional<Packing> ParsePacking(std::string_view s);
std::optional<PackingScope> ParsePackingScope(std::string_view s);
std::string_view ShardingName(Sharding s);
std::string_view PackingName(Packing p);
std::string_view PackingScopeName(PackingScope s);

struct BatchingConfig {
  uint32_t data_parallel = 1;
  uint32_t micro_batch_size = 1;
  uint32_t grad_accum = 1;
  uint32_t seq_len = 4096;
  Sharding sharding = Sharding::kStrided;
  Packing packing = Packing::kNone;
  PackingScope scope = PackingScope::kRank;
  bool drop_last = true;
  std::optional<uint64_t> max_steps;
};

// The corpus as the gate sees it: lengths of every sample in order, and where each shard file
// starts (file_starts[f] is the index of file f's first sample; ascending, first is 0).
struct CorpusLengths {
  std::vector<uint32_t> lengths;
  std::vector<size_t> file_starts;
};

struct RankPlan {
  uint64_t samples = 0;  // samples this rank reads per epoch (0 for global packing)
  uint64_t tokens = 0;   // tokens after truncation (packed tokens for global packing)
  uint64_t bins = 0;     // sequences of seq_len (or samples without packing)
  uint64_t micro_batches = 0;
  uint64_t steps = 0;      // optimizer steps per epoch before max_steps
  uint64_t steps_run = 0;  // after max_steps
};

struct StepPlan {
  std::vector<RankPlan> ranks;            // by data-parallel rank
  uint64_t total_bins = 0;                // global packing: bins before they are dealt to ranks
  uint64_t min_steps = 0, max_steps = 0;  // over ranks, before max_steps
  // Equalize-to-minimum: the max_steps that makes every rank stop together.
  uint64_t equalized_max_steps = 0;
  bool steps_equal = false;  // after max_steps
};

// Bins needed to pack `lengths` (each truncated to seq_len) with first-fit / best-fit
// decreasing. O(n log n) and O(n * log(seq_len)) respectively.
uint64_t CountBinsFirstFit(const uint32_t* lengths, size_t n, uint32_t seq_len);
uint64_t CountBinsBestFitDecreasing(const uint32_t* lengths, size_t n, uint32_t seq_len);
uint64_t CountBins(Packing packing, const uint32_t* lengths, size_t n, uint32_t seq_len);

// The units (sample indices, or packed-sequence indices with global packing) that data-parallel
// rank `rank` of `data_parallel` reads per epoch, in order, under strided or contiguous sharding
// of `units` units: per-rank counts as described above, indices >= units wrapped around (only
// without drop_last). For strided this is torch.utils.data.DistributedSampler(num_replicas=
// data_parallel, rank=rank, shuffle=False, drop_last=drop_last)'s list (tests/gate/
// distributed_sampler_test.cc compares them). Empty for by_file, which deals files, not units.
std::vector<uint64_t> RankUnits(uint64_t units, uint32_t data_parallel, uint32_t rank,
                                Sharding sharding, bool drop_last);

// InvalidInput for configurations that make no sense (zero sizes, by_file with global packing).
Result<StepPlan> PlanSteps(const CorpusLengths& corpus, const BatchingConfig& config);

}  // namespace ww::gate
