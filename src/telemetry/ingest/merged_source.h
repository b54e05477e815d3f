// Several telemetry files read as one fleet: each file is one host (named after its file), and
// their sources are merged into one stream ordered by tick time. Used for every format.
// Ownership: the merged source owns its parts. Thread-safety: one thread at a time.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "telemetry/source.h"

namespace ww {

// Merges several single-host sources (one host each, host index = position) into one stream
// ordered by tick time.
std::unique_ptr<TelemetrySource> MergeSources(std::vector<std::unique_ptr<TelemetrySource>> parts);

// Host name for a log path: the file name without directory and extension.
std::string HostNameFromPath(const std::string& path);

}  // namespace ww
