// The offline triage behind `wattwatch triage`, without its flags and printing: opens the inputs,
// runs them through a TriageEngine (the labels CSV and the HTML timeline observe it on the way),
// runs them again with a host clock it measured off corrected (when the inputs can be read twice
// and no --host-offset was given), and collects the report. Errors are values: the command prints
// the message once.
//
// Ownership: TriageRun owns the pass (engine, sources, observers) its report and timeline came
// from. Thread-safety: one thread.
#pragma once

#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "report/html_report.h"
#include "report/labels_writer.h"
#include "report/triage_report.h"
#include "telemetry/ingest/open.h"
#include "triage/engine.h"
#include "triage/options.h"

namespace ww::report {

struct TriageRunOptions {
  // Opens the inputs for one pass (files, or a Prometheus range); asked again for a second pass.
  std::function<Result<OpenedInputs>()> open;
  // The inputs can be read twice (no standard input, no Prometheus): a host clock measured off by
  // more than skew_warn_s is then corrected by a second pass.
  bool rereadable = false;
  std::map<std::string, double> host_offsets_s;  // --host-offset; given: nothing is measured
  bool host_offsets_given = false;
  std::string labels;     // the labels CSV: a path, "-" standard output, "" none
  bool timeline = false;  // record power/util per time bucket for the HTML report
  triage::TriageOptions triage;
};

// One pass over the inputs with its host offsets: its engine, observers and sources.
struct TriagePass {
  Result<OpenedInputs> inputs = Status::Internal("not opened");
  std::unique_ptr<TelemetrySource> shifted;
  TelemetrySource* source = nullptr;
  ObserverFanout fanout;
  std::FILE* labels_file = nullptr;
  std::unique_ptr<LabelsCsvWriter> labels;
  std::unique_ptr<TimelineCollector> timeline;
  std::unique_ptr<RecordingSource> recording;
  std::unique_ptr<triage::TriageEngine> engine;
};

struct TriageRun {
  std::unique_ptr<TriagePass> pass;  // the pass the report is of
  TriageReport report;
  const OpenedInputs& inputs() const { return *pass->inputs; }
  const TimelineCollector& timeline() const { return *pass->timeline; }
};

Result<TriageRun> RunTriagePipeline(const TriageRunOptions& options);

}  // namespace ww::report
