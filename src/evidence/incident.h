// The incident folder: one per hang, everything the on-call needs in one place.
//   INCIDENT.md            what, when, which ranks, why, what was done, in words
//   evidence.json          the report (culprits, notes, RAS verdict, FR reading)
//   triage.json            the triage JSON at confirmation
//   telemetry-10min.csv    the last 10 minutes as nvidia-smi CSV
//   pyspy/<name>.txt       py-spy dumps
//   events.jsonl           the events
//   ras/query1.<fmt>, ras/query2.<fmt>, ras/transcript.txt
//   fr/<dump file name>    the Flight Recorder dumps as written by the ranks; fr/reading.txt,
//                          fr/pokes.txt
// A slot the caller left empty is named in INCIDENT.md as "not provided", never left silent.
// Thread-safety: free functions; one writer per folder.
#pragma once

#include <string>

#include "core/status.h"
#include "evidence/evidence.h"

namespace ww::evidence {

// Creates `<root>/incident-<UTC time>-<pid>` (unique) and writes the files; returns its path.
Result<std::string> WriteIncidentFolder(const std::string& root, const HangContext& context,
                                        const EvidenceReport& report);

// INCIDENT.md's text (pure).
std::string RenderIncidentMarkdown(const HangContext& context, const EvidenceReport& report);

// `wattwatch incident DIR [--json]`: the summary again, from DIR/evidence.json.
Result<std::string> IncidentSummary(const std::string& dir, bool as_json);

}  // namespace ww::evidence
