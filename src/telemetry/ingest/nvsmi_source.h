// The nvidia-smi reader's source (internal to nvsmi_*.cc; the interface is nvsmi_log.h): one log
// file read row by row into ticks. Its work is split by stage, one file each:
//   nvsmi_log.cc    the header (columns, --query), warnings, opening, the format row;
//   nvsmi_rows.cc   one line to one parsed Row: CSV/dmon splitting, fields, timestamps, clock
//                   steps, malformed rows;
//   nvsmi_ticks.cc  Rows to GPUs and ticks: index, uuid or position (with the tick-size
//                   calibration), per-GPU time order, the end-of-file checks.
// Ownership: the source owns its LineReader. Thread-safety: one thread at a time.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/sample.h"
#include "core/status.h"
#include "core/strings.h"
#include "core/timefmt.h"
#include "telemetry/ingest/file_source.h"
#include "telemetry/ingest/nvsmi_columns.h"
#include "telemetry/ingest/nvsmi_log.h"
#include "telemetry/ingest/text.h"
#include "telemetry/io/line_reader.h"
#include "telemetry/source.h"

namespace ww::ingest::nvsmi {

// `[GPU is lost]`: the driver lost the GPU (Xid 79, fell off the bus). Other bracketed values
// (`[N/A]`, `[Not Supported]`, `[Unknown Error]`) leave only that field absent.
constexpr std::string_view kGpuIsLost = "[GPU is lost]";
inline bool IsGpuLost(std::string_view field) { return TrimSpace(field) == kGpuIsLost; }

struct Row {
  int64_t line = 0;
  int64_t timestamp_ms = 0;
  bool has_time = false;
  std::optional<int> index;
  bool index_lost = false;  // the index field read [GPU is lost]
  std::string id;           // uuid or bus id when there is no index
  GpuSample sample;
};

class NvsmiLogSource final : public TelemetrySource {
 public:
  NvsmiLogSource(std::unique_ptr<LineReader> reader, const std::string& host, uint16_t host_index,
                 ReplayOptions options)
      : reader_(std::move(reader)),
        hosts_{ValidUtf8(host)},
        host_index_(host_index),
        options_(std::move(options)),
        budget_(FileSourceLimits{options_.max_bad_row_fraction, options_.max_bad_rows_floor},
                "rows") {}

  // Reads the header (or takes --query's columns): an error when nothing in it can be triaged.
  Status Init();

  Status Next(std::vector<GpuSample>* out) override;
  const std::vector<std::string>& hosts() const override { return hosts_; }
  std::vector<GpuInfo> gpus() const override;
  std::vector<std::string> warnings() const override;

 private:
  // nvsmi_log.cc: the header.
  Status FinishHeader(int64_t line);
  bool HasReading() const;

  // nvsmi_rows.cc: one row.
  // Splits a CSV line at its commas into fields_; returns false when the line holds a NUL byte
  // (binary data).
  bool SplitCsv(std::string_view line);
  // Reads and parses the next data row into *out (overwritten); false at the end. Malformed rows
  // are skipped here.
  Result<bool> ReadRow(Row* out);
  // At the end of the file: the warnings only the end can tell (a cut-off last row, a cut-off
  // compressed stream, a NUL tail); false.
  bool EndOfRows();
  // Shifts a row after a clock step back; false for a row stamped far ahead that no second row
  // confirms (skipped).
  bool ApplyClockSteps(Row* row);
  std::optional<int64_t> ParseDmonTime(std::string_view date, std::string_view time);
  // A malformed row: a documented skip while under budget, else an error naming the file.
  Status Bad(const std::string& message, const std::string& kind);
  // Clears what ReadRow can set in a sample: the members of the logged columns and the few set
  // by hand. Every other member is never set here, so it stays empty (a whole-sample reset, ~400
  // bytes, was a tenth of the row's cost).
  void ResetSample(GpuSample* s) const {
    for (auto member : reset_members_) (s->*member).reset();
    s->pstate.reset();
    s->clock_event_reasons.reset();
    s->gpu_lost = false;
    s->key = GpuKey{};
    s->timestamp_ms = 0;
  }

  // nvsmi_ticks.cc: rows to GPUs and ticks.
  Status Finish();
  // Without index/uuid/bus-id columns the GPU is the row's position within its tick: finds how
  // many rows a tick has from the timestamps of the first rows.
  Status CalibratePositional();
  // Sets row.sample.key; returns true when this row starts a new tick.
  bool AssignGpu(Row& row);
  bool TickHas(uint16_t gpu) const;
  void AcceptIntoTick(const Row& row);
  void FlushTick(std::vector<GpuSample>* out);
  // Whether this GPU has its GpuInfo already (AcceptIntoTick).
  bool KnownGpu(uint16_t gpu) const { return gpu < known_gpu_.size() && known_gpu_[gpu]; }

  std::unique_ptr<LineReader> reader_;
  std::vector<std::string> hosts_;
  uint16_t host_index_;
  ReplayOptions options_;
  std::vector<Column> columns_;
  std::vector<std::string_view> fields_;
  bool dmon_ = false;
  int ts_col_ = -1, date_col_ = -1, time_col_ = -1, index_col_ = -1, uuid_col_ = -1, bus_col_ = -1,
      name_col_ = -1;
  bool positional_ = false;
  bool positional_ready_ = false;
  int tick_rows_ = 1;
  int position_ = 0;
  // Positional logs: a gap between two rows at least this long starts a new tick (from the
  // calibration); the tick-size check and the re-split by time (see AssignGpu).
  int64_t tick_split_ms_ = INT64_MAX;
  std::optional<int64_t> prev_row_ms_;
  int misaligned_ticks_ = 0;
  bool resync_ = false;
  int good_ticks_ = 0;
  bool drop_pending_ = false;
  // Clock steps back: added to every later timestamp so the log stays in order (ReadRow).
  int64_t clock_offset_ms_ = 0;
  std::optional<int64_t> newest_row_ms_;
  int64_t row_step_ms_ = 0;  // the latest row-to-row step of at least 10 ms: about one interval
  int last_index_ = -1;
  int last_row_index_ = -1;  // index of the previous row (a lost index follows it)
  int max_index_ = 0;
  int64_t synthetic_ticks_ = 0;
  // No time column and no --interval-ms: only one reading per GPU is readable (a snapshot); the
  // header's place, for the error when a second comes.
  std::optional<std::string> snapshot_only_;
  // A row stamped more than a day ahead, skipped (ApplyClockSteps), until the next row says
  // whether it was a jump (it agrees) or one bad stamp.
  std::optional<int64_t> far_row_ms_;
  bool truncated_noted_ = false;  // the line reader's truncated_note() is in warnings_
  std::optional<int64_t> last_dmon_ms_;
  int64_t day_offset_ms_ = 0;
  std::deque<Row> lookahead_;
  Row scratch_row_;
  TimestampParser ts_parser_;  // the timestamp column
  std::vector<GpuSample> pending_tick_;
  std::unordered_map<std::string, uint16_t> id_to_gpu_;
  std::vector<int64_t> last_ms_;  // by GPU: its newest accepted timestamp (INT64_MIN: none)
  std::map<uint16_t, GpuInfo> infos_;
  std::vector<bool> known_gpu_;                                    // by GPU: has an entry in infos_
  std::vector<std::optional<double> GpuSample::*> reset_members_;  // ResetSample
  std::string name_;
  std::string header_text_;  // the CSV header line, trimmed: repeats of it are skipped
  int64_t header_line_ = 0;
  int64_t repeated_headers_ = 0;
  int64_t date_lines_ = 0;                      // `date` output between samples, skipped
  std::vector<int64_t> repeated_header_lines_;  // the first three
  Warnings warnings_;
  bool nul_tail_noted_ = false;
  MalformedBudget budget_;  // data rows and malformed ones
  int64_t emitted_ = 0;
  // A malformed row held back until we know whether it is the file's last line.
  std::optional<std::pair<std::string, std::string>> deferred_bad_;
};

}  // namespace ww::ingest::nvsmi
