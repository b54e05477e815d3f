// One HTTP GET that a hostile or broken server cannot stretch: a total deadline over the whole
// exchange (connect, headers, body; a server sending one byte a second is cut at the deadline,
// not at read-timeout-per-byte) and a cap on the body, counted after decompression (a small gzip
// body that inflates to gigabytes is refused at the cap). Used by every HTTP client of wattwatch
// that reads a peer's body: the Prometheus API (fleet, `triage --prometheus`) and dcgm-exporter
// (`--source dcgm-exporter:`).
// Thread-safety: one call at a time per client; the call runs a watchdog thread that stops the
// client at the deadline.
#pragma once

#include <httplib.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/status.h"

namespace ww::ingest {

// The default body cap: far above any Prometheus answer wattwatch asks for (a query_range is
// split under 11,000 points per series) or a dcgm-exporter scrape (tens of KB per node).
inline constexpr size_t kDefaultMaxHttpBodyBytes = size_t{256} << 20;

struct HttpFetchLimits {
  int64_t total_timeout_ms = 60000;
  size_t max_body_bytes = kDefaultMaxHttpBodyBytes;
};

struct HttpFetched {
  int status = 0;
  std::string body;  // decompressed
};

// `what` names the peer in messages ("Prometheus at http://..."). kDeadlineExceeded when the
// whole answer did not come within total_timeout_ms; kInvalidInput when the body passes the cap
// (the transfer is stopped there); kUnavailable when no answer came (refused, reset, TLS).
Result<HttpFetched> BoundedGet(httplib::Client& client, const std::string& path,
                               const httplib::Params& params, const httplib::Headers& headers,
                               const HttpFetchLimits& limits, const std::string& what);

}  // namespace ww::ingest
