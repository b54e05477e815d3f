// Runs the gate: reads the tokenizer facts, the corpus (timed per source), free space, the node
// env dumps and page-cache facts through Env, runs the checks (checks.cc) and, for the command,
// renders the report (render.cc).
#include "gate/gate.h"

#include <fmt/format.h>

#include <memory>
#include <optional>

#include "dataset/tokenizer_counter.h"

namespace ww::gate {

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
