// RunIobench on real files: cold and warm passes both present, cold ones start from a dropped
// cache, the corpus against a memory budget, the verdict against a need, honest notes when the
// cache refuses to drop, and every format's samples read back in full.
#include "measure/iobench.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>
#include <set>

#include "dataset/corpus_writers.h"
#include "measure/measure_testing.h"
#include "support/support.h"

namespace ww::measure {
namespace {

using ::ww::testing::TempDir;
using ::ww::testing::WriteFile;
namespace corpus = ::ww::dataset::testing;
using ::testing::HasSubstr;

uint64_t Sum(const std::vector<uint32_t>& v) {
  return std::accumulate(v.begin(), v.end(), uint64_t{0});
}

Result<IobenchReport> Bench(const std::vector<std::string>& paths, const IobenchOptions& options,
                            Env* env = DefaultEnv()) {
  return RunIobench(env, SystemClock(), paths, options);
}

class IobenchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    prefix_ = dir_ / "corpus";
    lengths_ = testing::WriteDurableMegatron(prefix_, 3000, 500);  // ~6 MB of int32 tokens
  }
  TempDir dir_;
  std::string prefix_;
  std::vector<uint32_t> lengths_;
};

TEST_F(IobenchTest, ColdAndWarmPassesInBothOrders) {
  IobenchOptions options;
  auto report = Bench({prefix_}, options);
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->samples, lengths_.size());
  EXPECT_EQ(report->tokens, Sum(lengths_));
  EXPECT_EQ(report->sample_bytes, Sum(lengths_) * 4);
  ASSERT_EQ(report->files.size(), 2u);  // .idx and .bin
  EXPECT_EQ(report->size_bytes, report->files[0].size_bytes + report->files[1].size_bytes);

  ASSERT_EQ(report->passes.size(), 4u);
  const bool real_disk = !testing::NoColdReads(dir_.path());
  for (const PassResult& p : report->passes) {
    EXPECT_EQ(p.samples, lengths_.size());
    EXPECT_EQ(p.bytes, report->sample_bytes);
    EXPECT_EQ(p.tokens, Sum(lengths_));
    EXPECT_GT(p.seconds, 0);
    EXPECT_DOUBLE_EQ(p.bytes_per_s, static_cast<double>(p.bytes) / p.seconds);
    ASSERT_TRUE(p.tokens_per_s.has_value());
    EXPECT_DOUBLE_EQ(*p.tokens_per_s, static_cast<double>(p.tokens) / p.seconds);
    if (p.cold && real_disk) {
      EXPECT_LT(p.resident_fraction_before, 0.05);
    }
    if (!p.cold) {
      EXPECT_GT(p.resident_fraction_before, 0.95);  // the cold pass just read it all
    }
  }
  EXPECT_EQ(report->passes[0].order, ReadOrder::kSequential);
  EXPECT_TRUE(report->passes[0].cold);
  EXPECT_FALSE(report->passes[1].cold);
  // Headline: shuffled.
  ASSERT_TRUE(report->cold && report->warm);
  EXPECT_EQ(report->cold->order, ReadOrder::kShuffled);
  EXPECT_TRUE(report->cold->cold);
  EXPECT_FALSE(report->warm->cold);
  EXPECT_FALSE(report->verdict.has_value());
  EXPECT_EQ(IobenchExitCode(*report), 0);

  const nlohmann::json j = IobenchToJson(*report);
  for (const char* key :
       {"size_bytes", "resident_fraction", "mem_available_bytes", "fits_in_page_cache"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  for (const char* pass : {"cold", "warm"}) {
    ASSERT_TRUE(j[pass].is_object()) << pass;
    EXPECT_TRUE(j[pass]["bytes_per_s"].is_number()) << pass;
    EXPECT_TRUE(j[pass]["tokens_per_s"].is_number()) << pass;
  }
  EXPECT_EQ(j["passes"].size(), 4u);
}

TEST_F(IobenchTest, CorpusLargerThanTheBudgetIsNotCacheResident) {
  IobenchOptions options;
  options.orders = {ReadOrder::kSequential};
  options.mem_budget_bytes = 1 << 20;  // 1 MiB of page cache for a ~6 MB corpus
  options.need_tokens_per_s = 1;
  auto report = Bench({prefix_}, options);
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_GT(report->size_bytes, *options.mem_budget_bytes);
  EXPECT_FALSE(report->fits_in_page_cache);
  EXPECT_TRUE(report->mem_from_budget);
  EXPECT_EQ(report->mem_available_bytes, uint64_t{1} << 20);
  ASSERT_TRUE(report->verdict.has_value());
  EXPECT_EQ(report->verdict->steady_state, "cold");
  const nlohmann::json j = IobenchToJson(*report);
  EXPECT_EQ(j["fits_in_page_cache"], false);
  EXPECT_EQ(j["mem_source"], "--mem-budget-bytes");
  EXPECT_THAT(FormatIobench(*report), HasSubstr("does NOT fit in the page cache"));

  options.mem_budget_bytes = uint64_t{1} << 40;
  report = Bench({prefix_}, options);
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->fits_in_page_cache);
  EXPECT_EQ(report->verdict->steady_state, "warm");
}

TEST_F(IobenchTest, ResidencyIsMeasuredBeforePlanningReadsTheFiles) {
  // jsonl planning reads the whole file; the residency reported must be what the run found.
  const std::string path = dir_ / "c.jsonl";
  WriteFile(path, corpus::JsonlBytes(std::vector<uint32_t>(2000, 300)));
  testing::SyncFile(path);
  if (auto why = testing::NoColdReads(path)) GTEST_SKIP() << *why;
  ASSERT_TRUE(DefaultEnv()->DropCachedPages(path).ok());
  IobenchOptions options;
  options.format = dataset::DataFormat::kJsonl;
  options.orders = {ReadOrder::kSequential};
  auto report = Bench({path}, options);
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_LT(report->resident_fraction, 0.05);
  EXPECT_LT(report->files[0].resident_bytes, report->files[0].size_bytes / 20);
  // The run ends with a warm pass, so the next one finds the file cached.
  report = Bench({path}, options);
  ASSERT_TRUE(report.ok());
  EXPECT_GT(report->resident_fraction, 0.95);
}

TEST_F(IobenchTest, VerdictAgainstTheNeed) {
  IobenchOptions options;
  options.orders = {ReadOrder::kShuffled};
  options.need_tokens_per_s = 1.0;  // any disk keeps up with 1 token/s
  auto report = Bench({prefix_}, options);
  ASSERT_TRUE(report.ok());
  ASSERT_TRUE(report->verdict && report->verdict->cold && report->verdict->warm);
  EXPECT_TRUE(report->verdict->keeps_up);
  EXPECT_TRUE(report->verdict->cold->keeps_up);
  EXPECT_DOUBLE_EQ(report->verdict->cold->margin, *report->cold->tokens_per_s);
  EXPECT_EQ(IobenchExitCode(*report), 0);

  options.need_tokens_per_s = 1e18;  // nothing keeps up
  report = Bench({prefix_}, options);
  ASSERT_TRUE(report.ok());
  EXPECT_FALSE(report->verdict->keeps_up);
  EXPECT_FALSE(report->verdict->cold->keeps_up);
  EXPECT_FALSE(report->verdict->warm->keeps_up);
  EXPECT_LT(report->verdict->warm->margin, 1.0);
  EXPECT_EQ(IobenchExitCode(*report), 1);
  const std::string text = FormatIobench(*report);
  EXPECT_THAT(text, HasSubstr("cold: does NOT keep up"));
  EXPECT_THAT(text, HasSubstr("warm: does NOT keep up"));
}

TEST_F(IobenchTest, ACacheThatWillNotDropIsReportedNotHidden) {
  class NoDrop final : public EnvWrapper {
   public:
    using EnvWrapper::EnvWrapper;
    Status DropCachedPages(const std::string&) override { return Status::Ok(); }
  } cache(DefaultEnv());
  IobenchOptions options;
  options.orders = {ReadOrder::kSequential};
  // Warm the files first, so "cold" finds them cached.
  auto first = Bench({prefix_}, options);
  ASSERT_TRUE(first.ok());
  auto report = Bench({prefix_}, options, &cache);
  ASSERT_TRUE(report.ok());
  ASSERT_TRUE(report->cold.has_value());
  EXPECT_GT(report->cold->resident_fraction_before, 0.95);
  ASSERT_FALSE(report->notes.empty());
  EXPECT_THAT(report->notes[0],
              HasSubstr("cold pass started with 100 % of the corpus still cached"));
}

TEST_F(IobenchTest, MemoryForThePageCacheComesFromTheEnv) {
  // One override: MemAvailable. Every file call still goes to the real machine.
  class SmallMachine final : public EnvWrapper {
   public:
    using EnvWrapper::EnvWrapper;
    std::optional<uint64_t> available = 4096;
    Result<MemInfo> ReadMemInfo() override {
      MemInfo m;
      m.total_bytes = uint64_t{1} << 30;
      m.available_bytes = available;
      return m;
    }
  } env(DefaultEnv());
  IobenchOptions options;
  options.orders = {ReadOrder::kSequential};
  options.drop_cache = false;
  auto report = Bench({prefix_}, options, &env);
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->mem_available_bytes, 4096u);
  EXPECT_FALSE(report->fits_in_page_cache);
  EXPECT_THAT(FormatIobench(*report), HasSubstr("4.00 KiB available (MemAvailable)"));

  env.available.reset();  // a kernel before 3.14: no MemAvailable line
  auto refused = Bench({prefix_}, options, &env);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("no MemAvailable line"));
  EXPECT_THAT(refused.status().message(), HasSubstr("--mem-budget-bytes"));
  options.mem_budget_bytes = uint64_t{1} << 40;  // the budget needs no MemAvailable
  EXPECT_TRUE(Bench({prefix_}, options, &env).ok());
}

TEST_F(IobenchTest, NoDropRunsWarmOnly) {
  IobenchOptions options;
  options.drop_cache = false;
  options.need_tokens_per_s = 1;
  auto report = Bench({prefix_}, options);
  ASSERT_TRUE(report.ok());
  ASSERT_EQ(report->passes.size(), 2u);
  for (const PassResult& p : report->passes) EXPECT_FALSE(p.cold);
  EXPECT_FALSE(report->cold.has_value());
  ASSERT_TRUE(report->warm.has_value());
  EXPECT_FALSE(report->verdict->cold.has_value());
  EXPECT_TRUE(report->verdict->keeps_up);
  EXPECT_TRUE(IobenchToJson(*report)["cold"].is_null());
}

TEST_F(IobenchTest, MaxBytesReadsAPrefixOfTheOrder) {
  IobenchOptions options;
  options.orders = {ReadOrder::kShuffled};
  options.max_bytes = 100000;
  auto report = Bench({prefix_}, options);
  ASSERT_TRUE(report.ok());
  for (const PassResult& p : report->passes) {
    EXPECT_GE(p.bytes, 100000u);
    EXPECT_LT(p.bytes, 100000u + 600 * 4 + 4 * 4);  // stops within one sample past the cap
    EXPECT_LT(p.samples, lengths_.size());
  }
  EXPECT_THAT(report->notes.back(), HasSubstr("--max-bytes"));
}

TEST_F(IobenchTest, ManyReadersReadTheSameSamples) {
  IobenchOptions options;
  options.orders = {ReadOrder::kShuffled};
  options.readers = 8;
  auto report = Bench({prefix_}, options);
  ASSERT_TRUE(report.ok());
  for (const PassResult& p : report->passes) {
    EXPECT_EQ(p.samples, lengths_.size());
    EXPECT_EQ(p.tokens, Sum(lengths_));
  }
  EXPECT_EQ(report->readers, 8);
}

TEST_F(IobenchTest, SeveralCorporaAddUp) {
  const std::string second = dir_ / "second";
  const auto more = testing::WriteDurableMegatron(second, 100, 50);
  IobenchOptions options;
  options.orders = {ReadOrder::kSequential};
  auto report = Bench({prefix_, second + ".idx"}, options);
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->files.size(), 4u);
  EXPECT_EQ(report->samples, lengths_.size() + more.size());
  EXPECT_EQ(report->passes[0].tokens, Sum(lengths_) + Sum(more));
}

TEST(Iobench, EveryFormatReadsAllItsSamples) {
  TempDir dir;
  const std::vector<uint32_t> lengths = {5, 0, 17, 3, 8, 1, 40, 2};
  WriteFile(dir / "a.jsonl", corpus::JsonlBytes(lengths));
  WriteFile(dir / "a.arrow", corpus::ArrowStreamBytes({{5, 0, 17}, {3, 8, 1, 40, 2}}));
  std::vector<int64_t> offsets = {0};
  std::vector<int32_t> tokens;
  for (uint32_t len : lengths) {
    tokens.insert(tokens.end(), len, 7);
    offsets.push_back(static_cast<int64_t>(tokens.size()));
  }
  WriteFile(dir / "p.offsets.npy", corpus::NpyBytes<int64_t>("<i8", {offsets.size()}, offsets));
  WriteFile(dir / "p.tokens.npy", corpus::NpyBytes<int32_t>("<i4", {tokens.size()}, tokens));
  struct Case {
    dataset::DataFormat format;
    std::string path;
    uint64_t sample_bytes;  // token bytes, or whole lines for jsonl
  };
  const uint64_t jsonl_bytes = corpus::JsonlBytes(lengths).size();
  for (const Case& c : {Case{dataset::DataFormat::kJsonl, dir / "a.jsonl", jsonl_bytes},
                        Case{dataset::DataFormat::kArrow, dir / "a.arrow", Sum(lengths) * 4},
                        Case{dataset::DataFormat::kNpy, dir / "p", Sum(lengths) * 4}}) {
    IobenchOptions options;
    options.format = c.format;
    options.orders = {ReadOrder::kShuffled};
    auto report = Bench({c.path}, options);
    ASSERT_TRUE(report.ok()) << c.path << ": " << report.status().message();
    EXPECT_EQ(report->samples, lengths.size()) << c.path;
    EXPECT_EQ(report->sample_bytes, c.sample_bytes) << c.path;
    EXPECT_EQ(report->tokens, Sum(lengths)) << c.path;
    EXPECT_EQ(report->warm->tokens, Sum(lengths)) << c.path;
    EXPECT_EQ(report->warm->bytes, c.sample_bytes) << c.path;
  }
}

TEST(Iobench, RawTextHasBytesButNoTokens) {
  TempDir dir;
  WriteFile(dir / "t.jsonl", "{\"text\": \"hello world\"}\n{\"text\": \"more text here\"}\n");
  IobenchOptions options;
  options.format = dataset::DataFormat::kTextJsonl;
  options.field = "text";
  options.orders = {ReadOrder::kSequential};
  auto report = Bench({dir / "t.jsonl"}, options);
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->samples, 2u);
  EXPECT_FALSE(report->tokens.has_value());
  EXPECT_FALSE(report->warm->tokens_per_s.has_value());
  EXPECT_GT(report->warm->bytes_per_s, 0);
  EXPECT_TRUE(IobenchToJson(*report)["warm"]["tokens_per_s"].is_null());
  EXPECT_THAT(report->notes.back(), HasSubstr("raw text has no token ids"));

  options.need_tokens_per_s = 1000;
  auto refused = Bench({dir / "t.jsonl"}, options);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidInput);
  EXPECT_THAT(refused.status().message(), HasSubstr("--tokenizer"));
}

TEST(Iobench, BadInputsAreErrors) {
  TempDir dir;
  WriteFile(dir / "l.npy", corpus::NpyBytes<int32_t>("<i4", {3}, {4, 5, 6}));
  IobenchOptions options;
  options.format = dataset::DataFormat::kNpy;
  auto lengths_only = Bench({dir / "l.npy"}, options);
  ASSERT_FALSE(lengths_only.ok());
  EXPECT_THAT(lengths_only.status().message(), HasSubstr("lengths only"));

  options.format = dataset::DataFormat::kMegatron;
  auto missing = Bench({dir / "nope"}, options);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);

  options.readers = 0;
  EXPECT_FALSE(Bench({dir / "nope"}, options).ok());
  options.readers = 1;
  options.need_tokens_per_s = -5;
  EXPECT_FALSE(Bench({dir / "nope"}, options).ok());
  EXPECT_FALSE(Bench({}, IobenchOptions{}).ok());
}

TEST(SampleOrder, SequentialAndSeededShuffle) {
  const auto seq = SampleOrder(1000, ReadOrder::kSequential, 1);
  for (uint64_t i = 0; i < seq.size(); ++i) ASSERT_EQ(seq[i], i);
  const auto a = SampleOrder(1000, ReadOrder::kShuffled, 1);
  const auto b = SampleOrder(1000, ReadOrder::kShuffled, 1);
  const auto c = SampleOrder(1000, ReadOrder::kShuffled, 2);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, seq);
  EXPECT_EQ(std::set<uint64_t>(a.begin(), a.end()).size(), 1000u);  // a permutation
  EXPECT_EQ(*std::max_element(a.begin(), a.end()), 999u);
  EXPECT_TRUE(SampleOrder(0, ReadOrder::kShuffled, 1).empty());
}

}  // namespace
}  // namespace ww::measure
