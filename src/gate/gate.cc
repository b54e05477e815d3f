#include "gate/gate.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <set>

#include "core/format.h"
#include "dataset/tokenizer_counter.h"
#include "tokenizer/json_scan.h"

namespace ww::gate {
namespace {

CheckResult Make(const char* name, CheckStatus status, std::string reason) {
  CheckResult r;
  r.name = name;
  r.status = status;
  r.reason = std::move(reason);
  return r;
}

uint32_t DataParallel(const JobSpec& spec) {
  const uint64_t model_parallel = uint64_t{spec.tp} * spec.pp * spec.cp;
  return model_parallel == 0 ? 0 : static_cast<uint32_t>(spec.World() / model_parallel);
}

}  // namespace

std::string_view CheckStatusName(CheckStatus s) {
  switch (s) {
    case CheckStatus::kPass:
      return "pass";
    case CheckStatus::kWarn:
      return "warn";
    case CheckStatus::kFail:
      return "fail";
    case CheckStatus::kSkip:
      return "skip";
  }
  return "?";
}

BatchingConfig MakeBatchingConfig(const JobSpec& spec) {
  BatchingConfig c;
  c.data_parallel = std::max<uint32_t>(1, DataParallel(spec));
  c.micro_batch_size = spec.micro_batch_size;
  c.grad_accum = spec.grad_accum;
  c.seq_len = spec.seq_len;
  c.sharding = spec.sharding;
  c.packing = spec.packing;
  c.scope = spec.packing_scope;
  c.drop_last = spec.drop_last;
  c.max_steps = spec.max_steps;
  return c;
}

Result<CorpusSummary> ReadCorpus(Env* env, const JobSpec& spec, dataset::TokenCounter* tokenizer,
                                 const GateOptions& options) {
  Clock* clock = options.clock ? options.clock : SystemClock();
  CorpusSummary out;
  dataset::ReaderOptions ro;
  ro.field = spec.data.field;
  ro.token_sample_bytes = options.token_sample_bytes;
  ro.tokenizer = tokenizer;
  ro.chunk_samples = size_t{1} << 18;
  out.ids_complete = spec.data.format == dataset::DataFormat::kJsonl ||
                     spec.data.format == dataset::DataFormat::kTextJsonl;
  for (const auto& path : spec.data.paths) {
    const int64_t start_ns = clock->NowMonotonicNs();
    auto reader = dataset::OpenSampleLengthReader(env, spec.data.format, path, ro);
    if (!reader.ok()) return reader.status();
    out.corpus.file_starts.push_back(out.corpus.lengths.size());
    const size_t before = out.corpus.lengths.size();
    WW_RETURN_IF_ERROR(dataset::ReadAllLengths(reader->get(), &out.corpus.lengths));
    SourceRead read;
    read.path = path;
    read.format = std::string(dataset::DataFormatName(spec.data.format));
    read.samples = out.corpus.lengths.size() - before;
    read.bytes_read = (*reader)->bytes_read();
    read.seconds = static_cast<double>(clock->NowMonotonicNs() - start_ns) / 1e9;
    out.sources.push_back(read);
    for (const auto& f : (*reader)->files()) out.files.push_back(f);
    out.ids.Merge((*reader)->token_ids());
    auto dtype = (*reader)->token_dtype();
    if (dtype && (!out.dtype || dtype->bits < out.dtype->bits))
      out.dtype = dtype;  // narrowest wins
  }
  for (uint32_t len : out.corpus.lengths) out.total_tokens += len;
  return out;
}

CheckResult CheckStepsEqual(const JobSpec& spec, const StepPlan& plan) {
  CheckResult r;
  nlohmann::json steps = nlohmann::json::array(), uncapped = nlohmann::json::array();
  for (const auto& rank : plan.ranks) {
    steps.push_back(rank.steps_run);
    uncapped.push_back(rank.steps);
  }
  r.details["steps_per_rank"] = steps;
  r.details["uncapped_steps_per_rank"] = uncapped;
  r.details["equalized_max_steps"] = plan.equalized_max_steps;
  r.details["epochs"] = spec.epochs;
  if (spec.max_steps) r.details["max_steps"] = *spec.max_steps;
  size_t min_rank = 0, max_rank = 0;
  for (size_t i = 0; i < plan.ranks.size(); ++i) {
    if (plan.ranks[i].steps_run < plan.ranks[min_rank].steps_run) min_rank = i;
    if (plan.ranks[i].steps_run > plan.ranks[max_rank].steps_run) max_rank = i;
  }
  r.name = "steps_equal";
  if (plan.steps_equal) {
    const uint64_t s = plan.ranks.empty() ? 0 : plan.ranks[0].steps_run;
    r.status = CheckStatus::kPass;
    r.reason = fmt::format("every rank runs {} optimizer steps per epoch ({} over {} epochs){}", s,
                           s * spec.epochs, spec.epochs,
                           spec.max_steps && plan.min_steps != plan.max_steps
                               ? fmt::format("; max_steps {} equalizes ranks that have {}..{}",
                                             *spec.max_steps, plan.min_steps, plan.max_steps)
                               : std::string());
    return r;
  }
  r.name = "steps_equal";
  r.status = CheckStatus::kFail;
  const auto& lo = plan.ranks[min_rank];
  const auto& hi = plan.ranks[max_rank];
  if (spec.max_steps) {
    r.reason = fmt::format(
        "max_steps {} is more than rank {} has ({} steps): it runs out of data while the others "
        "wait in a "
        "collective; set max_steps: {} (equalize to the minimum)",
        *spec.max_steps, min_rank, lo.steps, plan.equalized_max_steps);
  } else {
    r.reason = fmt::format(
        "ranks run {}..{} optimizer steps per epoch (rank {}: {}, rank {}: {}): rank {} finishes "
        "the epoch first "
        "and the others hang in their next collective; set max_steps: {} (equalize to the "
        "minimum){}",
        lo.steps, hi.steps, min_rank, lo.steps, max_rank, hi.steps, min_rank,
        plan.equalized_max_steps,
        spec.packing != Packing::kNone && spec.packing_scope == PackingScope::kRank
            ? ", or pack globally (packing_scope: global)"
            : "");
  }
  return r;
}

CheckResult CheckNonEmpty(const JobSpec& spec, const StepPlan& plan, const CorpusSummary& corpus) {
  nlohmann::json details;
  details["samples"] = corpus.corpus.lengths.size();
  details["tokens"] = corpus.total_tokens;
  if (corpus.corpus.lengths.empty() || corpus.total_tokens == 0) {
    CheckResult r = Make("nonempty", CheckStatus::kFail, "the corpus has no tokens");
    r.details = details;
    return r;
  }
  std::vector<size_t> empty;
  for (size_t i = 0; i < plan.ranks.size(); ++i) {
    if (plan.ranks[i].steps_run == 0) empty.push_back(i);
  }
  details["ranks_without_steps"] = empty;
  if (!empty.empty()) {
    const auto& r0 = plan.ranks[empty[0]];
    CheckResult r =
        Make("nonempty", CheckStatus::kFail,
             fmt::format("{} of {} ranks get no optimizer step (rank {}: {} samples, {} sequences; "
                         "a step needs {} micro-batches of {})",
                         empty.size(), plan.ranks.size(), empty[0], r0.samples, r0.bins,
                         spec.grad_accum, spec.micro_batch_size));
    r.details = details;
    return r;
  }
  uint64_t min_steps = UINT64_MAX;
  for (const auto& rank : plan.ranks) min_steps = std::min(min_steps, rank.steps_run);
  CheckResult r =
      Make("nonempty", CheckStatus::kPass,
           fmt::format("{} samples, {} tokens; every rank has at least {} optimizer steps",
                       corpus.corpus.lengths.size(), corpus.total_tokens, min_steps));
  r.details = details;
  return r;
}

CheckResult CheckShardBalance(const JobSpec& spec, const StepPlan& plan) {
  if (plan.ranks.empty()) return Make("shard_balance", CheckStatus::kSkip, "no ranks");
  uint64_t lo = UINT64_MAX, hi = 0;
  size_t lo_rank = 0, hi_rank = 0;
  double sum = 0;
  nlohmann::json tokens = nlohmann::json::array();
  for (size_t i = 0; i < plan.ranks.size(); ++i) {
    const uint64_t t = plan.ranks[i].tokens;
    tokens.push_back(t);
    sum += static_cast<double>(t);
    if (t < lo) lo = t, lo_rank = i;
    if (t > hi) hi = t, hi_rank = i;
  }
  const double mean = sum / static_cast<double>(plan.ranks.size());
  const double spread = mean > 0 ? static_cast<double>(hi - lo) / mean : 0;
  CheckResult r;
  r.name = "shard_balance";
  r.details["tokens_per_rank"] = tokens;
  r.details["spread_fraction"] = spread;
  r.details["warn_above"] = 0.05;
  r.details["fail_above"] = 0.25;
  const std::string numbers =
      fmt::format("tokens per rank {}..{} (rank {} / rank {}), spread {:.1f} % of the mean", lo, hi,
                  lo_rank, hi_rank, 100 * spread);
  if (spec.packing != Packing::kNone && spec.packing_scope == PackingScope::kGlobal) {
    r.status = CheckStatus::kPass;
    r.reason = fmt::format("globally packed: every rank gets {} sequences of {} tokens",
                           plan.ranks[0].bins, spec.seq_len);
  } else if (spread > 0.25) {
    r.status = CheckStatus::kFail;
    r.reason = numbers + ": the lightest rank idles at every step waiting for the heaviest";
  } else if (spread > 0.05) {
    r.status = CheckStatus::kWarn;
    r.reason = numbers;
  } else {
    r.status = CheckStatus::kPass;
    r.reason = numbers;
  }
  return r;
}

CheckResult CheckGlobalBatch(const JobSpec& spec) {
  const uint64_t world = spec.World();
  const uint64_t mp = uint64_t{spec.tp} * spec.pp * spec.cp;
  CheckResult r;
  r.name = "global_batch";
  r.details["world_size"] = world;
  r.details["model_parallel"] = mp;
  if (world % mp != 0) {
    r.status = CheckStatus::kFail;
    r.reason = fmt::format("world size {} is not divisible by tp*pp*cp = {}*{}*{} = {}", world,
                           spec.tp, spec.pp, spec.cp, mp);
    return r;
  }
  const uint64_t dp = world / mp;
  const uint64_t gbs = uint64_t{spec.micro_batch_size} * spec.grad_accum * dp;
  r.details["data_parallel"] = dp;
  r.details["computed_global_batch_size"] = gbs;
  const std::string formula =
      fmt::format("MBS {} x GA {} x DP {} = {}", spec.micro_batch_size, spec.grad_accum, dp, gbs);
  if (spec.global_batch_size && *spec.global_batch_size != gbs) {
    r.status = CheckStatus::kFail;
    r.reason = fmt::format("global_batch_size {} but {} (DP = world {} / (tp*pp*cp) {})",
                           *spec.global_batch_size, formula, world, mp);
    return r;
  }
  r.status = CheckStatus::kPass;
  r.reason = spec.global_batch_size
                 ? fmt::format("global_batch_size {} = {}", gbs, formula)
                 : fmt::format("global batch {} (global_batch_size not given)", formula);
  return r;
}

CheckResult CheckSeqFit(const JobSpec& spec, const CorpusSummary& corpus) {
  uint64_t truncated = 0, longest = 0;
  for (uint32_t len : corpus.corpus.lengths) {
    if (len > spec.seq_len) ++truncated;
    longest = std::max<uint64_t>(longest, len);
  }
  const uint64_t n = corpus.corpus.lengths.size();
  const double share = n ? static_cast<double>(truncated) / static_cast<double>(n) : 0;
  CheckResult r;
  r.name = "seq_fit";
  r.details["truncated_samples"] = truncated;
  r.details["truncated_fraction"] = share;
  r.details["longest_sample_tokens"] = longest;
  r.details["seq_len"] = spec.seq_len;
  const auto max_pos = spec.model ? spec.model->max_position_embeddings : std::nullopt;
  if (max_pos) r.details["max_position_embeddings"] = *max_pos;
  if (max_pos && spec.seq_len > *max_pos) {
    r.status = CheckStatus::kFail;
    r.reason = fmt::format("seq_len {} exceeds the model's max_position_embeddings {}",
                           spec.seq_len, *max_pos);
    return r;
  }
  const std::string trunc = fmt::format(
      "{} of {} samples ({:.2f} %) are longer than seq_len {} and get truncated "
      "(longest {})",
      truncated, n, 100 * share, spec.seq_len, longest);
  if (share > 0.05) {
    r.status = CheckStatus::kFail;
    r.reason = trunc;
  } else if (truncated > 0) {
    r.status = CheckStatus::kWarn;
    r.reason = trunc;
  } else {
    r.status = CheckStatus::kPass;
    r.reason =
        fmt::format("every sample fits seq_len {} (longest {}){}", spec.seq_len, longest,
                    max_pos ? fmt::format("; seq_len <= max_position_embeddings {}", *max_pos)
                            : std::string("; model.max_position_embeddings not given"));
  }
  return r;
}

CheckResult CheckTokenRange(const JobSpec& spec, const CorpusSummary& corpus) {
  CheckResult r;
  r.name = "token_range";
  const auto vocab = spec.model ? spec.model->vocab_size : std::nullopt;
  // Read through value_or: GCC 12 -O2 warns that vocab_ids "may be used uninitialized" otherwise.
  const uint64_t vocab_ids = vocab.value_or(0);
  const dataset::TokenIdRange& ids = corpus.ids;
  r.details["ids_seen"] = ids.ids_seen;
  r.details["ids_sampled"] = !corpus.ids_complete;
  if (ids.ids_seen) {
    r.details["min_id"] = ids.min_id;
    r.details["max_id"] = ids.max_id;
  }
  if (corpus.dtype) r.details["storage_dtype"] = corpus.dtype->name;
  if (vocab) r.details["vocab_size"] = vocab_ids;
  if (corpus.dtype && !corpus.dtype->is_integer) {
    r.status = CheckStatus::kFail;
    r.reason = fmt::format("token ids are stored as {}, not integers", corpus.dtype->name);
    return r;
  }
  if (corpus.dtype && vocab && corpus.dtype->max_id() < vocab_ids - 1) {
    r.status = CheckStatus::kFail;
    r.reason = fmt::format(
        "storage dtype {} holds ids up to {} but the vocabulary has {} ids: larger ids were "
        "wrapped when the data was written",
        corpus.dtype->name, corpus.dtype->max_id(), vocab_ids);
    return r;
  }
  if (ids.ids_seen && ids.min_id < 0) {
    r.status = CheckStatus::kFail;
    r.reason = fmt::format("negative token id {} in the data", ids.min_id);
    return r;
  }
  if (!vocab) {
    r.status = CheckStatus::kSkip;
    r.reason = "model.vocab_size not given";
    return r;
  }
  if (ids.ids_seen && static_cast<uint64_t>(ids.max_id) >= vocab_ids) {
    r.status = CheckStatus::kFail;
    r.reason = fmt::format(
        "token id {} is outside the model's vocabulary of {} (embedding lookup out of range)",
        ids.max_id, vocab_ids);
    return r;
  }
  r.status = CheckStatus::kPass;
  r.reason = ids.ids_seen
                 ? fmt::format("{} ids {} lie in 0..{}{}", ids.ids_seen,
                               corpus.ids_complete ? "(all)" : "(sampled)", vocab_ids - 1,
                               corpus.dtype
                                   ? fmt::format("; {} storage is wide enough", corpus.dtype->name)
                                   : std::string())
                 : fmt::format("{} storage is wide enough for {} ids (no ids sampled)",
                               corpus.dtype ? corpus.dtype->name : std::string("the"), vocab_ids);
  return r;
}

CheckResult CheckPadEos(const JobSpec& spec, const TokenizerFacts* tok) {
  if (!tok) return Make("pad_eos", CheckStatus::kSkip, "no data.tokenizer given");
  CheckResult r;
  r.name = "pad_eos";
  if (tok->eos_token) r.details["eos_token"] = *tok->eos_token;
  if (tok->eos_id) r.details["eos_id"] = *tok->eos_id;
  if (tok->pad_token) r.details["pad_token"] = *tok->pad_token;
  if (tok->pad_id) r.details["pad_id"] = *tok->pad_id;
  r.details["eos_source"] = tok->eos_source;
  r.details["pad_source"] = tok->pad_source;
  // A bool and a number, not an optional copy: GCC 12 -O2 reports a false maybe-uninitialized
  // on a copied std::optional here.
  const bool have_vocab = spec.model && spec.model->vocab_size.has_value();
  const uint64_t vocab_ids = have_vocab ? *spec.model->vocab_size : 0;
  if (!tok->eos_id) {
    r.status = CheckStatus::kFail;
    r.reason = tok->eos_token
                   ? fmt::format("eos token '{}' is not in {}", *tok->eos_token, tok->path)
                   : fmt::format("no eos token found in {} (or tokenizer_config.json)", tok->path);
    return r;
  }
  for (auto [what, id] : {std::pair{"eos", tok->eos_id}, std::pair{"pad", tok->pad_id}}) {
    if (id && have_vocab && *id >= vocab_ids) {
      r.status = CheckStatus::kFail;
      r.reason =
          fmt::format("{} id {} is outside the model's vocabulary of {}", what, *id, vocab_ids);
      return r;
    }
  }
  if (!tok->pad_id) {
    r.status = CheckStatus::kWarn;
    r.reason = fmt::format("no pad token: collators fall back to eos '{}' ({})", *tok->eos_token,
                           *tok->eos_id);
    return r;
  }
  if (*tok->pad_id == *tok->eos_id) {
    r.status = CheckStatus::kWarn;
    r.reason = fmt::format(
        "pad and eos are the same token '{}' ({}): masking pad in the loss also masks every eos, "
        "so the model does not learn to stop",
        *tok->eos_token, *tok->eos_id);
    return r;
  }
  r.status = CheckStatus::kPass;
  r.reason = fmt::format("eos '{}' ({}) and pad '{}' ({}) are distinct and inside the vocabulary",
                         *tok->eos_token, *tok->eos_id, *tok->pad_token, *tok->pad_id);
  return r;
}

CheckResult CheckTokenizerMatch(const JobSpec& spec, const TokenizerFacts* tok,
                                const CorpusSummary& corpus) {
  if (!tok) return Make("tokenizer_match", CheckStatus::kSkip, "no data.tokenizer given");
  CheckResult r;
  r.name = "tokenizer_match";
  r.details["tokenizer_vocab_size"] = tok->vocab_size;
  const auto vocab = spec.model ? spec.model->vocab_size : std::nullopt;
  if (vocab) r.details["model_vocab_size"] = *vocab;
  if (vocab && tok->vocab_size > *vocab) {
    r.status = CheckStatus::kFail;
    r.reason = fmt::format("the tokenizer has {} ids but the model's embedding has {} rows",
                           tok->vocab_size, *vocab);
    return r;
  }
  if (corpus.ids.ids_seen && corpus.ids.max_id >= 0 &&
      static_cast<uint64_t>(corpus.ids.max_id) >= tok->vocab_size) {
    r.status = CheckStatus::kFail;
    r.reason = fmt::format(
        "the data holds id {} but the tokenizer has only {} ids: it was tokenized with a "
        "different tokenizer",
        corpus.ids.max_id, tok->vocab_size);
    return r;
  }
  r.status = CheckStatus::kPass;
  r.reason = fmt::format(
      "tokenizer ids 0..{}{}{}", tok->vocab_size - 1,
      vocab ? fmt::format(" fit the model's {} embedding rows", *vocab) : std::string(),
      corpus.ids.ids_seen ? fmt::format("; data ids up to {}", corpus.ids.max_id) : std::string());
  return r;
}

CheckResult CheckCkptSpace(const JobSpec& spec, std::optional<uint64_t> free_bytes) {
  if (!spec.checkpoint) return Make("ckpt_space", CheckStatus::kSkip, "no checkpoint section");
  if (!spec.model || !spec.model->params) {
    return Make("ckpt_space", CheckStatus::kSkip,
                "model.params (or a model.config to estimate it) not given");
  }
  const auto& c = *spec.checkpoint;
  const double per_ckpt = *spec.model->params * c.bytes_per_param;
  const double need = per_ckpt * (c.keep + 1);  // `keep` old ones plus the one being written
  CheckResult r;
  r.name = "ckpt_space";
  r.details["dir"] = c.dir;
  r.details["params"] = *spec.model->params;
  r.details["params_estimated"] = spec.model->params_estimated;
  r.details["bytes_per_checkpoint"] = per_ckpt;
  r.details["bytes_needed"] = need;
  if (!free_bytes) {
    r.status = CheckStatus::kWarn;
    r.reason = fmt::format("cannot read free space for {}", c.dir);
    return r;
  }
  r.details["bytes_free"] = *free_bytes;
  const std::string numbers =
      fmt::format("{} free on {}; {:.3g} params x {} B x (keep {} + 1) = {}",
                  FormatBytes(static_cast<double>(*free_bytes)), c.dir, *spec.model->params,
                  c.bytes_per_param, c.keep, FormatBytes(need));
  if (static_cast<double>(*free_bytes) < need) {
    r.status = CheckStatus::kFail;
    r.reason =
        numbers + ": a save will fail part-way (often as a hang in the collective around it)";
  } else if (static_cast<double>(*free_bytes) < need * 1.25) {
    r.status = CheckStatus::kWarn;
    r.reason = numbers + " (less than 25 % headroom)";
  } else {
    r.status = CheckStatus::kPass;
    r.reason = numbers;
  }
  return r;
}

EnvDump ParseEnvDump(const std::string& text) {
  EnvDump out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.rfind("export ", 0) == 0) line = line.substr(7);
    const size_t eq = line.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    std::string key = line.substr(0, eq);
    if (key.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") !=
        std::string::npos) {
      continue;  // continuation of a multi-line value, not a variable
    }
    out[key] = line.substr(eq + 1);
  }
  return out;
}

CheckResult CheckEnvConsistency(const JobSpec& spec,
                                const std::vector<std::pair<std::string, EnvDump>>& dumps) {
  if (dumps.size() < 2) {
    return Make("env_consistency", CheckStatus::kSkip,
                dumps.empty() ? "no nodes_env dumps given" : "one node dump: nothing to compare");
  }
  std::set<std::string> allow = {"CUDA_VISIBLE_DEVICES", "NCCL_HOSTID"};
  allow.insert(spec.env_allowlist.begin(), spec.env_allowlist.end());
  auto relevant = [&](const std::string& k) {
    return (k.rfind("NCCL_", 0) == 0 || k.rfind("TORCH_NCCL_", 0) == 0 ||
            k.rfind("CUDA_", 0) == 0) &&
           !allow.count(k);
  };
  std::set<std::string> keys;
  for (const auto& [path, env] : dumps) {
    for (const auto& [k, v] : env) {
      if (relevant(k)) keys.insert(k);
    }
  }
  nlohmann::json diffs = nlohmann::json::array();
  std::string first;
  for (const auto& k : keys) {
    std::set<std::string> values;
    nlohmann::json per_node = nlohmann::json::object();
    for (const auto& [path, env] : dumps) {
      auto it = env.find(k);
      const std::string v = it == env.end() ? std::string("(unset)") : it->second;
      values.insert(v);
      per_node[std::filesystem::path(path).filename().string()] = v;
    }
    if (values.size() > 1) {
      diffs.push_back({{"variable", k}, {"values", per_node}});
      if (first.empty()) {
        for (const auto& [node, v] : per_node.items())
          first += fmt::format("{}{}={}", first.empty() ? "" : ", ", node, v.get<std::string>());
        first = fmt::format("{} differs ({})", k, first);
      }
    }
  }
  CheckResult r;
  r.name = "env_consistency";
  r.details["compared_variables"] = keys.size();
  r.details["differences"] = diffs;
  r.details["allowlist"] = std::vector<std::string>(allow.begin(), allow.end());
  if (!diffs.empty()) {
    r.status = CheckStatus::kFail;
    r.reason = fmt::format("{} NCCL/CUDA variable(s) differ across {} nodes: {}", diffs.size(),
                           dumps.size(), first);
  } else {
    r.status = CheckStatus::kPass;
    r.reason = fmt::format("{} NCCL_*/TORCH_NCCL_*/CUDA_* variables identical on {} nodes",
                           keys.size(), dumps.size());
  }
  return r;
}

CheckResult CheckTopology(const JobSpec& spec) {
  CheckResult r;
  r.name = "topology";
  const uint64_t world = spec.World();
  const uint64_t mp = uint64_t{spec.tp} * spec.pp * spec.cp;
  r.details = {{"world_size", world}, {"tp", spec.tp}, {"pp", spec.pp}, {"cp", spec.cp}};
  if (spec.nodes) r.details["nodes"] = *spec.nodes;
  if (spec.gpus_per_node) r.details["gpus_per_node"] = *spec.gpus_per_node;
  if (spec.world_size && spec.nodes && spec.gpus_per_node &&
      *spec.world_size != uint64_t{*spec.nodes} * *spec.gpus_per_node) {
    r.status = CheckStatus::kFail;
    r.reason =
        fmt::format("world_size {} but nodes {} x gpus_per_node {} = {}", *spec.world_size,
                    *spec.nodes, *spec.gpus_per_node, uint64_t{*spec.nodes} * *spec.gpus_per_node);
    return r;
  }
  if (world % mp != 0) {
    r.status = CheckStatus::kFail;
    r.reason = fmt::format("{} ranks cannot be split into tp {} x pp {} x cp {} groups", world,
                           spec.tp, spec.pp, spec.cp);
    return r;
  }
  if (spec.nodes && !spec.nodes_env.empty() && spec.nodes_env.size() != *spec.nodes) {
    r.status = CheckStatus::kWarn;
    r.reason = fmt::format("{} nodes but {} nodes_env dumps", *spec.nodes, spec.nodes_env.size());
    return r;
  }
  if (spec.gpus_per_node && (spec.tp > *spec.gpus_per_node || *spec.gpus_per_node % spec.tp != 0)) {
    r.status = CheckStatus::kWarn;
    r.reason = fmt::format(
        "tp {} does not fit inside a node of {} GPUs: tensor-parallel traffic crosses the network",
        spec.tp, *spec.gpus_per_node);
    return r;
  }
  r.status = CheckStatus::kPass;
  r.reason =
      fmt::format("{} ranks{} = DP {} x TP {} x PP {} x CP {}", world,
                  spec.nodes && spec.gpus_per_node
                      ? fmt::format(" ({} nodes x {} GPUs)", *spec.nodes, *spec.gpus_per_node)
                      : std::string(),
                  world / mp, spec.tp, spec.pp, spec.cp);
  return r;
}

CheckResult CheckPageCache(const JobSpec& spec, const PageCacheFacts& f) {
  CheckResult r;
  r.name = "page_cache";
  r.details["corpus_bytes"] = f.corpus_bytes;
  if (f.mem_total_bytes) r.details["mem_total_bytes"] = *f.mem_total_bytes;
  if (f.resident_bytes) r.details["resident_bytes"] = *f.resident_bytes;
  r.details["network_fs"] = f.network_fs ? nlohmann::json(*f.network_fs) : nlohmann::json(nullptr);
  if (!f.mem_total_bytes) {
    r.status = CheckStatus::kSkip;
    r.reason = "cannot read this machine's memory size";
    return r;
  }
  const double corpus = static_cast<double>(f.corpus_bytes);
  const double mem = static_cast<double>(*f.mem_total_bytes);
  // The kernel keeps some memory for the job itself; assume the cache can use about 80 %.
  const bool fits = corpus <= 0.8 * mem;
  r.details["fits"] = fits;
  const std::string where =
      f.network_fs ? fmt::format("on {}", *f.network_fs) : std::string("on local disk");
  const std::string resident =
      f.resident_bytes && f.corpus_bytes
          ? fmt::format(", {:.0f} % cached now",
                        100.0 * static_cast<double>(*f.resident_bytes) / corpus)
          : std::string();
  if (fits) {
    r.status = CheckStatus::kPass;
    r.reason = fmt::format(
        "corpus {} {} fits in the page cache of {} RAM{}: after the first epoch reads come from "
        "memory, so network storage is as fast as a local copy",
        FormatBytes(corpus), where, FormatBytes(mem), resident);
  } else {
    r.status = CheckStatus::kWarn;
    r.reason = fmt::format(
        "corpus {} {} does not fit in the page cache of {} RAM{}: every epoch re-reads it from "
        "storage{}; measure the loader's throughput before trusting 'network is as fast as local'",
        FormatBytes(corpus), where, FormatBytes(mem), resident,
        f.network_fs ? ", so the network file system bounds tokens/s" : "");
  }
  (void)spec;
  return r;
}

Result<TokenizerFacts> ReadTokenizerFacts(Env* env, const std::string& path) {
  auto text = env->ReadFileToString(path, uint64_t{256} << 20);
  if (!text.ok()) return text.status();
  // The gate reads this file on every run: model.vocab (most of a 33 MB Gemma-3 file) is decoded
  // by the tokenizer's scanner, and only the small rest of the document is DOM-parsed.
  auto big = tokjson::SplitBigMembers(*text, path);
  if (!big.ok()) return big.status();
  auto j = nlohmann::json::parse(big->rest, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object())
    return Status::InvalidInput(fmt::format("{}: not a tokenizer.json (not a JSON object)", path));
  TokenizerFacts facts;
  facts.path = path;

  // tokenizer_config.json names the special tokens; without it, guess from common spellings.
  const std::string config_path =
      (std::filesystem::path(path).parent_path() / "tokenizer_config.json").string();
  auto token_name = [](const nlohmann::json& v) -> std::optional<std::string> {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_object() && v.contains("content") && v["content"].is_string())
      return v["content"].get<std::string>();
    return std::nullopt;
  };
  if (env->FileExists(config_path)) {
    auto config_text = env->ReadFileToString(config_path, uint64_t{64} << 20);
    if (config_text.ok()) {
      auto c = nlohmann::json::parse(*config_text, nullptr, false);
      if (c.is_object()) {
        if (c.contains("eos_token")) {
          facts.eos_token = token_name(c["eos_token"]);
          facts.eos_source = "tokenizer_config.json";
        }
        if (c.contains("pad_token")) {
          facts.pad_token = token_name(c["pad_token"]);
          facts.pad_source = "tokenizer_config.json";
        }
      }
    }
  }
  static constexpr std::array<std::string_view, 6> kEosGuesses = {
      "<|endoftext|>", "</s>", "<|end_of_text|>", "<eos>", "<|im_end|>", "[SEP]"};
  static constexpr std::array<std::string_view, 4> kPadGuesses = {"<pad>", "<|pad|>", "[PAD]",
                                                                  "<|finetune_right_pad_id|>"};
  // Only the ids of the tokens the checks may name are kept, not the whole vocabulary. The
  // first id seen for a token wins (added tokens before the model's vocabulary), as before.
  std::map<std::string, uint64_t, std::less<>> wanted;
  auto want = [&](std::string_view name) { wanted.emplace(std::string(name), UINT64_MAX); };
  if (facts.eos_token) want(*facts.eos_token);
  if (facts.pad_token) want(*facts.pad_token);
  for (auto n : kEosGuesses) want(n);
  for (auto n : kPadGuesses) want(n);
  uint64_t max_id_plus_one = 0;
  auto note = [&](std::string_view token, uint64_t id) {
    if (auto it = wanted.find(token); it != wanted.end() && it->second == UINT64_MAX)
      it->second = id;
    max_id_plus_one = std::max(max_id_plus_one, id + 1);
  };
  if (auto it = j.find("added_tokens"); it != j.end() && it->is_array()) {
    for (const auto& t : *it) {
      if (t.is_object() && t.contains("content") && t["content"].is_string() && t.contains("id") &&
          t["id"].is_number_unsigned()) {
        note(t["content"].get_ref<const std::string&>(), t["id"].get<uint64_t>());
      }
    }
  }
  if (!big->vocab.empty()) {
    Status st = tokjson::ParseVocab(big->vocab, path,
                                    [&](const std::string& tok, uint64_t id) { note(tok, id); });
    if (!st.ok()) return st;
  } else if (auto m = j.find("model"); m != j.end() && m->is_object()) {
    // Unigram: [[piece, score], ...], id = position (an array the scanner leaves in the rest).
    if (auto v = m->find("vocab"); v != m->end() && v->is_array()) {
      for (size_t i = 0; i < v->size(); ++i) {
        if ((*v)[i].is_array() && !(*v)[i].empty() && (*v)[i][0].is_string())
          note((*v)[i][0].get_ref<const std::string&>(), i);
      }
    }
  }
  if (max_id_plus_one == 0)
    return Status::InvalidInput(fmt::format("{}: no vocabulary (model.vocab) found", path));
  facts.vocab_size = max_id_plus_one;
  auto known = [&](std::string_view name) {
    auto it = wanted.find(name);
    return it != wanted.end() && it->second != UINT64_MAX;
  };
  auto guess = [&](auto names) -> std::optional<std::string> {
    for (auto n : names) {
      if (known(n)) return std::string(n);
    }
    return std::nullopt;
  };
  if (!facts.eos_token) {
    facts.eos_token = guess(kEosGuesses);
    facts.eos_source = "guessed from tokenizer.json";
  }
  if (!facts.pad_token) {
    facts.pad_token = guess(kPadGuesses);
    facts.pad_source = "guessed from tokenizer.json";
  }
  if (facts.eos_token && known(*facts.eos_token))
    facts.eos_id = wanted.find(*facts.eos_token)->second;
  if (facts.pad_token && known(*facts.pad_token))
    facts.pad_id = wanted.find(*facts.pad_token)->second;
  return facts;
}

Result<GateReport> RunGate(Env* env, const JobSpec& spec, const GateOptions& options) {
  GateReport report;
  std::optional<TokenizerFacts> tok;
  if (spec.data.tokenizer) {
    auto facts = ReadTokenizerFacts(env, *spec.data.tokenizer);
    if (!facts.ok()) {
      return Status::InvalidInput(
          fmt::format("{}: data.tokenizer: {}", spec.spec_path, facts.status().message()));
    }
    tok = std::move(*facts);
  }
  std::unique_ptr<dataset::TokenCounter> counter;
  if (spec.data.format == dataset::DataFormat::kTextJsonl) {
    auto factory =
        options.tokenizer_factory ? options.tokenizer_factory : &dataset::MakeTokenizerCounter;
    auto made = factory(*spec.data.tokenizer);
    if (!made.ok()) return made.status();
    counter = std::move(*made);
  }
  auto corpus = ReadCorpus(env, spec, counter.get(), options);
  if (!corpus.ok()) return corpus.status();
  auto plan = PlanSteps(corpus->corpus, MakeBatchingConfig(spec));
  if (!plan.ok())
    return Status::InvalidInput(fmt::format("{}: {}", spec.spec_path, plan.status().message()));
  report.plan = *plan;

  std::optional<uint64_t> free_bytes;
  if (spec.checkpoint) {
    auto f = env->FreeBytes(spec.checkpoint->dir);
    if (f.ok()) free_bytes = *f;
  }
  std::vector<std::pair<std::string, EnvDump>> dumps;
  for (const auto& path : spec.nodes_env) {
    auto text = env->ReadFileToString(path, uint64_t{16} << 20);
    if (!text.ok())
      return Status::InvalidInput(
          fmt::format("{}: nodes_env: {}", spec.spec_path, text.status().message()));
    dumps.emplace_back(path, ParseEnvDump(*text));
  }
  PageCacheFacts pc;
  uint64_t resident = 0;
  bool resident_ok = true;
  for (const auto& [path, size] : corpus->files) {
    pc.corpus_bytes += size;
    auto res = env->ResidentBytes(path);
    if (res.ok())
      resident += *res;
    else
      resident_ok = false;
  }
  if (resident_ok) pc.resident_bytes = resident;
  if (auto mem = env->ReadMemInfo(); mem.ok()) pc.mem_total_bytes = mem->total_bytes;
  if (!spec.data.paths.empty())
    pc.network_fs =
        env->NetworkFsType(corpus->files.empty() ? spec.data.paths[0] : corpus->files[0].first);

  const TokenizerFacts* tp = tok ? &*tok : nullptr;
  report.checks = {CheckStepsEqual(spec, *plan),
                   CheckNonEmpty(spec, *plan, *corpus),
                   CheckShardBalance(spec, *plan),
                   CheckGlobalBatch(spec),
                   CheckSeqFit(spec, *corpus),
                   CheckTokenRange(spec, *corpus),
                   CheckPadEos(spec, tp),
                   CheckTokenizerMatch(spec, tp, *corpus),
                   CheckCkptSpace(spec, free_bytes),
                   CheckEnvConsistency(spec, dumps),
                   CheckTopology(spec),
                   CheckPageCache(spec, pc)};
  // The per-rank table belongs to steps_equal.
  nlohmann::json table = nlohmann::json::array();
  for (size_t i = 0; i < plan->ranks.size(); ++i) {
    const auto& r = plan->ranks[i];
    table.push_back({{"rank", i},
                     {"samples", r.samples},
                     {"tokens", r.tokens},
                     {"sequences", r.bins},
                     {"micro_batches", r.micro_batches},
                     {"steps", r.steps},
                     {"steps_run", r.steps_run}});
  }
  report.checks[0].details["per_rank"] = table;

  report.overall = CheckStatus::kPass;
  for (const auto& c : report.checks) {
    if (c.status == CheckStatus::kFail) report.overall = CheckStatus::kFail;
    if (c.status == CheckStatus::kWarn && report.overall == CheckStatus::kPass)
      report.overall = CheckStatus::kWarn;
  }
  nlohmann::json sources = nlohmann::json::array();
  for (const auto& s : corpus->sources) {
    sources.push_back(
        {{"path", s.path},
         {"format", s.format},
         {"samples", s.samples},
         {"bytes_read", s.bytes_read},
         {"seconds", s.seconds},
         {"mb_per_s", s.seconds > 0 ? static_cast<double>(s.bytes_read) / 1e6 / s.seconds : 0.0}});
  }
  report.summary = {{"world_size", spec.World()},
                    {"data_parallel", MakeBatchingConfig(spec).data_parallel},
                    {"samples", corpus->corpus.lengths.size()},
                    {"tokens", corpus->total_tokens},
                    {"corpus_bytes", pc.corpus_bytes},
                    {"sources", sources}};
  return report;
}

int GateExitCode(const GateReport& report, bool strict) {
  if (report.overall == CheckStatus::kFail) return 1;
  if (strict && report.overall == CheckStatus::kWarn) return 1;
  return 0;
}

nlohmann::json GateReportToJson(const GateReport& report) {
  nlohmann::json out;
  out["status"] = std::string(CheckStatusName(report.overall));
  nlohmann::json checks = nlohmann::json::array();
  for (const auto& c : report.checks) {
    checks.push_back({{"name", c.name},
                      {"status", std::string(CheckStatusName(c.status))},
                      {"reason", c.reason},
                      {"details", c.details}});
  }
  out["checks"] = checks;
  out["summary"] = report.summary;
  return out;
}

std::string FormatGateReport(const JobSpec& spec, const GateReport& report, bool strict) {
  std::string out;
  const auto& s = report.summary;
  out += fmt::format(
      "wattwatch gate {}: {} ranks (DP {}), {} samples, {} tokens, packing {} ({} scope), "
      "sharding {}\n\n",
      spec.spec_path, spec.World(), s.value("data_parallel", 0u), s.value("samples", uint64_t{0}),
      s.value("tokens", uint64_t{0}), PackingName(spec.packing),
      PackingScopeName(spec.packing_scope), ShardingName(spec.sharding));
  out += fmt::format("{:<16} {:<6} {}\n", "CHECK", "STATUS", "REASON");
  for (const auto& c : report.checks) {
    std::string status(CheckStatusName(c.status));
    for (auto& ch : status) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    out += fmt::format("{:<16} {:<6} {}\n", c.name, status, c.reason);
  }
  const auto& steps = report.checks.empty() ? CheckResult{} : report.checks[0];
  if (steps.status == CheckStatus::kFail && !report.plan.ranks.empty()) {
    out += "\nsteps per rank per epoch (the job hangs at the epoch end when these differ):\n";
    out += fmt::format("{:>6} {:>10} {:>14} {:>10} {:>13} {:>7}\n", "rank", "samples", "tokens",
                       "sequences", "micro_batches", "steps");
    for (size_t i = 0; i < report.plan.ranks.size(); ++i) {
      const auto& r = report.plan.ranks[i];
      out += fmt::format("{:>6} {:>10} {:>14} {:>10} {:>13} {:>7}{}\n", i, r.samples, r.tokens,
                         r.bins, r.micro_batches, r.steps,
                         r.steps == report.plan.min_steps ? "  <- fewest" : "");
    }
    out += fmt::format(
        "\nfix: add `max_steps: {}` to the job (every rank stops after the smallest rank's step "
        "count; FSDP/ZeRO-3 cannot use Join){}\n",
        report.plan.equalized_max_steps,
        spec.packing != Packing::kNone && spec.packing_scope == PackingScope::kRank
            ? ", or pack the corpus globally before sharding (packing_scope: global)"
            : "");
  }
  const int code = GateExitCode(report, strict);
  out += fmt::format("\nresult: {} (exit {})\n", CheckStatusName(report.overall), code);
  return out;
}

Result<int> RunGateCommand(Env* env, const GateCommandOptions& options, std::string* out) {
  auto spec = LoadJobSpec(env, options.spec_path);
  if (!spec.ok()) return spec.status();
  auto report = RunGate(env, *spec, options.gate);
  if (!report.ok()) return report.status();
  *out = options.json ? GateReportToJson(*report).dump(2) + "\n"
                      : FormatGateReport(*spec, *report, options.strict);
  return GateExitCode(*report, options.strict);
}

}  // namespace ww::gate
