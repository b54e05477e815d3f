// The gate's `sharding: strided` against the reference it models, torch.utils.data.
// DistributedSampler (Debian's python3-torch, CPU): for every (dataset size, world size,
// drop_last) of a grid of several thousand, each rank's sample list must be the sampler's with
// shuffle=False, and each rank's sample count the sampler's with shuffle=True. The lists are
// checked both as RankUnits returns them and as PlanSteps consumes them (per-rank samples and
// tokens over a corpus whose sample i has i + 1 tokens).
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "gate/packing.h"
#include "support/support.h"

namespace ww::gate {
namespace {

using ::ww::testing::InCi;
using ::ww::testing::ReadFile;
using ::ww::testing::RunCommand;
using ::ww::testing::SourceDir;
using ::ww::testing::TempDir;
using ::ww::testing::WriteFile;

// Sizes around multiples of the world sizes, below them (ranks with nothing), and large enough
// that padding wraps more than once (size < world without drop_last).
std::vector<uint64_t> Sizes() {
  std::vector<uint64_t> s;
  for (uint64_t n = 0; n <= 40; ++n) s.push_back(n);
  for (uint64_t n : {63, 64, 65, 97, 100, 127, 128, 129, 255, 256, 257, 1000, 1001, 4099}) {
    s.push_back(n);
  }
  return s;
}
std::vector<uint32_t> Worlds() {
  std::vector<uint32_t> w;
  for (uint32_t d = 1; d <= 12; ++d) w.push_back(d);
  for (uint32_t d : {16, 24, 31, 32, 33, 64, 100}) w.push_back(d);
  return w;
}

// A python3 that imports torch: $WW_TORCH_PYTHON, else python3 on PATH, else Debian's own
// /usr/bin/python3 (where python3-torch installs when PATH has another interpreter, e.g. pyenv).
std::string TorchPython() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("WW_TORCH_PYTHON")) candidates.push_back(env);
  candidates.push_back("python3");
  candidates.push_back("/usr/bin/python3");
  for (const auto& py : candidates) {
    if (RunCommand(py + " -c 'import torch.utils.data' >/dev/null 2>&1") == 0) return py;
  }
  return "";
}

struct Reference {
  uint64_t len = 0;    // len(sampler)
  uint64_t count = 0;  // indices iterating it yields
  std::vector<uint64_t> indices;
};
using Key = std::tuple<uint64_t, uint32_t, bool, bool, uint32_t>;  // size world drop shuffle rank

TEST(DistributedSamplerTest, StridedShardingIsDistributedSamplerOverThousandsOfShapes) {
  const std::string python = TorchPython();
  if (python.empty()) {
    if (InCi()) FAIL() << "no python3 with torch in CI (scripts/install-deps.sh: python3-torch)";
    GTEST_SKIP() << "no python3 that imports torch; install python3-torch "
                    "(scripts/install-deps.sh) or set WW_TORCH_PYTHON";
  }
  TempDir dir;
  std::ostringstream combos;
  size_t shapes = 0;
  for (uint64_t n : Sizes()) {
    for (uint32_t d : Worlds()) {
      for (int drop = 0; drop <= 1; ++drop) {
        ++shapes;
        for (int shuffle = 0; shuffle <= 1; ++shuffle) {
          combos << n << " " << d << " " << drop << " " << shuffle << "\n";
        }
      }
    }
  }
  ASSERT_GE(shapes, 1000u);
  WriteFile(dir / "combos.txt", combos.str());
  const std::string script = SourceDir() + "/tests/gate/distributed_sampler_reference.py";
  const int rc = RunCommand(python + " " + script + " " + dir / "combos.txt" + " > " +
                            dir / "reference.txt" + " 2> " + dir / "stderr.txt");
  ASSERT_EQ(rc, 0) << ReadFile(dir / "stderr.txt");

  std::map<Key, Reference> reference;
  std::istringstream in(ReadFile(dir / "reference.txt"));
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    uint64_t n = 0;
    uint32_t d = 0, rank = 0;
    int drop = 0, shuffle = 0;
    Reference r;
    ASSERT_TRUE(f >> n >> d >> drop >> shuffle >> rank >> r.len >> r.count) << line;
    for (uint64_t i; f >> i;) r.indices.push_back(i);
    reference[{n, d, drop != 0, shuffle != 0, rank}] = std::move(r);
  }

  size_t compared_lists = 0, compared_counts = 0, mismatches = 0;
  for (uint64_t n : Sizes()) {
    CorpusLengths corpus;
    for (uint64_t i = 0; i < n; ++i) corpus.lengths.push_back(static_cast<uint32_t>(i + 1));
    corpus.file_starts = {0};
    for (uint32_t d : Worlds()) {
      for (bool drop : {false, true}) {
        BatchingConfig config;
        config.data_parallel = d;
        config.seq_len = 1u << 20;  // nothing truncated: a rank's tokens are its indices + 1
        config.sharding = Sharding::kStrided;
        config.packing = Packing::kNone;
        config.drop_last = drop;
        auto plan = PlanSteps(corpus, config);
        ASSERT_TRUE(plan.ok()) << plan.status().message();
        for (uint32_t rank = 0; rank < d; ++rank) {
          const auto plain = reference.find({n, d, drop, false, rank});
          const auto shuffled = reference.find({n, d, drop, true, rank});
          ASSERT_NE(plain, reference.end()) << "no reference for " << n << " " << d << " " << rank;
          ASSERT_NE(shuffled, reference.end());
          const std::vector<uint64_t> mine = RankUnits(n, d, rank, Sharding::kStrided, drop);
          const Reference& ref = plain->second;
          uint64_t ref_tokens = 0;
          for (uint64_t i : ref.indices) ref_tokens += i + 1;
          const RankPlan& planned = plan->ranks[rank];
          const bool same = mine == ref.indices && ref.count == ref.len &&
                            planned.samples == ref.len && planned.tokens == ref_tokens &&
                            shuffled->second.len == planned.samples &&
                            shuffled->second.count == planned.samples;
          if (!same && ++mismatches <= 10) {
            ADD_FAILURE() << "size " << n << " world " << d << " drop_last " << drop << " rank "
                          << rank << ": gate " << mine.size() << " units (planned "
                          << planned.samples << " samples, " << planned.tokens
                          << " tokens), DistributedSampler " << ref.indices.size() << " (len "
                          << ref.len << ", " << ref_tokens << " tokens; shuffled "
                          << shuffled->second.count << ")";
          }
          compared_lists += ref.indices.size();
          ++compared_counts;
        }
      }
    }
  }
  EXPECT_EQ(mismatches, 0u);
  EXPECT_EQ(reference.size(), 2 * compared_counts) << "every reference line compared";
  // The figures for the report: shapes, rank lists and indices compared.
  std::cout << shapes << " (size, world, drop_last) shapes, " << compared_counts << " rank lists, "
            << compared_lists << " indices equal to DistributedSampler's\n";
}

}  // namespace
}  // namespace ww::gate
