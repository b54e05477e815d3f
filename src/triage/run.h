// Runs a telemetry source through a TriageEngine to its end: the offline `wattwatch triage` loop.
#pragma once

#include "core/status.h"
#include "telemetry/source.h"
#include "triage/engine.h"

namespace ww::triage {

// Feeds every sample of source into engine, then calls engine.Finish(). Returns the source's
// error, if any (the engine then holds the partial result).
Status RunToEnd(TelemetrySource& source, TriageEngine& engine);

}  // namespace ww::triage
