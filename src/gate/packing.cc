#include "gate/packing.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <thread>

namespace ww::gate {
namespace {

uint64_t DivRound(uint64_t a, uint64_t b, bool down) { return down ? a / b : (a + b - 1) / b; }

// Set of capacities 0..max with "smallest member >= x" in O(log64(max)): a bitmap per level,
// where a bit in level k+1 says whether the 64-bit word below it is non-zero.
class CapacitySet {
 public:
  explicit CapacitySet(uint32_t max_value) {
    size_t bits = size_t{max_value} + 1;
    do {
      const size_t words = (bits + 63) / 64;
      levels_.emplace_back(words, 0);
      bits = words;
    } while (bits > 1);
  }
  void Set(uint32_t v) {
    size_t i = v;
    for (auto& level : levels_) {
      const bool was_zero = level[i / 64] == 0;
      level[i / 64] |= uint64_t{1} << (i % 64);
      if (!was_zero) break;
      i /= 64;
    }
  }
  void Clear(uint32_t v) {
    size_t i = v;
    for (auto& level : levels_) {
      level[i / 64] &= ~(uint64_t{1} << (i % 64));
      if (level[i / 64] != 0) break;
      i /= 64;
    }
  }
  // Smallest member >= x, or -1.
  int64_t NextAtLeast(uint32_t x) const { return Find(0, x); }

 private:
  int64_t Find(size_t level, size_t x) const {
    const auto& words = levels_[level];
    size_t w = x / 64;
    if (w >= words.size()) return -1;
    const uint64_t masked = words[w] & (~uint64_t{0} << (x % 64));
    if (masked != 0)
      return static_cast<int64_t>(w * 64 + static_cast<size_t>(std::countr_zero(masked)));
    // Next non-zero word after w, found one level up.
    if (level + 1 == levels_.size()) return -1;
    const int64_t next_word = Find(level + 1, w + 1);
    if (next_word < 0) return -1;
    const uint64_t word = words[static_cast<size_t>(next_word)];
    return next_word * 64 + std::countr_zero(word);
  }
  std::vector<std::vector<uint64_t>> levels_;
};

}  // namespace

std::optional<Sharding> ParseSharding(std::string_view s) {
  if (s == "contiguous") return Sharding::kContiguous;
  if (s == "strided") return Sharding::kStrided;
  if (s == "by_file") return Sharding::kByFile;
  return std::nullopt;
}
std::optional<Packing> ParsePacking(std::string_view s) {
  if (s == "none") return Packing::kNone;
  if (s == "greedy") return Packing::kGreedy;
  if (s == "bfd") return Packing::kBfd;
  return std::nullopt;
}
std::optional<PackingScope> ParsePackingScope(std::string_view s) {
  if (s == "rank") return PackingScope::kRank;
  if (s == "global") return PackingScope::kGlobal;
  return std::nullopt;
}
std::string_view ShardingName(Sharding s) {
  switch (s) {
    case Sharding::kContiguous:
      return "contiguous";
    case Sharding::kStrided:
      return "strided";
    case Sharding::kByFile:
      return "by_file";
  }
  return "?";
}
std::string_view PackingName(Packing p) {
  switch (p) {
    case Packing::kNone:
      return "none";
    case Packing::kGreedy:
      return "greedy";
    case Packing::kBfd:
      return "bfd";
  }
  return "?";
}
std::string_view PackingScopeName(PackingScope s) {
  return s == PackingScope::kRank ? "rank" : "global";
}

uint64_t CountBinsFirstFit(const uint32_t* lengths, size_t n, uint32_t seq_len) {
  if (n == 0 || seq_len == 0) return 0;
  // Segment tree over bins 0..n-1 holding the largest remaining capacity in each subtree.
  // Unopened bins have full capacity and sit right of every opened bin, so "leftmost bin with
  // room" is exactly first-fit, and opening a bin is the leftmost unopened one.
  size_t leaves = 1;
  while (leaves < n) leaves <<= 1;
  std::vector<uint32_t> tree(2 * leaves, seq_len);
  uint64_t used = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t len = std::min(lengths[i], seq_len);
    if (len == 0) continue;
    size_t node = 1;
    while (node < leaves) node = tree[2 * node] >= len ? 2 * node : 2 * node + 1;
    tree[node] -= len;
    used = std::max<uint64_t>(used, node - leaves + 1);
    // Propagate the new maximum up; stop as soon as an ancestor's maximum is unchanged.
    for (node >>= 1; node >= 1; node >>= 1) {
      const uint32_t m = std::max(tree[2 * node], tree[2 * node + 1]);
      if (tree[node] == m) break;
      tree[node] = m;
    }
  }
  return used;
}

uint64_t CountBinsBestFitDecreasing(const uint32_t* lengths, size_t n, uint32_t seq_len) {
  if (n == 0 || seq_len == 0) return 0;
  // Counting sort by (truncated) length, then best fit over the multiset of remaining
  // capacities: bins with equal room are interchangeable, so only their count matters.
  std::vector<uint64_t> by_length(size_t{seq_len} + 1, 0);
  for (size_t i = 0; i < n; ++i) ++by_length[std::min(lengths[i], seq_len)];
  std::vector<uint64_t> bins_with_room(size_t{seq_len} + 1, 0);
  CapacitySet rooms(seq_len);
  uint64_t bins = 0;
  for (uint32_t len = seq_len; len >= 1; --len) {
    for (uint64_t k = by_length[len]; k > 0; --k) {
      const int64_t best = rooms.NextAtLeast(len);
      uint32_t room;
      if (best < 0) {
        ++bins;
        room = seq_len;
      } else {
        room = static_cast<uint32_t>(best);
        if (--bins_with_room[room] == 0) rooms.Clear(room);
      }
      const uint32_t left = room - len;
      if (left > 0 && bins_with_room[left]++ == 0) rooms.Set(left);
    }
  }
  return bins;
}

uint64_t CountBins(Packing packing, const uint32_t* lengths, size_t n, uint32_t seq_len) {
  switch (packing) {
    case Packing::kNone:
      return n;
    case Packing::kGreedy:
      return CountBinsFirstFit(lengths, n, seq_len);
    case Packing::kBfd:
      return CountBinsBestFitDecreasing(lengths, n, seq_len);
  }
  return n;
}

std::vector<uint64_t> RankUnits(uint64_t units, uint32_t data_parallel, uint32_t rank,
                                Sharding sharding, bool drop_last) {
  std::vector<uint64_t> out;
  if (sharding == Sharding::kByFile || units == 0 || data_parallel == 0 || rank >= data_parallel) {
    return out;
  }
  const uint64_t count = DivRound(units, data_parallel, drop_last);
  out.reserve(count);
  for (uint64_t k = 0; k < count; ++k) {
    const uint64_t unit =
        sharding == Sharding::kStrided ? k * data_parallel + rank : uint64_t{rank} * count + k;
    out.push_back(unit % units);  // wraps only when padding without drop_last
  }
  return out;
}

Result<StepPlan> PlanSteps(const CorpusLengths& corpus, const BatchingConfig& c) {
  if (c.data_parallel == 0 || c.micro_batch_size == 0 || c.grad_accum == 0 || c.seq_len == 0) {
    return Status::InvalidInput(
        "data-parallel size, micro_batch_size, grad_accum and seq_len must be positive");
  }
  if (c.sharding == Sharding::kByFile && c.scope == PackingScope::kGlobal &&
      c.packing != Packing::kNone) {
    return Status::InvalidInput(
        "sharding: by_file deals whole files to ranks, so each rank packs its own files; use "
        "packing_scope: rank");
  }
  const uint32_t dp = c.data_parallel;
  const auto& lengths = corpus.lengths;
  const uint64_t n = lengths.size();
  StepPlan plan;
  plan.ranks.resize(dp);

  auto truncated_tokens = [&](const std::vector<uint32_t>& v) {
    uint64_t t = 0;
    for (uint32_t len : v) t += std::min(len, c.seq_len);
    return t;
  };
  // Units per rank for strided/contiguous dealing of `units` items (DistributedSampler sizing).
  auto per_rank = [&](uint64_t units) { return DivRound(units, dp, c.drop_last); };

  const bool global = c.scope == PackingScope::kGlobal && c.packing != Packing::kNone;
  if (global) {
    plan.total_bins = CountBins(c.packing, lengths.data(), lengths.size(), c.seq_len);
    const uint64_t bins = plan.total_bins == 0 ? 0 : per_rank(plan.total_bins);
    const uint64_t tokens = truncated_tokens(lengths);
    for (auto& r : plan.ranks) {
      r.bins = bins;
      r.tokens = plan.total_bins == 0 ? 0
                                      : static_cast<uint64_t>(static_cast<double>(tokens) *
                                                              static_cast<double>(bins) /
                                                              static_cast<double>(plan.total_bins));
    }
  } else {
    // Ranks are independent: pack them on a few threads (each writes only its own RankPlan).
    auto pack_rank = [&](uint32_t rank, std::vector<uint32_t>& mine) {
      mine.clear();
      if (c.sharding == Sharding::kByFile) {
        for (size_t f = rank; f < corpus.file_starts.size(); f += dp) {
          const size_t begin = corpus.file_starts[f];
          const size_t end =
              f + 1 < corpus.file_starts.size() ? corpus.file_starts[f + 1] : lengths.size();
          mine.insert(mine.end(), lengths.begin() + static_cast<ptrdiff_t>(begin),
                      lengths.begin() + static_cast<ptrdiff_t>(end));
        }
      } else {
        const std::vector<uint64_t> units = RankUnits(n, dp, rank, c.sharding, c.drop_last);
        mine.reserve(units.size());
        for (uint64_t unit : units) mine.push_back(lengths[unit]);
      }
      RankPlan& r = plan.ranks[rank];
      r.samples = mine.size();
      r.tokens = truncated_tokens(mine);
      r.bins = CountBins(c.packing, mine.data(), mine.size(), c.seq_len);
    };
    const uint32_t threads = std::max<uint32_t>(
        1, std::min<uint32_t>(dp, std::min(8u, std::thread::hardware_concurrency())));
    std::atomic<uint32_t> next_rank{0};
    auto worker = [&] {
      std::vector<uint32_t> mine;
      for (uint32_t rank = next_rank++; rank < dp; rank = next_rank++) pack_rank(rank, mine);
    };
    std::vector<std::thread> pool;
    for (uint32_t t = 1; t < threads; ++t) pool.emplace_back(worker);
    worker();
    for (auto& t : pool) t.join();
  }
  plan.min_steps = UINT64_MAX;
  for (auto& r : plan.ranks) {
    r.micro_batches = DivRound(r.bins, c.micro_batch_size, c.drop_last);
    r.steps = DivRound(r.micro_batches, c.grad_accum, c.drop_last);
    r.steps_run = c.max_steps ? std::min(r.steps, *c.max_steps) : r.steps;
    plan.min_steps = std::min(plan.min_steps, r.steps);
    plan.max_steps = std::max(plan.max_steps, r.steps);
  }
  if (plan.ranks.empty()) plan.min_steps = 0;
  plan.equalized_max_steps = plan.min_steps;
  plan.steps_equal = std::all_of(plan.ranks.begin(), plan.ranks.end(), [&](const RankPlan& r) {
    return r.steps_run == plan.ranks[0].steps_run;
  });
  return plan;
}

}  // namespace ww::gate
