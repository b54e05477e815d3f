#include "report/triage_run.h"

#include <fmt/format.h>

#include <cmath>

#include "triage/host_clock.h"
#include "triage/run.h"

namespace ww::report {
namespace {

Status RunPass(const TriageRunOptions& o, const std::map<std::string, double>& offsets,
               TriagePass* p) {
  p->inputs = o.open();
  if (!p->inputs.ok()) return p->inputs.status();
  auto shifted = triage::HostOffsetSource::Create(p->inputs->source.get(), offsets);
  if (!shifted.ok()) return shifted.status();
  p->shifted = std::move(*shifted);
  p->source = offsets.empty() ? p->inputs->source.get() : p->shifted.get();
  const auto& hosts = p->source->hosts();
  if (!o.labels.empty()) {
    p->labels_file = o.labels == "-" ? stdout : std::fopen(o.labels.c_str(), "w");
    if (!p->labels_file) return Status::IoError(o.labels + ": cannot write");
    p->labels = std::make_unique<LabelsCsvWriter>(p->labels_file, hosts, false);
    p->fanout.Add(p->labels.get());
  }
  // The HTML timeline: a decorator records power/util per time bucket, an observer the labels.
  p->timeline = std::make_unique<TimelineCollector>(o.triage.thresholds);
  p->recording = std::make_unique<RecordingSource>(p->source, p->timeline.get());
  if (o.timeline) p->fanout.Add(p->timeline.get());
  p->engine = std::make_unique<triage::TriageEngine>(o.triage, &p->fanout);
  Status st = o.timeline ? triage::RunToEnd(*p->recording, *p->engine)
                         : triage::RunToEnd(*p->source, *p->engine);
  // Released before the close: the pass outlives it (a second pass replaces it, which destroys
  // the writer).
  if (p->labels) p->labels->Release();
  if (p->labels_file && p->labels_file != stdout) std::fclose(p->labels_file);
  p->labels_file = nullptr;
  return st;
}

}  // namespace

Result<TriageRun> RunTriagePipeline(const TriageRunOptions& o) {
  TriageRun run;
  run.pass = std::make_unique<TriagePass>();
  WW_RETURN_IF_ERROR(RunPass(o, o.host_offsets_s, run.pass.get()));
  // A host clock that triage measured off by more than skew_warn_s is corrected by default, so
  // onsets and confirmations are on one clock (a second pass over files; standard input and
  // Prometheus are read once). --host-offset overrides.
  std::vector<std::string> corrected;
  if (!o.host_offsets_given && o.rereadable && o.labels != "-") {
    std::map<std::string, double> measured;
    const auto& hosts = run.pass->source->hosts();
    for (const triage::HostSkew& k : run.pass->engine->host_skews()) {
      if (std::abs(k.offset_s) <= o.triage.skew_warn_s || k.host >= hosts.size()) continue;
      measured[hosts[k.host]] = -k.offset_s;
      corrected.push_back(fmt::format(
          "{}'s clock read {:.1f} s {} {}'s ({} moments all GPUs changed together agree): "
          "corrected by {:+.1f} s (pass --host-offset {}=0 to keep it as logged)",
          hosts[k.host], std::abs(k.offset_s), k.offset_s > 0 ? "ahead of" : "behind", hosts[0],
          k.matches, -k.offset_s, hosts[k.host]));
    }
    if (!measured.empty()) {
      auto again = std::make_unique<TriagePass>();
      WW_RETURN_IF_ERROR(RunPass(o, measured, again.get()));
      run.pass = std::move(again);
    }
  }
  TelemetrySource* source = run.pass->source;
  run.report = MakeReport(*run.pass->engine, source->hosts(), source->warnings());
  for (const auto& c : corrected) run.report.notes.push_back(c);
  if (run.pass->inputs->renamed_hosts) {
    run.report.host_paths = run.pass->inputs->host_paths;
  }
  return run;
}

}  // namespace ww::report
