// End to end: the real `wattwatch gate` binary on corpora generated here, in every format.
// Reproduces the field report's failure: per-rank packing -> unequal steps -> exit 1 with the
// per-rank table and the equalized max_steps; global packing or max_steps -> exit 0.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "dataset/corpus_writers.h"
#include "support/support.h"

namespace ww::gate {
namespace {

using ::testing::HasSubstr;
using ::ww::testing::ReadFile;
using ::ww::testing::RunCommand;
using ::ww::testing::TempDir;
using ::ww::testing::WriteFile;
using namespace ww::dataset::testing;

struct CliRun {
  int code = -1;
  std::string out, err;
};

// `wattwatch gate ARGS` under `timeout`, so a gate that blocks (on a FIFO, say) fails the test
// with 124 instead of hanging it.
CliRun Gate(const TempDir& dir, const std::string& args) {
  CliRun r;
  r.code = RunCommand("timeout 60 " + ww::testing::WattwatchBinary() + " gate " + args + " > " +
                      (dir / "stdout") + " 2> " + (dir / "stderr"));
  r.out = ReadFile(dir / "stdout");
  r.err = ReadFile(dir / "stderr");
  return r;
}

// 16 ranks, contiguous shards of 64 samples. Ranks 0-7 hold 50-token samples (two per
// 100-token sequence), ranks 8-15 hold 60-token ones (one per sequence): per-rank packing
// gives 32 vs 64 sequences, so 8 vs 16 optimizer steps with grad_accum 4.
std::vector<uint32_t> ReportCorpus() {
  std::vector<uint32_t> lengths;
  for (int rank = 0; rank < 16; ++rank) lengths.insert(lengths.end(), 64, rank < 8 ? 50 : 60);
  return lengths;
}

std::string Spec(const std::string& format, const std::string& path, const std::string& extra = "",
                 const std::string& scope = "rank") {
  return "world_size: 16\nmicro_batch_size: 1\ngrad_accum: 4\nseq_len: 100\nepochs: 2\n"
         "data: {format: " +
         format + ", paths: [" + path +
         "]}\n"
         "sharding: contiguous\npacking: greedy\npacking_scope: " +
         scope +
         "\n"
         "model: {vocab_size: 1000, max_position_embeddings: 4096}\n" +
         extra;
}

TEST(GateCli, ReproducesTheEpochEndDeadlockAndItsFixes) {
  TempDir dir;
  WriteMegatron(dir / "corpus", ReportCorpus(), 8);
  WriteFile(dir / "job.yaml", Spec("megatron", "corpus"));
  CliRun r = Gate(dir, dir / "job.yaml");
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("steps_equal      FAIL"));
  EXPECT_THAT(r.out, HasSubstr("ranks run 8..16 optimizer steps per epoch"));
  EXPECT_THAT(r.out, HasSubstr("steps per rank per epoch"));
  EXPECT_THAT(r.out, HasSubstr("fix: add `max_steps: 8`"));
  EXPECT_THAT(r.out, HasSubstr("result: fail (exit 1)"));

  CliRun j = Gate(dir, dir / "job.yaml --json");
  EXPECT_EQ(j.code, 1);
  auto json = nlohmann::json::parse(j.out);
  EXPECT_EQ(json["status"], "fail");
  const auto& steps = json["checks"][0];
  EXPECT_EQ(steps["name"], "steps_equal");
  EXPECT_EQ(steps["status"], "fail");
  std::vector<int> expected(16, 16);
  std::fill(expected.begin(), expected.begin() + 8, 8);
  EXPECT_EQ(steps["details"]["steps_per_rank"], nlohmann::json(expected));
  EXPECT_EQ(steps["details"]["equalized_max_steps"], 8);

  // The same corpus, packed globally before sharding: every rank gets the same sequences.
  WriteFile(dir / "global.yaml", Spec("megatron", "corpus", "", "global"));
  CliRun g = Gate(dir, dir / "global.yaml");
  EXPECT_EQ(g.code, 0) << g.out << g.err;
  EXPECT_THAT(g.out, HasSubstr("steps_equal      PASS"));

  // Or equalized to the minimum.
  WriteFile(dir / "capped.yaml", Spec("megatron", "corpus", "max_steps: 8\n"));
  CliRun c = Gate(dir, dir / "capped.yaml --json");
  EXPECT_EQ(c.code, 0) << c.out << c.err;
  auto cj = nlohmann::json::parse(c.out);
  EXPECT_EQ(cj["checks"][0]["details"]["steps_per_rank"], nlohmann::json(std::vector<int>(16, 8)));
  // shard_balance warns (60 vs 50 tokens per sample): --strict turns that into exit 1.
  EXPECT_EQ(Gate(dir, dir / "capped.yaml --strict").code, 1);

  // max_steps above the smallest rank's count still hangs.
  WriteFile(dir / "over.yaml", Spec("megatron", "corpus", "max_steps: 9\n"));
  EXPECT_EQ(Gate(dir, dir / "over.yaml").code, 1);
}

TEST(GateCli, EveryFormatGivesTheSameSteps) {
  TempDir dir;
  const auto lengths = ReportCorpus();
  WriteMegatron(dir / "m", lengths, 4);
  std::vector<int32_t> lens(lengths.begin(), lengths.end());
  WriteFile(dir / "lengths.npy", NpyBytes<int32_t>("<i4", {lens.size()}, lens));
  WriteFile(dir / "c.jsonl", JsonlBytes(lengths));
  std::vector<std::vector<uint32_t>> batches(4);
  for (size_t i = 0; i < lengths.size(); ++i) batches[i * 4 / lengths.size()].push_back(lengths[i]);
  WriteFile(dir / "c.arrow", ArrowStreamBytes(batches));
  for (auto [format, path] : std::vector<std::pair<std::string, std::string>>{
           {"megatron", "m"}, {"npy", "lengths.npy"}, {"jsonl", "c.jsonl"}, {"arrow", "c.arrow"}}) {
    SCOPED_TRACE(format);
    WriteFile(dir / "job.yaml", Spec(format, path));
    CliRun r = Gate(dir, dir / "job.yaml --json");
    ASSERT_EQ(r.code, 1) << r.out << r.err;
    auto json = nlohmann::json::parse(r.out);
    EXPECT_EQ(json["checks"][0]["details"]["equalized_max_steps"], 8);
    EXPECT_EQ(json["summary"]["samples"], lengths.size());
  }
}

TEST(GateCli, ShardsSplitAcrossFilesByFile) {
  TempDir dir;
  // Three shard files over 2 ranks: rank 0 reads files 0 and 2, rank 1 file 1.
  WriteMegatron(dir / "s0", std::vector<uint32_t>(40, 10));
  WriteMegatron(dir / "s1", std::vector<uint32_t>(40, 10));
  WriteMegatron(dir / "s2", std::vector<uint32_t>(40, 10));
  WriteFile(dir / "job.yaml",
            "world_size: 2\nmicro_batch_size: 1\ngrad_accum: 1\nseq_len: 100\n"
            "data: {format: megatron, paths: [s0, s1, s2]}\nsharding: by_file\n");
  CliRun r = Gate(dir, dir / "job.yaml --json");
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  auto json = nlohmann::json::parse(r.out);
  EXPECT_EQ(json["checks"][0]["details"]["steps_per_rank"], nlohmann::json({80, 40}));
}

TEST(GateCli, BadSpecOrDataExitsTwoNamingFileAndKey) {
  TempDir dir;
  WriteMegatron(dir / "corpus", ReportCorpus());
  WriteFile(dir / "typo.yaml", Spec("megatron", "corpus", "grad_acumulation: 8\n"));
  CliRun r = Gate(dir, dir / "typo.yaml");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("typo.yaml:11: grad_acumulation: unknown key"));

  WriteFile(dir / "missing.yaml", Spec("megatron", "nothere"));
  r = Gate(dir, dir / "missing.yaml");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("nothere.idx"));

  auto [idx, bin] = MegatronBytes(ReportCorpus());
  idx[3] = 'Z';
  WriteFile(dir / "bad.idx", idx);
  WriteFile(dir / "bad.bin", bin);
  WriteFile(dir / "bad.yaml", Spec("megatron", "bad"));
  r = Gate(dir, dir / "bad.yaml");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("bad.idx: not a Megatron MMIDIDX index (wrong magic"));

  EXPECT_EQ(Gate(dir, "").code, 2);  // no JOB argument
}

TEST(GateCli, TextJsonlIsTokenizedWithTheTokenizer) {
  TempDir dir;
  // A tiny byte-level BPE: "hi" merges into one token, a space is its own token "Ġ".
  WriteFile(dir / "tokenizer.json", R"({"version": "1.0", "truncation": null, "padding": null,
    "added_tokens": [{"id": 5, "content": "<|endoftext|>", "single_word": false, "lstrip": false,
                      "rstrip": false, "normalized": false, "special": true}],
    "normalizer": null,
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
    "post_processor": null, "decoder": null,
    "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
              "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
              "vocab": {"h": 0, "i": 1, "\u0120": 2, "hi": 3, "\u0120hi": 4}, "merges": ["h i", "\u0120 hi"]}})");
  std::string text;
  for (int i = 0; i < 8; ++i) text += "{\"text\": \"hi hi hi\"}\n";  // 3 tokens each
  WriteFile(dir / "t.jsonl", text);
  WriteFile(dir / "job.yaml",
            "world_size: 2\nmicro_batch_size: 1\ngrad_accum: 1\nseq_len: 16\n"
            "data: {format: text-jsonl, paths: [t.jsonl], tokenizer: tokenizer.json}\n"
            "model: {vocab_size: 6}\n");
  CliRun r = Gate(dir, dir / "job.yaml --json");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  auto json = nlohmann::json::parse(r.out);
  EXPECT_EQ(json["summary"]["tokens"], 24);
  EXPECT_EQ(json["checks"][0]["details"]["steps_per_rank"], nlohmann::json({4, 4}));
}

TEST(GateCli, DuplicateKeyIsAnErrorNamingBothLines) {
  // PyYAML, which the training script reads this file with, takes the last grad_accum (8); the
  // gate used to take the first (4) and check a different job than the one that runs.
  TempDir dir;
  WriteMegatron(dir / "corpus", ReportCorpus());
  WriteFile(dir / "dup.yaml", Spec("megatron", "corpus", "grad_accum: 8\n"));
  CliRun r = Gate(dir, dir / "dup.yaml");
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("dup.yaml:11: grad_accum: duplicate key, first given at line 3"));
}

TEST(GateCli, AFifoAsDataIsRefusedNotWaitedOn) {
  // Opening a FIFO for reading blocks until a writer comes: the gate must refuse it at once.
  TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "c.jsonl").c_str(), 0600), 0);
  WriteFile(dir / "job.yaml", Spec("jsonl", "c.jsonl"));
  CliRun r = Gate(dir, dir / "job.yaml");
  EXPECT_EQ(r.code, 2) << "124 is the timeout: the gate blocked on the FIFO\n" << r.err;
  EXPECT_THAT(r.err, HasSubstr("c.jsonl: not a regular file (a FIFO)"));

  // The spec itself as a FIFO too.
  ASSERT_EQ(::mkfifo((dir / "fifo.yaml").c_str(), 0600), 0);
  r = Gate(dir, dir / "fifo.yaml");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("fifo.yaml: not a regular file (a FIFO)"));
}

TEST(GateCli, HelpTeaches) {
  TempDir dir;
  CliRun r = Gate(dir, "--help");
  EXPECT_EQ(r.code, 0);
  EXPECT_THAT(r.out, HasSubstr("max_steps"));
  EXPECT_THAT(r.out, HasSubstr("Exit codes"));
}

}  // namespace
}  // namespace ww::gate
