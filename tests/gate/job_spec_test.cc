// Job spec parsing: every key, defaults, and errors that name the file, line and key.
#include "gate/job_spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/env.h"

namespace ww::gate {
namespace {

using ::testing::HasSubstr;

const char* kFull = R"(world_size: 16
parallel: {tp: 1, pp: 1, cp: 1}
micro_batch_size: 1
grad_accum: 4
global_batch_size: 64
seq_len: 4096
epochs: 3
max_steps: 100
data:
  format: megatron
  paths: [data/train_text_document, /abs/other]
  tokenizer: tok/tokenizer.json
sharding: contiguous
packing: greedy
packing_scope: rank
drop_last: true
model: {params: 32.76e9, max_position_embeddings: 40960, vocab_size: 151936}
checkpoint: {dir: /ckpt, bytes_per_param: 16, keep: 2}
nodes_env: [node0.env, node1.env]
env_allowlist: [NCCL_SOCKET_IFNAME]
)";

TEST(JobSpec, ParsesEveryKey) {
  auto spec = ParseJobSpec(kFull, "/jobs/job.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->World(), 16u);
  EXPECT_EQ(spec->grad_accum, 4u);
  EXPECT_EQ(spec->global_batch_size, 64u);
  EXPECT_EQ(spec->seq_len, 4096u);
  EXPECT_EQ(spec->epochs, 3u);
  EXPECT_EQ(spec->max_steps, 100u);
  EXPECT_EQ(spec->data.format, dataset::DataFormat::kMegatron);
  ASSERT_EQ(spec->data.paths.size(), 2u);
  EXPECT_EQ(spec->data.paths[0], "/jobs/data/train_text_document");  // relative to the spec file
  EXPECT_EQ(spec->data.paths[1], "/abs/other");
  EXPECT_EQ(*spec->data.tokenizer, "/jobs/tok/tokenizer.json");
  EXPECT_EQ(spec->sharding, Sharding::kContiguous);
  EXPECT_EQ(spec->packing, Packing::kGreedy);
  EXPECT_EQ(spec->packing_scope, PackingScope::kRank);
  EXPECT_DOUBLE_EQ(*spec->model->params, 32.76e9);
  EXPECT_EQ(spec->model->vocab_size, 151936u);
  EXPECT_EQ(spec->checkpoint->keep, 2u);
  EXPECT_EQ(spec->nodes_env[1], "/jobs/node1.env");
  EXPECT_EQ(spec->env_allowlist[0], "NCCL_SOCKET_IFNAME");
}

TEST(JobSpec, NodesTimesGpusAndDefaults) {
  auto spec = ParseJobSpec(
      "nodes: 2\ngpus_per_node: 8\nmicro_batch_size: 1\ngrad_accum: 1\nseq_len: 128\n"
      "data: {format: jsonl, paths: x.jsonl}\n",
      "job.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->World(), 16u);
  EXPECT_EQ(spec->data.field, "input_ids");
  EXPECT_EQ(spec->sharding, Sharding::kStrided);
  EXPECT_EQ(spec->packing, Packing::kNone);
  EXPECT_TRUE(spec->drop_last);
  EXPECT_EQ(spec->epochs, 1u);
}

struct BadCase {
  std::string yaml;
  std::string message;
};

TEST(JobSpec, ErrorsNameFileLineAndKey) {
  const std::string base = "world_size: 16\nmicro_batch_size: 1\ngrad_accum: 4\nseq_len: 4096\n";
  const std::string data = "data: {format: megatron, paths: [x]}\n";
  const std::vector<BadCase> cases = {
      {base + data + "grad_acum: 2\n",
       "job.yaml:6: grad_acum: unknown key (did you mean 'grad_accum'?)"},
      {base + "data: {format: megatron, paths: [x], feild: ids}\n",
       "job.yaml:5: data.feild: unknown key"},
      {base + "data: {format: parquet, paths: [x]}\n",
       "data.format: 'parquet' is not one of megatron"},
      {base + "data: {paths: [x]}\n", "data.format: missing"},
      {base + "data: {format: jsonl}\n", "data.paths: missing"},
      {"micro_batch_size: 1\ngrad_accum: 4\nseq_len: 4096\n" + data, "world_size: missing"},
      {"world_size: 16\ngrad_accum: 4\nseq_len: 4096\n" + data, "micro_batch_size: missing"},
      {base + data + "packing: firstfit\n",
       "job.yaml:6: packing: 'firstfit' is not one of none|greedy|bfd"},
      {base + data + "epochs: two\n", "epochs: 'two' is not a whole number"},
      {base + data + "epochs: 0\n", "epochs: 0 is out of range"},
      {base + data + "drop_last: maybe\n", "drop_last: expected true or false"},
      {base + data + "parallel: {tp: 2, dp: 8}\n", "parallel.dp: unknown key"},
      {base + data + "model: {params: -1}\n", "model.params: '-1' is not a positive number"},
      {base + data + "checkpoint: {keep: 2}\n", "checkpoint.dir: missing"},
      {base + "data: {format: text-jsonl, paths: [x]}\n", "data.tokenizer: missing"},
      {base + data + "sharding: by_file\npacking: greedy\npacking_scope: global\n",
       "packing_scope: global packing cannot"},
      {"world_size: [16\n", "job.yaml:2: invalid YAML: end of sequence flow not found"},
      {"- 1\n- 2\n", "expected a YAML mapping"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.yaml);
    auto spec = ParseJobSpec(c.yaml, "job.yaml");
    ASSERT_FALSE(spec.ok());
    EXPECT_EQ(spec.status().code(), StatusCode::kInvalidInput);
    EXPECT_THAT(spec.status().message(), HasSubstr(c.message));
  }
}

TEST(JobSpec, DuplicateKeysAreErrorsNamingBothLines) {
  // yaml-cpp keeps the first of two equal keys, PyYAML (what training reads) the last: the gate
  // must not check one job while another runs.
  const std::string base = "world_size: 16\nmicro_batch_size: 1\ngrad_accum: 4\nseq_len: 4096\n";
  const std::string data = "data: {format: megatron, paths: [x]}\n";
  struct Case {
    std::string yaml;
    const char* message;
  } cases[] = {
      {base + data + "grad_accum: 8\n",
       "job.yaml:6: grad_accum: duplicate key, first given at line 3"},
      {base + "data:\n  format: megatron\n  paths: [x]\n  format: npy\n",
       "job.yaml:8: data.format: duplicate key, first given at line 6"},
      {base + "data: {format: megatron, paths: [x], paths: [y]}\n",
       "job.yaml:5: data.paths: duplicate key, first given at line 5"},
      {base + data + "model: {params: 1.0e9}\nmodel: {params: 2.0e9}\n",
       "job.yaml:7: model: duplicate key, first given at line 6"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.yaml);
    auto spec = ParseJobSpec(c.yaml, "job.yaml");
    ASSERT_FALSE(spec.ok()) << "a duplicate key was accepted";
    EXPECT_EQ(spec.status().code(), StatusCode::kInvalidInput);
    EXPECT_THAT(spec.status().message(), HasSubstr(c.message));
    EXPECT_THAT(spec.status().message(), HasSubstr("PyYAML"));
  }
  // The same spec without the duplicate parses.
  auto ok =
      ParseJobSpec(base + data + "checkpoint: {dir: /c}\nmodel: {params: 1.0e9}\n", "job.yaml");
  EXPECT_TRUE(ok.ok()) << ok.status().message();
}

TEST(JobSpec, ModelConfigFillsMissingFieldsAndEstimatesParams) {
  MemEnv env;
  // Qwen3-32B's shapes: the estimate should land on the report's 32.76e9.
  env.AddFile("/j/config.json",
              R"({"hidden_size": 5120, "num_hidden_layers": 64, "intermediate_size": 25600,
    "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936,
    "max_position_embeddings": 40960, "tie_word_embeddings": false})");
  env.AddFile("/j/job.yaml",
              "world_size: 16\nmicro_batch_size: 1\ngrad_accum: 4\nseq_len: 4096\n"
              "data: {format: megatron, paths: [x]}\nmodel: {config: config.json}\n");
  auto spec = LoadJobSpec(&env, "/j/job.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->model->vocab_size, 151936u);
  EXPECT_EQ(spec->model->max_position_embeddings, 40960u);
  ASSERT_TRUE(spec->model->params);
  EXPECT_TRUE(spec->model->params_estimated);
  EXPECT_NEAR(*spec->model->params / 1e9, 32.76, 0.05);

  env.AddFile("/j/bad.yaml",
              "world_size: 16\nmicro_batch_size: 1\ngrad_accum: 4\nseq_len: 4096\n"
              "data: {format: megatron, paths: [x]}\nmodel: {config: missing.json}\n");
  auto bad = LoadJobSpec(&env, "/j/bad.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("model.config"));
  EXPECT_THAT(bad.status().message(), HasSubstr("missing.json"));
}

}  // namespace
}  // namespace ww::gate
