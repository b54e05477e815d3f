// Reads Prometheus HTTP API responses holding DCGM series: /api/v1/query_range ("matrix") as
// `curl .../api/v1/query_range?query=... > incident.json` saves it, an instant query of a range
// vector (a DCGM field's series over `[5m]`, also a "matrix" of raw samples) or an instant
// vector.
// One or several documents back to back (one per metric, or `cat a.json b.json`), optionally
// gzip/zstd compressed. The same decoder serves `triage --prometheus URL` (prom_client.h), which
// fetches the responses itself.
// (https://prometheus.io/docs/prometheus/latest/querying/api/#range-queries)
//
// Series map to GPUs as the dcgm-exporter text reader maps them (DcgmScrapeDecoder: the same
// fields, units, plausible ranges and labels): one host per value of the host label (Hostname,
// else hostname, else instance; sorted), GPUs by `gpu` (else UUID). Points of all series of a
// host at one timestamp make one sample per GPU.
//
// Errors (InvalidInput, naming the input and the document): not JSON, a document that is not an
// API response, "status":"error" (with Prometheus's errorType and error), a resultType other
// than matrix/vector, no DCGM series at all. Documented skips (warnings): series without
// __name__ (the result of an expression), non-DCGM series, points that are not
// [unix_seconds, "value"], timestamps outside 1970..2200, duplicate timestamps (overlapping
// documents), out-of-order points (sorted), implausible values (the decoder's ranges; "+Inf"),
// a second series for one GPU and metric at one time, series without gpu/UUID labels, MIG
// instances, and the server's own "warnings" (partial data) as "server warning: ...".
// "NaN" is no reading (absent, never 0).
//
// Memory: a file's text while it is parsed (OpenPromJson frees it before Finish), then only the
// points (16 bytes each, about 2/3 of their text): the source decodes them into samples one
// timestamp per Next(), each series resolved to its GPU and field once. A document in the
// plain shape Prometheus writes is scanned by hand (json_scan.h); any other (escapes, wrong types,
// errors) goes through a JSON DOM, which names what is wrong.
// Ownership: the decoder owns what it parsed until Finish() moves it into the source.
// Thread-safety: one thread at a time.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "telemetry/ingest/dcgm_exporter.h"
#include "telemetry/ingest/file_source.h"
#include "telemetry/ingest/text.h"
#include "telemetry/source.h"

namespace ww::ingest {

// True when text (the first bytes of a file) starts like a Prometheus API response: a JSON
// object with a "status" key and a "resultType" or "errorType" key.
bool LooksLikePromJson(std::string_view text);

// One sample of a series, as read: 16 bytes (the document's text is not kept).
struct PromPoint {
  int64_t ts_ms;
  double value;
};

class PromJsonDecoder {
 public:
  // Parses every JSON document in text (whitespace between them). `where` names the input in
  // messages: a path, or "URL (query ...)".
  Status AddDocuments(std::string_view text, const std::string& where);

  // Builds the source. default_host names the host of series without a host label.
  // InvalidInput when no DCGM series with usable points were read.
  Result<std::unique_ptr<TelemetrySource>> Finish(const std::string& default_host);

  // The series labels kept per GPU (GpuLabels) beyond the host: DcgmScrapeDecoder's default
  // job mappings unless told (fleet's --job-label). Before Finish().
  void set_kept_labels(std::vector<std::string> names) { kept_labels_ = std::move(names); }

  // Number of DCGM series read so far (to tell "no series matched" from "no points").
  size_t dcgm_series() const { return series_.size(); }
  // Documents whose resultType was "vector" (an instant vector: one point per series). A reader
  // that asked for a range vector cannot use them (fleet counts such an answer as unusable).
  int64_t vector_documents() const { return vector_documents_; }
  // "prometheus-json: 16 series (POWER_USAGE GPU_UTIL ...), 2 hosts by Hostname, 1 s apart"
  std::string Describe() const { return description_; }
  Warnings& warnings() { return warnings_; }

 private:
  using Point = PromPoint;
  struct Series {
    std::string host;
    std::string line_prefix;  // `NAME{labels} ` as dcgm-exporter would print it
    std::string name;         // the DCGM field without DCGM_FI_, or another vendor's metric name
    std::string metric;       // the metric name as stored
    std::vector<Point> points;
    bool unsorted = false;
  };
  Status AddDocument(std::string_view doc, const std::string& where, int doc_index);
  // The fast path: a hand scan of the document at the start of text in the shape Prometheus
  // writes, points straight into the series. false, with the decoder as it was before, for anything
  // else (escapes, wrong types, errors, out-of-range values): the DOM path then reads the document
  // and names what is wrong. *used is the document's length in text.
  bool ScanDocument(std::string_view text, const std::string& at, size_t* used);
  // The series a result's `metric` object names, registered on first sight; -1 when it is a
  // documented skip (warned).
  int64_t SeriesFor(const nlohmann::json& metric, const std::string& at, size_t r);

  std::vector<Series> series_;
  std::unordered_map<std::string, size_t> series_index_;  // by host + line prefix
  std::map<std::string, int64_t> host_label_counts_;      // which label named the hosts
  Warnings warnings_;
  int64_t documents_ = 0;
  int64_t vector_documents_ = 0;
  std::string description_;
  std::vector<std::string> kept_labels_ = DcgmScrapeDecoder::DefaultKeptLabels();
};

// Opens a saved response file (--format prometheus-json) as one source with a host per host
// label value; series without one are host `host`.
Result<OpenedFile> OpenPromJson(std::unique_ptr<LineReader> reader, const std::string& host);

}  // namespace ww::ingest
