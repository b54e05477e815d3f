// Every check, pass and fail (page_cache, which is advisory, warns instead of failing), as
// pure functions over a spec and what was read; RunGate end to end on in-memory files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/env.h"
#include "dataset/corpus_writers.h"
#include "gate/gate.h"

namespace ww::gate {
namespace {

using ::testing::HasSubstr;
using namespace ww::dataset::testing;

JobSpec BaseSpec() {
  auto spec = ParseJobSpec(
      "world_size: 4\nmicro_batch_size: 1\ngrad_accum: 2\nseq_len: 100\n"
      "data: {format: megatron, paths: [/d/c]}\nmodel: {vocab_size: 1000, "
      "max_position_embeddings: 4096, params: 1.0e9}\n",
      "/d/job.yaml");
  EXPECT_TRUE(spec.ok()) << spec.status().message();
  return *spec;
}

CorpusSummary Summary(std::vector<uint32_t> lengths) {
  CorpusSummary s;
  s.corpus.lengths = std::move(lengths);
  s.corpus.file_starts = {0};
  for (uint32_t l : s.corpus.lengths) s.total_tokens += l;
  return s;
}

StepPlan Plan(const JobSpec& spec, const CorpusSummary& s) {
  auto plan = PlanSteps(s.corpus, MakeBatchingConfig(spec));
  EXPECT_TRUE(plan.ok());
  return *plan;
}

// Strided over 4 ranks: rank 0 gets 90-token samples, the others 10-token ones.
std::vector<uint32_t> SkewedLengths() {
  std::vector<uint32_t> l;
  for (int i = 0; i < 64; ++i) {
    l.push_back(90);
    l.push_back(10);
    l.push_back(10);
    l.push_back(10);
  }
  return l;
}

TEST(Checks, StepsEqualFailsWithTableAndEqualizedMaxSteps) {
  JobSpec spec = BaseSpec();
  spec.packing = Packing::kGreedy;
  auto s = Summary(SkewedLengths());
  auto r = CheckStepsEqual(spec, Plan(spec, s));
  EXPECT_EQ(r.status, CheckStatus::kFail);
  // rank 0: 64 bins / 2 = 32 steps; ranks 1-3: 64 x 10 tokens = 7 bins -> 3 steps.
  EXPECT_EQ(r.details["steps_per_rank"], nlohmann::json({32, 3, 3, 3}));
  EXPECT_EQ(r.details["equalized_max_steps"], 3);
  EXPECT_THAT(r.reason, HasSubstr("set max_steps: 3"));
  EXPECT_THAT(r.reason, HasSubstr("packing_scope: global"));

  spec.max_steps = 3;
  auto capped = CheckStepsEqual(spec, Plan(spec, s));
  EXPECT_EQ(capped.status, CheckStatus::kPass) << capped.reason;
  EXPECT_EQ(capped.details["steps_per_rank"], nlohmann::json({3, 3, 3, 3}));

  spec.max_steps = 10;
  auto too_many = CheckStepsEqual(spec, Plan(spec, s));
  EXPECT_EQ(too_many.status, CheckStatus::kFail);
  EXPECT_THAT(too_many.reason, HasSubstr("max_steps 10 is more than rank 1 has (3 steps)"));

  spec.max_steps.reset();
  spec.packing_scope = PackingScope::kGlobal;
  auto global = CheckStepsEqual(spec, Plan(spec, s));
  EXPECT_EQ(global.status, CheckStatus::kPass) << global.reason;
}

TEST(Checks, NonEmpty) {
  JobSpec spec = BaseSpec();
  auto ok = Summary(std::vector<uint32_t>(16, 50));
  EXPECT_EQ(CheckNonEmpty(spec, Plan(spec, ok), ok).status, CheckStatus::kPass);
  auto few = Summary(std::vector<uint32_t>(7, 50));  // 1 sample per rank < grad_accum 2
  auto r = CheckNonEmpty(spec, Plan(spec, few), few);
  EXPECT_EQ(r.status, CheckStatus::kFail);
  EXPECT_THAT(r.reason, HasSubstr("4 of 4 ranks get no optimizer step"));
  auto none = Summary({});
  EXPECT_EQ(CheckNonEmpty(spec, Plan(spec, none), none).status, CheckStatus::kFail);
}

TEST(Checks, ShardBalance) {
  JobSpec spec = BaseSpec();
  auto even = Summary(std::vector<uint32_t>(64, 50));
  EXPECT_EQ(CheckShardBalance(spec, Plan(spec, even)).status, CheckStatus::kPass);
  auto skewed = Summary(SkewedLengths());
  auto r = CheckShardBalance(spec, Plan(spec, skewed));
  EXPECT_EQ(r.status, CheckStatus::kFail);
  EXPECT_THAT(r.reason, HasSubstr("tokens per rank 640..5760"));
  std::vector<uint32_t> slight;
  for (int i = 0; i < 64; ++i) slight.insert(slight.end(), {55, 50, 50, 50});
  auto w = Summary(slight);
  EXPECT_EQ(CheckShardBalance(spec, Plan(spec, w)).status, CheckStatus::kWarn);
}

TEST(Checks, GlobalBatch) {
  JobSpec spec = BaseSpec();
  EXPECT_EQ(CheckGlobalBatch(spec).status, CheckStatus::kPass);
  spec.global_batch_size = 8;  // 1 x 2 x 4
  EXPECT_EQ(CheckGlobalBatch(spec).status, CheckStatus::kPass);
  spec.global_batch_size = 64;
  auto r = CheckGlobalBatch(spec);
  EXPECT_EQ(r.status, CheckStatus::kFail);
  EXPECT_THAT(r.reason, HasSubstr("global_batch_size 64 but MBS 1 x GA 2 x DP 4 = 8"));
  spec.global_batch_size.reset();
  spec.tp = 3;
  EXPECT_EQ(CheckGlobalBatch(spec).status, CheckStatus::kFail);
}

TEST(Checks, SeqFit) {
  JobSpec spec = BaseSpec();
  EXPECT_EQ(CheckSeqFit(spec, Summary({10, 100, 50})).status, CheckStatus::kPass);
  std::vector<uint32_t> one_long(100, 10);
  one_long[5] = 101;
  EXPECT_EQ(CheckSeqFit(spec, Summary(one_long)).status, CheckStatus::kWarn);
  auto r = CheckSeqFit(spec, Summary({10, 200, 300}));
  EXPECT_EQ(r.status, CheckStatus::kFail);
  EXPECT_THAT(r.reason, HasSubstr("2 of 3 samples"));
  spec.seq_len = 8192;
  auto pos = CheckSeqFit(spec, Summary({10}));
  EXPECT_EQ(pos.status, CheckStatus::kFail);
  EXPECT_THAT(pos.reason, HasSubstr("exceeds the model's max_position_embeddings 4096"));
}

TEST(Checks, TokenRange) {
  JobSpec spec = BaseSpec();
  auto s = Summary({10});
  s.dtype = dataset::TokenDtype{"uint16", 16, false, true};
  s.ids.Add(0);
  s.ids.Add(999);
  EXPECT_EQ(CheckTokenRange(spec, s).status, CheckStatus::kPass);
  s.ids.Add(1000);
  auto out = CheckTokenRange(spec, s);
  EXPECT_EQ(out.status, CheckStatus::kFail);
  EXPECT_THAT(out.reason, HasSubstr("token id 1000 is outside the model's vocabulary of 1000"));
  spec.model->vocab_size = 151936;
  auto narrow = CheckTokenRange(spec, s);
  EXPECT_EQ(narrow.status, CheckStatus::kFail);
  EXPECT_THAT(narrow.reason, HasSubstr("uint16 holds ids up to 65535"));
  spec.model->vocab_size.reset();
  EXPECT_EQ(CheckTokenRange(spec, Summary({1})).status, CheckStatus::kSkip);
}

TEST(Checks, PadEosAndTokenizerMatch) {
  JobSpec spec = BaseSpec();
  TokenizerFacts tok;
  tok.path = "tokenizer.json";
  tok.vocab_size = 1000;
  tok.eos_token = "</s>";
  tok.eos_id = 2;
  tok.pad_token = "<pad>";
  tok.pad_id = 0;
  auto s = Summary({10});
  s.ids.Add(5);
  EXPECT_EQ(CheckPadEos(spec, &tok).status, CheckStatus::kPass);
  EXPECT_EQ(CheckTokenizerMatch(spec, &tok, s).status, CheckStatus::kPass);
  EXPECT_EQ(CheckPadEos(spec, nullptr).status, CheckStatus::kSkip);

  TokenizerFacts same = tok;
  same.pad_token = "</s>";
  same.pad_id = 2;
  EXPECT_EQ(CheckPadEos(spec, &same).status, CheckStatus::kWarn);
  TokenizerFacts no_eos = tok;
  no_eos.eos_id.reset();
  EXPECT_EQ(CheckPadEos(spec, &no_eos).status, CheckStatus::kFail);
  TokenizerFacts outside = tok;
  outside.eos_id = 1500;
  EXPECT_EQ(CheckPadEos(spec, &outside).status, CheckStatus::kFail);

  TokenizerFacts big = tok;
  big.vocab_size = 1200;
  auto r = CheckTokenizerMatch(spec, &big, s);
  EXPECT_EQ(r.status, CheckStatus::kFail);
  EXPECT_THAT(r.reason, HasSubstr("1200 ids but the model's embedding has 1000 rows"));
  auto data_beyond = Summary({10});
  data_beyond.ids.Add(1000);
  TokenizerFacts small = tok;
  small.vocab_size = 900;
  EXPECT_EQ(CheckTokenizerMatch(spec, &small, data_beyond).status, CheckStatus::kFail);
}

TEST(Checks, ReadTokenizerFactsFromJsonAndConfig) {
  MemEnv env;
  env.AddFile("/t/tokenizer.json", R"({"added_tokens": [{"id": 5, "content": "<|endoftext|>"},
      {"id": 6, "content": "<|im_end|>"}], "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "c": 4}}})");
  auto facts = ReadTokenizerFacts(&env, "/t/tokenizer.json");
  ASSERT_TRUE(facts.ok()) << facts.status().message();
  EXPECT_EQ(facts->vocab_size, 7u);
  EXPECT_EQ(facts->eos_id, 5u);
  EXPECT_FALSE(facts->pad_id);
  env.AddFile("/t/tokenizer_config.json",
              R"({"eos_token": "<|im_end|>", "pad_token": {"content": "<|endoftext|>"}})");
  facts = ReadTokenizerFacts(&env, "/t/tokenizer.json");
  ASSERT_TRUE(facts.ok());
  EXPECT_EQ(facts->eos_id, 6u);
  EXPECT_EQ(facts->pad_id, 5u);
  EXPECT_EQ(facts->eos_source, "tokenizer_config.json");
}

// The vocabulary is decoded by the tokenizer's scanner, not a DOM parse: special tokens that live
// only in model.vocab (SentencePiece files) are still found, a config token that names a vocab
// entry gets its id, a Unigram array vocabulary counts by position, and a vocab entry that is not
// a non-negative integer is an error naming the file.
TEST(Checks, ReadTokenizerFactsFromVocabOnly) {
  MemEnv env;
  env.AddFile("/s/tokenizer.json",
              R"({"model": {"type": "BPE", "merges": [["a", "b"]], "vocab": {"<pad>": 0,
      "</s>": 2, "<s>": 1, "ab": 9}}, "added_tokens": []})");
  auto facts = ReadTokenizerFacts(&env, "/s/tokenizer.json");
  ASSERT_TRUE(facts.ok()) << facts.status().message();
  EXPECT_EQ(facts->vocab_size, 10u);
  EXPECT_EQ(facts->eos_token, "</s>");
  EXPECT_EQ(facts->eos_id, 2u);
  EXPECT_EQ(facts->pad_id, 0u);
  env.AddFile("/s/tokenizer_config.json", R"({"eos_token": "<s>", "pad_token": "<none>"})");
  facts = ReadTokenizerFacts(&env, "/s/tokenizer.json");
  ASSERT_TRUE(facts.ok());
  EXPECT_EQ(facts->eos_id, 1u);
  EXPECT_EQ(facts->pad_token, "<none>");
  EXPECT_FALSE(facts->pad_id);  // named by the config, absent from the vocabulary

  env.AddFile(
      "/u/tokenizer.json",
      R"({"model": {"type": "Unigram", "vocab": [["<unk>", 0.0], ["</s>", 0.0], ["x", -1.5]]}})");
  facts = ReadTokenizerFacts(&env, "/u/tokenizer.json");
  ASSERT_TRUE(facts.ok()) << facts.status().message();
  EXPECT_EQ(facts->vocab_size, 3u);
  EXPECT_EQ(facts->eos_id, 1u);

  env.AddFile("/b/tokenizer.json", R"({"model": {"type": "BPE", "vocab": {"a": "zero"}}})");
  facts = ReadTokenizerFacts(&env, "/b/tokenizer.json");
  ASSERT_FALSE(facts.ok());
  EXPECT_NE(facts.status().message().find("/b/tokenizer.json"), std::string::npos)
      << facts.status().message();
  env.AddFile("/e/tokenizer.json", R"({"model": {"type": "BPE", "vocab": {}}})");
  EXPECT_FALSE(ReadTokenizerFacts(&env, "/e/tokenizer.json").ok());
}

TEST(Checks, CkptSpace) {
  JobSpec spec = BaseSpec();
  EXPECT_EQ(CheckCkptSpace(spec, uint64_t{1} << 40).status,
            CheckStatus::kSkip);  // no checkpoint section
  spec.checkpoint = CheckpointSpec{"/ckpt", 16, 2};
  // 1e9 params x 16 B x 3 = 48 GB.
  EXPECT_EQ(CheckCkptSpace(spec, uint64_t{100} << 30).status, CheckStatus::kPass);
  EXPECT_EQ(CheckCkptSpace(spec, uint64_t{46} << 30).status, CheckStatus::kWarn);
  auto r = CheckCkptSpace(spec, uint64_t{10} << 30);
  EXPECT_EQ(r.status, CheckStatus::kFail);
  EXPECT_THAT(r.reason, HasSubstr("10.0 GiB free on /ckpt"));
}

TEST(Checks, EnvConsistency) {
  JobSpec spec = BaseSpec();
  auto a = ParseEnvDump(
      "PATH=/bin\nNCCL_IB_HCA=mlx5\nCUDA_VISIBLE_DEVICES=0,1\nTORCH_NCCL_ASYNC_ERROR_HANDLING=1\n");
  auto b = ParseEnvDump(
      "export "
      "PATH=/usr/"
      "bin\nNCCL_IB_HCA=mlx5\nCUDA_VISIBLE_DEVICES=0\nTORCH_NCCL_ASYNC_ERROR_HANDLING=1\n");
  EXPECT_EQ(CheckEnvConsistency(spec, {{"n0.env", a}, {"n1.env", b}}).status, CheckStatus::kPass);
  EXPECT_EQ(CheckEnvConsistency(spec, {{"n0.env", a}}).status, CheckStatus::kSkip);
  auto c = b;
  c["NCCL_IB_DISABLE"] = "1";
  auto r = CheckEnvConsistency(spec, {{"n0.env", a}, {"n1.env", c}});
  EXPECT_EQ(r.status, CheckStatus::kFail);
  EXPECT_THAT(r.reason, HasSubstr("NCCL_IB_DISABLE differs (n0.env=(unset), n1.env=1)"));
  spec.env_allowlist = {"NCCL_IB_DISABLE"};
  EXPECT_EQ(CheckEnvConsistency(spec, {{"n0.env", a}, {"n1.env", c}}).status, CheckStatus::kPass);
}

TEST(Checks, Topology) {
  JobSpec spec = BaseSpec();
  spec.nodes = 2;
  spec.gpus_per_node = 2;
  EXPECT_EQ(CheckTopology(spec).status, CheckStatus::kPass);
  spec.gpus_per_node = 8;
  auto r = CheckTopology(spec);
  EXPECT_EQ(r.status, CheckStatus::kFail);
  EXPECT_THAT(r.reason, HasSubstr("world_size 4 but nodes 2 x gpus_per_node 8 = 16"));
  spec.gpus_per_node = 2;
  spec.tp = 4;
  EXPECT_EQ(CheckTopology(spec).status, CheckStatus::kWarn);  // TP across nodes
  spec.tp = 3;
  EXPECT_EQ(CheckTopology(spec).status, CheckStatus::kFail);
}

TEST(Checks, PageCache) {
  JobSpec spec = BaseSpec();
  PageCacheFacts f;
  f.corpus_bytes = uint64_t{10} << 30;
  f.mem_total_bytes = uint64_t{2} << 40;
  f.resident_bytes = uint64_t{5} << 30;
  f.network_fs = "nfs";
  auto fits = CheckPageCache(spec, f);
  EXPECT_EQ(fits.status, CheckStatus::kPass);
  EXPECT_THAT(fits.reason, HasSubstr("fits in the page cache"));
  EXPECT_THAT(fits.reason, HasSubstr("50 % cached now"));
  f.corpus_bytes = uint64_t{4} << 40;
  auto big = CheckPageCache(spec, f);
  EXPECT_EQ(big.status, CheckStatus::kWarn);
  EXPECT_THAT(big.reason, HasSubstr("does not fit"));
  EXPECT_THAT(big.reason, HasSubstr("network file system"));
}

// The machine RunGate sees: in-memory files under a fixed 64 GiB machine with a local disk, each
// fact one EnvWrapper override.
class FixedMachine : public EnvWrapper {
 public:
  explicit FixedMachine(Env* files) : EnvWrapper(files) {}
  std::optional<uint64_t> mem_total_bytes = uint64_t{64} << 30;
  Result<MemInfo> ReadMemInfo() override {
    if (!mem_total_bytes) return Status::Unavailable("/proc/meminfo: cannot open");
    MemInfo m;
    m.total_bytes = mem_total_bytes;
    return m;
  }
  Result<uint64_t> FreeBytes(const std::string&) override { return uint64_t{1} << 40; }
  std::optional<std::string> NetworkFsType(const std::string&) override { return std::nullopt; }
};

const CheckResult& Find(const GateReport& report, const std::string& name) {
  for (const auto& c : report.checks) {
    if (c.name == name) return c;
  }
  static const CheckResult kMissing;
  ADD_FAILURE() << "no check " << name;
  return kMissing;
}

TEST(RunGate, PageCacheCheckTakesTheMachineFromTheEnv) {
  MemEnv files;
  auto [idx, bin] = MegatronBytes(SkewedLengths(), 8, 1000);
  files.AddFile("/d/c.idx", idx);
  files.AddFile("/d/c.bin", bin);
  FixedMachine env(&files);
  JobSpec spec = BaseSpec();
  auto report = RunGate(&env, spec, GateOptions{});
  ASSERT_TRUE(report.ok()) << report.status().message();
  const CheckResult& fits = Find(*report, "page_cache");
  EXPECT_EQ(fits.status, CheckStatus::kPass) << fits.reason;
  EXPECT_THAT(fits.reason, HasSubstr("of 64.0 GiB RAM, 100 % cached now"));

  env.mem_total_bytes = 1024;  // a corpus of a few KiB no longer fits
  report = RunGate(&env, spec, GateOptions{});
  ASSERT_TRUE(report.ok());
  const CheckResult& big = Find(*report, "page_cache");
  EXPECT_EQ(big.status, CheckStatus::kWarn) << big.reason;
  EXPECT_THAT(big.reason, HasSubstr("does not fit in the page cache of 1.0 KiB RAM"));

  env.mem_total_bytes.reset();  // /proc/meminfo unreadable: skipped, not guessed
  report = RunGate(&env, spec, GateOptions{});
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(Find(*report, "page_cache").status, CheckStatus::kSkip);
}

TEST(RunGate, EndToEndOnMemoryFiles) {
  MemEnv files;
  auto [idx, bin] = MegatronBytes(SkewedLengths(), 8, 1000);
  files.AddFile("/d/c.idx", idx);
  files.AddFile("/d/c.bin", bin);
  FixedMachine env(&files);
  JobSpec spec = BaseSpec();
  spec.packing = Packing::kGreedy;
  auto report = RunGate(&env, spec, GateOptions{});
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->overall, CheckStatus::kFail);
  EXPECT_EQ(GateExitCode(*report, false), 1);
  auto json = GateReportToJson(*report);
  EXPECT_EQ(json["status"], "fail");
  EXPECT_EQ(json["checks"][0]["name"], "steps_equal");
  EXPECT_EQ(json["checks"][0]["details"]["equalized_max_steps"], 3);
  const std::string text = FormatGateReport(spec, *report, false);
  EXPECT_THAT(text, HasSubstr("fix: add `max_steps: 3`"));
  EXPECT_THAT(text, HasSubstr("<- fewest"));

  spec.packing_scope = PackingScope::kGlobal;
  report = RunGate(&env, spec, GateOptions{});
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->checks[0].status, CheckStatus::kPass);

  files.AddFile("/d/c.idx", idx.substr(0, 30));
  auto broken = RunGate(&env, spec, GateOptions{});
  ASSERT_FALSE(broken.ok());
  EXPECT_THAT(broken.status().message(), HasSubstr("/d/c.idx"));
}

}  // namespace
}  // namespace ww::gate
