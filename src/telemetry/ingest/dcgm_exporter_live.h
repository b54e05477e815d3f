// A live source that scrapes a node's dcgm-exporter (`--source dcgm-exporter:URL` for watch and
// top) instead of opening NVML, so a node runs one NVML client, not two. Each Next() is one
// GET of URL (/metrics) with short timeouts (connect and read within call_deadline_ms, so a
// hung exporter cannot stall the watcher's tick), decoded by DcgmScrapeDecoder (the file
// reader's fields, units and labels), stamped with the Clock's time of the scrape.
// An exporter that does not answer (refused, timeout, HTTP error, a body without DCGM lines)
// yields one stale sample per known GPU (timestamp, no readings: never 0) and counts them in
// health().samples_stale; warnings() says when it stopped and started answering.
// Ownership: the caller owns the source; it borrows the Clock. Thread-safety: one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/clock.h"
#include "core/status.h"
#include "telemetry/source.h"

namespace ww::ingest {

struct DcgmExporterLiveOptions {
  std::string url;                 // http(s)://HOST:PORT[/PATH]; /metrics when no path
  std::string hostname;            // the host name; empty: the Hostname label, else the URL's host
  Clock* clock = nullptr;          // nullptr: SystemClock()
  int64_t call_deadline_ms = 500;  // the whole scrape, connect to last byte
  size_t max_body_bytes = size_t{256} << 20;  // after decompression (http_fetch.h)
};

// Scrapes once to learn the GPUs and the host; kUnavailable naming the URL and the error when
// the exporter does not answer then, kInvalidInput for a URL that is not one.
Result<std::unique_ptr<TelemetrySource>> OpenDcgmExporterLive(
    const DcgmExporterLiveOptions& options);

}  // namespace ww::ingest
