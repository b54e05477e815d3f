// The gate's job spec (JOB.yaml): what the launcher will run, described well enough to replay
// its data pipeline. docs/gate.md documents every key. Unknown keys are errors naming the key,
// so a typo ("grad_acum") cannot silently fall back to a default.
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/env.h"
#include "core/status.h"
#include "dataset/sample_length_reader.h"
#include "gate/packing.h"

namespace ww::gate {

struct DataSpec {
  dataset::DataFormat format = dataset::DataFormat::kMegatron;
  std::vector<std::string> paths;  // resolved against the spec file's directory
  std::string field = "input_ids";
  std::optional<std::string> tokenizer;  // tokenizer.json (resolved)
};

struct ModelSpec {
  std::optional<double> params;
  std::optional<uint64_t> max_position_embeddings;
  std::optional<uint64_t> vocab_size;
  std::optional<std::string> config;  // HF config.json (resolved)
  bool params_estimated = false;      // params computed from config.json's shapes
};

struct CheckpointSpec {
  std::string dir;
  double bytes_per_param = 16;  // fp32 master + Adam moments + bf16 weights, mixed precision
  uint32_t keep = 1;
};

struct JobSpec {
  std::string spec_path;
  std::optional<uint32_t> world_size;
  std::optional<uint32_t> nodes, gpus_per_node;
  uint32_t tp = 1, pp = 1, cp = 1;
  uint32_t micro_batch_size = 1;
  uint32_t grad_accum = 1;
  std::optional<uint64_t> global_batch_size;
  uint32_t seq_len = 0;
  uint32_t epochs = 1;
  std::optional<uint64_t> max_steps;
  DataSpec data;
  Sharding sharding = Sharding::kStrided;
  Packing packing = Packing::kNone;
  PackingScope packing_scope = PackingScope::kRank;
  bool drop_last = true;
  std::optional<ModelSpec> model;
  std::optional<CheckpointSpec> checkpoint;
  std::vector<std::string> nodes_env;      // resolved
  std::vector<std::string> env_allowlist;  // extra variables allowed to differ across nodes

  // world_size, or nodes * gpus_per_node.
  uint32_t World() const;
};

// Parses YAML text. `spec_path` names the file in messages and anchors relative paths.
// Errors are InvalidInput "FILE:LINE: KEY: what is wrong".
Result<JobSpec> ParseJobSpec(const std::string& yaml_text, const std::string& spec_path);

// Reads the spec file and, when model.config is given, fills the model fields it lacks from
// the HF config.json (estimating params from its shapes when params is absent).
Result<JobSpec> LoadJobSpec(Env* env, const std::string& spec_path);

// Parameter count of a decoder-only transformer from an HF config.json's fields
// (hidden_size, num_hidden_layers, intermediate_size, heads, kv heads, vocab, tied embeddings);
// nullopt when the fields are missing.
std::optional<double> EstimateParamsFromConfig(const std::string& config_json_text);

}  // namespace ww::gate
