// The pre-launch gate: reads a job spec and its corpus, replays the data pipeline per rank and
// runs every check (steps_equal, nonempty, shard_balance, global_batch, seq_fit, token_range,
// pad_eos, tokenizer_match, ckpt_space, env_consistency, topology, page_cache).
// Each check is a pure function of the spec and what was read, so checks are table-tested;
// RunGate does the I/O through core's Env (files, free space, memory, page cache).
// Thread-safety: functions only; RunGate uses the env and clock it is given.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/env.h"
#include "core/status.h"
#include "dataset/sample_length_reader.h"
#include "gate/job_spec.h"
#include "gate/packing.h"

namespace ww::gate {

enum class CheckStatus { kPass, kWarn, kFail, kSkip };
std::string_view CheckStatusName(CheckStatus s);

struct CheckResult {
  std::string name;
  CheckStatus status = CheckStatus::kSkip;
  std::string reason;  // one line, with the numbers that decided it
  nlohmann::json details = nlohmann::json::object();
};

// What reading one data path cost (for the per-reader MB/s figures).
struct SourceRead {
  std::string path;
  std::string format;
  uint64_t samples = 0;
  uint64_t bytes_read = 0;
  double seconds = 0;
};

// The corpus as read: lengths in order, shard boundaries, files and token facts.
struct CorpusSummary {
  CorpusLengths corpus;
  std::vector<std::pair<std::string, uint64_t>> files;  // every file behind the paths, with sizes
  uint64_t total_tokens = 0;
  std::optional<dataset::TokenDtype> dtype;
  dataset::TokenIdRange ids;
  bool ids_complete = false;  // every id seen (text formats), not a sample
  std::vector<SourceRead> sources;
};

// What the gate knows about a tokenizer.json (read by tokjson::FindTokenIds; no encoder).
struct TokenizerFacts {
  std::string path;
  uint64_t vocab_size = 0;  // largest id + 1, added tokens included
  std::optional<std::string> eos_token, pad_token;
  std::optional<uint64_t> eos_id, pad_id;
  std::string eos_source, pad_source;  // where the token came from (tokenizer_config.json, guess)
};

// Parses tokenizer.json (and tokenizer_config.json next to it, when present).
Result<TokenizerFacts> ReadTokenizerFacts(Env* env, const std::string& tokenizer_json_path);

// `env` dump (KEY=VALUE lines) of one node.
using EnvDump = std::map<std::string, std::string>;
EnvDump ParseEnvDump(const std::string& text);

// Makes the encoder for text-jsonl; Unavailable when the tokenizer library is not built.
using TokenCounterFactory =
    Result<std::unique_ptr<dataset::TokenCounter>> (*)(const std::string& tokenizer_json_path);

struct GateOptions {
  Clock* clock = nullptr;  // for the read timings; SystemClock() when null
  uint64_t token_sample_bytes = uint64_t{1} << 20;
  TokenCounterFactory tokenizer_factory = nullptr;  // dataset::MakeTokenizerCounter when null
};

struct GateReport {
  std::vector<CheckResult> checks;
  CheckStatus overall = CheckStatus::kPass;  // worst of the checks (skip counts as pass)
  StepPlan plan;
  nlohmann::json summary = nlohmann::json::object();
};

// Reads every data path. Errors (missing or malformed data) are for exit code 2.
Result<CorpusSummary> ReadCorpus(Env* env, const JobSpec& spec, dataset::TokenCounter* tokenizer,
                                 const GateOptions& options);

BatchingConfig MakeBatchingConfig(const JobSpec& spec);

// The checks. Each returns pass / warn / fail / skip with a one-line reason.
CheckResult CheckStepsEqual(const JobSpec& spec, const StepPlan& plan);
CheckResult CheckNonEmpty(const JobSpec& spec, const StepPlan& plan, const CorpusSummary& corpus);
CheckResult CheckShardBalance(const JobSpec& spec, const StepPlan& plan);
CheckResult CheckGlobalBatch(const JobSpec& spec);
CheckResult CheckSeqFit(const JobSpec& spec, const CorpusSummary& corpus);
CheckResult CheckTokenRange(const JobSpec& spec, const CorpusSummary& corpus);
CheckResult CheckPadEos(const JobSpec& spec, const TokenizerFacts* tokenizer);
CheckResult CheckTokenizerMatch(const JobSpec& spec, const TokenizerFacts* tokenizer,
                                const CorpusSummary& corpus);
CheckResult CheckCkptSpace(const JobSpec& spec, std::optional<uint64_t> free_bytes);
CheckResult CheckEnvConsistency(const JobSpec& spec,
                                const std::vector<std::pair<std::string, EnvDump>>& dumps);
CheckResult CheckTopology(const JobSpec& spec);
struct PageCacheFacts {
  uint64_t corpus_bytes = 0;
  std::optional<uint64_t> mem_total_bytes;
  std::optional<uint64_t> resident_bytes;
  std::optional<std::string> network_fs;
};
CheckResult CheckPageCache(const JobSpec& spec, const PageCacheFacts& facts);

// Runs everything. Error Status only for a spec or data the gate cannot read (exit 2).
Result<GateReport> RunGate(Env* env, const JobSpec& spec, const GateOptions& options);

// Exit code for a report: 0 pass (warnings too unless strict), 1 any fail.
int GateExitCode(const GateReport& report, bool strict);

nlohmann::json GateReportToJson(const GateReport& report);
std::string FormatGateReport(const JobSpec& spec, const GateReport& report, bool strict);

// `wattwatch gate JOB.yaml`: the command's flags, which the CLI binds straight to these fields
// (so each default lives here, once).
struct GateCommandOptions {
  std::string spec_path;
  bool json = false;    // the report as GateReportToJson instead of the table
  bool strict = false;  // warnings fail too (exit 1)
  GateOptions gate;
};

// Loads the spec, runs the gate and renders the report into *out. Returns the exit code the
// report deserves (GateExitCode: 0 or 1); an error Status is a spec or data the gate cannot read
// (exit 2), its message naming the file and key.
Result<int> RunGateCommand(Env* env, const GateCommandOptions& options, std::string* out);

}  // namespace ww::gate
