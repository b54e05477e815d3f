// FileSource: what every single-host file reader shares: the host name, GPU infos, warnings,
// the malformed-input budget (a fraction of records and a floor, as for the nvidia-smi CSV
// reader) and the per-GPU time order check (duplicate and out-of-order timestamps are documented
// skips). A reader implements ReadBatch(); Next() adds the end-of-file checks.
// Ownership: the source owns its LineReader. Thread-safety: one thread at a time.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "telemetry/ingest/text.h"
#include "telemetry/io/line_reader.h"
#include "telemetry/source.h"

namespace ww::ingest {

struct FileSourceLimits {
  double max_bad_fraction = 0.01;
  int64_t max_bad_floor = 20;
};

// The malformed-input budget every reader keeps: malformed records are documented skips up to a
// fraction of the records read and a floor, then the file is rejected. While reading, the
// fraction is of at least 1000 records, so a bad start does not reject a long file early; at the
// end, of the records read. `noun` names the records in the error ("rows", "records").
class MalformedBudget {
 public:
  MalformedBudget(FileSourceLimits limits, const char* noun) : limits_(limits), noun_(noun) {}

  // One more record read (a row, a scrape line): the denominator of the budget.
  void CountRecord() { ++records_; }
  // A record counted that turned out to be none (a cut-off last line).
  void UncountRecord() { --records_; }
  int64_t records() const { return records_; }
  // The first malformed record's message, if any.
  const std::optional<std::string>& first_bad() const { return first_bad_; }
  // One malformed record; an error naming `path` once over budget.
  Status Bad(const std::string& path, const std::string& message);
  // The same, warned as `kind` in *warnings.
  Status Bad(const std::string& path, Warnings* warnings, const std::string& kind,
             const std::string& message);
  // At the end of the file: an error naming `path` when over budget.
  Status Check(const std::string& path) const;
  // The end-of-file checks, once `emitted` samples were read from a file of `lines` lines: over
  // budget (Check), or no sample at all.
  Status Finish(const std::string& path, int64_t emitted, int64_t lines) const;

 private:
  FileSourceLimits limits_;
  const char* noun_;
  int64_t records_ = 0;
  int64_t bad_ = 0;
  std::optional<std::string> first_bad_;
};

// What a reader needs beyond the file: the sampling interval for formats without timestamps
// (dcgmi dmon rows, nvidia-smi tables without date lines, dcgm-exporter scrapes), --map
// overrides for home-made CSVs, and the malformed budget.
struct ReaderOptions {
  int64_t interval_ms = 0;                               // 0: the file must carry its own times
  std::vector<std::pair<std::string, std::string>> map;  // FIELD -> COLUMN (--map)
  // --wide METRIC: what the one-column-per-GPU columns that name no metric hold (`GPU 0`,
  // `gpu.3`): a --map FIELD name (power, util, memory_used, temperature, ...). Empty: unset.
  std::string wide_metric;
  // --split-id COLUMN: a column holding `<host>_<gpu>` (whitespace tables); empty: none.
  std::string split_id;
  // --year: the year of timestamps whose year the tool cut (hl-smi's "UTC 202"); 0: unset.
  int year = 0;
  FileSourceLimits limits;
};

// An opened file: the source, and what was recognized in words ("dcgmi dmon: fields POWER
// GPUTL ...", "custom CSV: time='ts' (epoch s), power='gpu_power_w' ..."), printed in the
// triage summary's header so a wrong guess is visible.
class FileSource;
struct OpenedFile {
  std::unique_ptr<TelemetrySource> source;
  std::string description;           // fixed at open (nvidia-smi CSV)
  const FileSource* file = nullptr;  // borrowed from source: describes itself once read
  std::string Describe() const;      // the best description now
};

// Reads lines until one that `wanted(line)` accepts: true with *line that line, false at the end
// of the file.
template <class Wanted>
Result<bool> NextLineWhere(LineReader& reader, std::string_view* line, Wanted wanted) {
  bool complete;
  for (;;) {
    auto r = reader.Next(line, &complete);
    if (!r.ok()) return r.status();
    if (!*r) return false;
    if (wanted(*line)) return true;
  }
}

class FileSource : public TelemetrySource {
 public:
  FileSource(std::unique_ptr<LineReader> reader, const std::string& host, uint16_t host_index,
             FileSourceLimits limits = {});

  Status Next(std::vector<GpuSample>* out) final;
  const std::vector<std::string>& hosts() const final { return hosts_; }
  std::vector<GpuInfo> gpus() const final;
  // "PATH: KIND (N times); example; ...", as the nvidia-smi reader words them.
  std::vector<std::string> warnings() const final;
  // Labels beyond GpuInfo (pod, namespace, container, hpc_job, hostname), per GPU.
  std::vector<GpuLabels> gpu_labels() const final;
  // What was recognized (format, fields, columns), in words; complete once the file was read.
  virtual std::string Describe() const = 0;

 protected:
  // Appends the next tick (one timestamp, every GPU read at it) to *out, through Accept(); sets
  // *at_end once the file is exhausted. Appending nothing without at_end (a tick whose samples
  // were all skipped) makes Next() ask again.
  virtual Status ReadBatch(std::vector<GpuSample>* out, bool* at_end) = 0;

  // One more record read (a row, a scrape line): the denominator of the malformed budget.
  void CountRecord() { budget_.CountRecord(); }
  // A malformed record: a documented skip while under budget, else an error naming the file.
  Status Bad(const std::string& kind, std::string message) {
    return budget_.Bad(path(), &warnings_, kind, message);
  }
  // A documented skip that does not count against the budget (other entity types, ...).
  void Skip(const std::string& kind, std::string message) {
    warnings_.Add(kind, std::move(message));
  }
  // Appends s to *out unless its GPU already had a sample at or after its time, or s is stamped
  // more than kMaxJumpMs after its GPU's last sample (else the file's newest) while the GPU's
  // next reading does not agree with it (a stray clock: a row stamped decades ahead). Skips
  // are warnings naming `line`.
  static constexpr int64_t kMaxJumpMs = 86'400'000;
  void Accept(const GpuSample& s, int64_t line, std::vector<GpuSample>* out);
  // Whether s is kept (in order, not far ahead of its GPU's last reading); counts the skips.
  bool Admit(const GpuSample& s, int64_t line);
  // Accept() for a whole tick (lines parallel to *tick): the samples that pass are moved to
  // *out (its buffer swapped with the tick's when out is empty); *tick is left empty.
  void AcceptTick(std::vector<GpuSample>* tick, const std::vector<int64_t>& lines,
                  std::vector<GpuSample>* out);
  GpuInfo& Info(uint16_t gpu);
  void SetLabel(uint16_t gpu, const std::string& key, const std::string& value);
  uint16_t host_index() const { return host_index_; }
  LineReader& reader() { return *reader_; }
  const std::string& path() const { return reader_->path(); }
  std::string Where(int64_t line) const;  // "PATH:LINE"

  Warnings warnings_;

 private:
  std::unique_ptr<LineReader> reader_;
  std::vector<std::string> hosts_;
  uint16_t host_index_;
  MalformedBudget budget_;
  int64_t emitted_ = 0;
  bool finished_ = false;
  // Per GPU index (a vector: Accept() runs once per sample, a map lookup there was a tenth of a
  // small-row CSV's reading time): the last accepted time, INT64_MIN before the first; whether
  // infos_ has the GPU yet.
  std::vector<int64_t> last_ms_;
  std::vector<bool> has_info_;
  std::vector<int64_t> jump_ms_;   // per GPU: the far-ahead reading skipped last, else INT64_MIN
  int64_t newest_ms_ = INT64_MIN;  // the newest sample taken, of any GPU
  std::map<uint16_t, GpuInfo> infos_;
  std::map<uint16_t, std::map<std::string, std::string>> labels_;
};

// The OpenedFile of a FileSource, which describes itself once read.
OpenedFile OpenedFileOf(std::unique_ptr<FileSource> source);
// The OpenedFile of a source described once, at open.
OpenedFile OpenedFileOf(std::unique_ptr<TelemetrySource> source, std::string description);
// Init() (the header read: an error names the file and line), then OpenedFileOf().
template <class Source>
Result<OpenedFile> InitAndOpen(std::unique_ptr<Source> source) {
  WW_RETURN_IF_ERROR(source->Init());
  return OpenedFileOf(std::unique_ptr<FileSource>(std::move(source)));
}
// Opens a FileSource built as `Source(lines, host, host_index, options)`, through its Init() when
// it has one: the open function of a reader's format row (`OpenLines<OpenFileSource<Source>>`).
template <class Source>
Result<OpenedFile> OpenFileSource(std::unique_ptr<LineReader> lines, const std::string& host,
                                  uint16_t host_index, const ReaderOptions& options) {
  auto source = std::make_unique<Source>(std::move(lines), host, host_index, options);
  if constexpr (requires { source->Init(); }) return InitAndOpen(std::move(source));
  return OpenedFileOf(std::unique_ptr<FileSource>(std::move(source)));
}

}  // namespace ww::ingest
