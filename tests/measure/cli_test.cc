// End to end: the real `wattwatch iobench` and `wattwatch scaling` binaries: exit codes, --json
// keys, messages naming file:line, --help that teaches.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "dataset/corpus_writers.h"
#include "measure/measure_testing.h"
#include "support/support.h"

namespace ww::measure {
namespace {

using ::testing::HasSubstr;
using ::ww::testing::ReadFile;
using ::ww::testing::RunCommand;
using ::ww::testing::TempDir;
using ::ww::testing::WriteFile;

struct CliRun {
  int code = -1;
  std::string out, err;
};

// `wattwatch ARGS` under `timeout`, so a command that blocks fails with 124 instead of hanging.
CliRun Wattwatch(const TempDir& dir, const std::string& args) {
  CliRun r;
  r.code = RunCommand("timeout 120 " + ww::testing::WattwatchBinary() + " " + args + " > " +
                      (dir / "stdout") + " 2> " + (dir / "stderr"));
  r.out = ReadFile(dir / "stdout");
  r.err = ReadFile(dir / "stderr");
  return r;
}

TEST(IobenchCli, JsonHasColdAndWarmAndExitsZero) {
  TempDir dir;
  testing::WriteDurableMegatron(dir / "c", 500, 300);
  const CliRun r = Wattwatch(dir, "iobench " + dir / "c" + " --json --readers 2");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* key :
       {"size_bytes", "resident_fraction", "mem_available_bytes", "fits_in_page_cache", "passes"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_TRUE(j["cold"]["bytes_per_s"].is_number());
  EXPECT_TRUE(j["cold"]["tokens_per_s"].is_number());
  EXPECT_TRUE(j["warm"]["bytes_per_s"].is_number());
  EXPECT_TRUE(j["warm"]["tokens_per_s"].is_number());
  EXPECT_EQ(j["cold"]["order"], "shuffled");
  EXPECT_EQ(j["passes"].size(), 4u);
  EXPECT_EQ(j["readers"], 2);
}

TEST(IobenchCli, TextTableAndVerdict) {
  TempDir dir;
  testing::WriteDurableMegatron(dir / "c", 500, 300);
  CliRun r =
      Wattwatch(dir, "iobench " + dir / "c.idx" + " --order sequential --need-tokens-per-s 1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("cold   sequential"));
  EXPECT_THAT(r.out, HasSubstr("warm   sequential"));
  EXPECT_THAT(r.out, HasSubstr("cold: keeps up"));

  // A need no disk meets: exit 1, and the output says which pass fell short.
  r = Wattwatch(dir, "iobench " + dir / "c" + " --order sequential --need-tokens-per-s 1e18");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_THAT(r.out, HasSubstr("cold: does NOT keep up"));
  EXPECT_THAT(r.out, HasSubstr("warm: does NOT keep up"));

  r = Wattwatch(dir, "iobench " + dir / "c" + " --order shuffled --mem-budget-bytes 4096 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["fits_in_page_cache"], false);
}

TEST(IobenchCli, BadInputExitsTwo) {
  TempDir dir;
  CliRun r = Wattwatch(dir, "iobench " + dir / "missing");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("missing.idx: cannot open"));
  r = Wattwatch(dir, "iobench x --format parquet");
  EXPECT_EQ(r.code, 2);
  r = Wattwatch(dir, "iobench x --readers 0");
  EXPECT_EQ(r.code, 2);
  WriteFile(dir / "t.jsonl", "{\"text\": \"hi\"}\n");
  r = Wattwatch(dir, "iobench " + dir / "t.jsonl" + " --format text-jsonl --need-tokens-per-s 5");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--tokenizer"));
  r = Wattwatch(dir, "iobench " + dir / "t.jsonl" + " --format text-jsonl --json");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(nlohmann::json::parse(r.out)["warm"]["tokens_per_s"].is_null());
}

TEST(IobenchCli, AFifoIsRefusedNotWaitedOn) {
  // Opening a FIFO for reading blocks until a writer comes: iobench must refuse it at once.
  TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "c.jsonl").c_str(), 0600), 0);
  CliRun r = Wattwatch(dir, "iobench " + dir / "c.jsonl" + " --format jsonl");
  EXPECT_EQ(r.code, 2) << "124 is the timeout: iobench blocked on the FIFO\n" << r.err;
  EXPECT_THAT(r.err, HasSubstr("c.jsonl: not a regular file (a FIFO)"));
  // A Megatron prefix whose .idx is a FIFO.
  ASSERT_EQ(::mkfifo((dir / "m.idx").c_str(), 0600), 0);
  WriteFile(dir / "m.bin", std::string(64, '\0'));
  r = Wattwatch(dir, "iobench " + dir / "m");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("m.idx: not a regular file (a FIFO)"));
}

TEST(IobenchCli, TokenizerCountsRawTextTokens) {
  TempDir dir;
  // The minimal fixture tokenizer merges "a b" into "ab": "abab" is 2 tokens, "ab" is 1.
  WriteFile(dir / "t.jsonl", "{\"text\": \"abab\"}\n{\"text\": \"ab\"}\n");
  const std::string tokenizer =
      std::string(WW_SOURCE_DIR) + "/tests/fuzz/corpus/tokenizer_json/tokenizer_min.json";
  CliRun r = Wattwatch(dir, "iobench " + dir / "t.jsonl" + " --format text-jsonl --tokenizer " +
                                tokenizer + " --order sequential --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["tokens"], 3);
  EXPECT_EQ(j["warm"]["tokens"], 3);
  EXPECT_TRUE(j["warm"]["tokens_per_s"].is_number());
  r = Wattwatch(dir, "iobench " + dir / "t.jsonl" + " --tokenizer " + tokenizer);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--tokenizer is for --format text-jsonl"));
}

TEST(IobenchCli, HelpTeaches) {
  TempDir dir;
  const CliRun r = Wattwatch(dir, "iobench --help");
  EXPECT_EQ(r.code, 0);
  EXPECT_THAT(r.out, HasSubstr("Examples:"));
  EXPECT_THAT(r.out, HasSubstr("Exit codes: 0"));
  EXPECT_THAT(r.out, HasSubstr("--need-tokens-per-s"));
  EXPECT_THAT(r.out, HasSubstr("--mem-budget-bytes"));
}

TEST(ScalingCli, TableExitCodesAndJson) {
  TempDir dir;
  WriteFile(dir / "good.csv", "gpus,tokens_per_s\n4,13600\n8,27000\n16,53000\n");
  CliRun r = Wattwatch(dir, "scaling " + dir / "good.csv");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("strong scaling against 4 GPUs"));
  EXPECT_THAT(r.out, HasSubstr("every GPU count scales at or above 80 % of linear"));

  r = Wattwatch(dir, "scaling " + dir / "good.csv" + " --min-efficiency 0.99 --json");
  EXPECT_EQ(r.code, 1);
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["baseline_gpus"], 4);
  EXPECT_EQ(j["any_below_threshold"], true);
  ASSERT_EQ(j["rows"].size(), 3u);
  EXPECT_NEAR(j["rows"][2]["efficiency"].get<double>(), 53000.0 / 13600.0 / 4.0, 1e-12);
  for (const char* key :
       {"gpus", "tokens_per_s", "speedup", "ideal_speedup", "efficiency", "tokens_per_s_per_gpu",
        "marginal_tokens_per_s_per_gpu", "below_threshold"}) {
    EXPECT_TRUE(j["rows"][1].contains(key)) << key;
  }

  WriteFile(dir / "bad.csv", "gpus,tokens_per_s\n4,13600\n8,fast\n");
  r = Wattwatch(dir, "scaling " + dir / "bad.csv");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("bad.csv:3: tokens_per_s: \"fast\" is not a positive number"));

  r = Wattwatch(dir, "scaling " + dir / "none.csv");
  EXPECT_EQ(r.code, 2);
  r = Wattwatch(dir, "scaling " + dir / "good.csv --min-efficiency 2");
  EXPECT_EQ(r.code, 2);

  r = Wattwatch(dir, "scaling --help");
  EXPECT_EQ(r.code, 0);
  EXPECT_THAT(r.out, HasSubstr("Exit codes: 0"));
  EXPECT_THAT(r.out, HasSubstr("Example:"));
}

}  // namespace
}  // namespace ww::measure
