// The twelve checks of the gate (gate.h lists them): each a pure function of the spec and what was
// read, returning pass / warn / fail / skip with a one-line reason and its numbers in details.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "core/format.h"
#include "gate/gate.h"

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

}  // namespace ww::gate
