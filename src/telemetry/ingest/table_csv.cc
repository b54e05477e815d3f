// The reader of tables whose columns are named by people (table_csv.h): custom-csv and wide
// CSVs, W&B's CSV export and JSON lines; rows to samples, one tick per timestamp. The column
// recognizer is table_columns.cc; the formats' rows and detection are custom_csv.cc and wandb.cc.
#include "telemetry/ingest/table_csv.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>

#include "core/strings.h"
#include "core/timefmt.h"
#include "telemetry/ingest/json_scan.h"
#include "telemetry/ingest/table_columns.h"

namespace ww::ingest {
namespace {

using columns::BareGpuColumn;
using columns::Classify;
using columns::F;
using columns::FieldFromName;
using columns::FieldName;
using columns::IsReading;
using columns::PickDelimiter;
using columns::RangeFor;
using columns::Role;
using columns::SplitCells;
using columns::TimeUnit;
using Range = PlausibleRange;

class TableSource final : public FileSource {
 public:
  enum class Kind { kCsv, kWandbCsv, kWandbJsonl };

  TableSource(std::unique_ptr<LineReader> reader, const std::string& host, uint16_t host_index,
              const ReaderOptions& options, Kind kind)
      : FileSource(std::move(reader), host, host_index, options.limits),
        options_(options),
        kind_(kind) {}

  Status Init() {
    if (kind_ == Kind::kWandbJsonl) return Status::Ok();  // columns appear as keys do
    std::string_view line;
    auto found = NextLineWhere(reader(), &line, [](std::string_view l) {
      return !TrimSpace(l).empty() && TrimSpace(l).front() != '#';
    });
    if (!found.ok()) return found.status();
    if (!*found) return Status::InvalidInput(fmt::format("{}: empty file", path()));
    header_line_ = reader().line_number();
    delim_ = PickDelimiter(line);
    SplitCells(line, delim_, &cells_);
    for (std::string_view c : cells_) roles_.push_back(Classify(c, kind_ == Kind::kWandbCsv));
    WW_RETURN_IF_ERROR(ApplyWide());
    WW_RETURN_IF_ERROR(ApplyMap());
    return CheckColumns();
  }

  std::string Describe() const override {
    std::string what = kind_ == Kind::kCsv        ? "custom CSV"
                       : kind_ == Kind::kWandbCsv ? "W&B system metrics CSV"
                                                  : "W&B system metrics JSON lines";
    if (kind_ == Kind::kCsv && delim_ != ',') what += delim_ == '\t' ? " (tabs)" : " (';')";
    std::map<std::string, std::vector<const Role*>> by_field;
    std::vector<std::string> ignored;
    for (const Role& r : roles_) {
      if (r.f == F::kNone) {
        if (kind_ == Kind::kCsv) ignored.push_back("'" + r.name + "'");
      } else {
        by_field[FieldName(r.f)].push_back(&r);
      }
    }
    std::string parts;
    for (const auto& [field, rs] : by_field) {
      parts += parts.empty() ? ": " : ", ";
      const Role& r = *rs.front();
      std::string unit = r.f == F::kTime ? TimeUnitText(r) : r.unit;
      if (rs.size() == 1) {
        parts += fmt::format("{}='{}'{}{}", field, r.name, unit.empty() ? "" : " ",
                             unit.empty() ? "" : "[" + unit + "]");
      } else {
        parts += fmt::format("{}='{}'..'{}' ({} GPUs){}", field, rs.front()->name, rs.back()->name,
                             rs.size(), unit.empty() ? "" : " [" + unit + "]");
      }
      if (r.mapped) parts += " (--map)";
    }
    if (segments_ > 0) {
      parts += fmt::format("; {} segments (time jumped back {} time{}; laid end to end)",
                           segments_ + 1, segments_, segments_ == 1 ? "" : "s");
    }
    if (!HasTime())
      parts +=
          fmt::format("; no time column: rows {} ms apart (--interval-ms)", options_.interval_ms);
    if (!ignored.empty()) {
      parts += "; ignored ";
      for (size_t i = 0; i < ignored.size() && i < 8; ++i) parts += (i ? " " : "") + ignored[i];
      if (ignored.size() > 8) parts += fmt::format(" and {} more", ignored.size() - 8);
    }
    return what + parts;
  }

 protected:
  Status ReadBatch(std::vector<GpuSample>* out, bool* at_end) override {
    std::string_view line;
    bool complete;
    for (;;) {
      auto r = reader().Next(&line, &complete);
      if (!r.ok()) return r.status();
      if (!*r) {
        FlushTick(out);
        *at_end = true;
        if (!checked_) return CheckColumns();  // JSON lines without any GPU metric
        return Status::Ok();
      }
      const int64_t n = reader().line_number();
      const std::string_view t = TrimSpace(line);
      if (t.empty() || t.front() == '#') continue;
      if (line.find('\0') != std::string_view::npos) {
        return Status::InvalidInput(fmt::format("{}:{}: binary data in a CSV", path(), n));
      }
      if (kind_ == Kind::kWandbJsonl) {
        if (t.front() != '{') continue;  // not a record (a W&B summary line, text)
        CountRecord();
        std::string err;
        if (!ScanJson(t, &err)) {
          if (!complete) {
            Skip("truncated last line skipped", fmt::format("line {}", n));
            continue;
          }
          WW_RETURN_IF_ERROR(
              Bad("malformed JSON line skipped", fmt::format("line {}: {}", n, err)));
          continue;
        }
        if (!checked_) {
          // Keys appear with the records: wait for the first one that has GPU readings.
          bool reading = false;
          for (const Role& role : roles_) reading |= IsReading(role.f);
          if (!reading) {
            Skip("records without GPU metrics skipped", fmt::format("line {}", n));
            continue;
          }
          WW_RETURN_IF_ERROR(CheckColumns());
        }
      } else {
        SplitCells(line, delim_, &cells_);
        if (n > header_line_ && StartsWithLetter(cells_.front())) {
          // Logs appended to, or a loop that prints the header each time: identical header lines
          // are skipped and counted; a different one would read columns as the wrong fields.
          if (cells_.size() == roles_.size() && IsHeaderAgain()) {
            Skip(fmt::format("repeated header lines skipped (identical to line {})", header_line_),
                 fmt::format("line {}", n));
            continue;
          }
          if (LooksLikeOtherHeader()) {
            return Status::InvalidInput(fmt::format(
                "{}:{}: the header changes mid-file ('{}'; the header at line {} has {} "
                "columns); split the file where it changes and give the parts separately",
                path(), n, Excerpt(TrimSpace(line), 100), header_line_, roles_.size()));
          }
        }
        CountRecord();
        if (cells_.size() != roles_.size()) {
          if (!complete) {
            Skip("truncated last line skipped", fmt::format("line {}", n));
            continue;
          }
          WW_RETURN_IF_ERROR(Bad(
              "row with wrong number of fields skipped",
              fmt::format("line {}: {} fields, header has {}", n, cells_.size(), roles_.size())));
          continue;
        }
      }
      bool flushed = false;
      WW_RETURN_IF_ERROR(Row(n, complete, out, &flushed));
      if (flushed) return Status::Ok();
    }
  }

 private:
  static std::string TimeUnitText(const Role& r) {
    return r.time_unit == TimeUnit::kMs    ? "epoch ms"
           : r.time_unit == TimeUnit::kSec ? "epoch s"
                                           : "ISO 8601 or epoch";
  }

  bool HasTime() const {
    for (const Role& r : roles_) {
      if (r.f == F::kTime || r.f == F::kRuntime) return true;
    }
    return false;
  }

  static bool StartsWithLetter(std::string_view cell) {
    const std::string_view c = TrimSpaceAndQuotes(cell);
    return !c.empty() && std::isalpha(static_cast<unsigned char>(c.front()));
  }

  // A row of column names: no cell is a number and at least two name fields wattwatch knows.
  bool LooksLikeOtherHeader() const {
    int known = 0;
    for (std::string_view c : cells_) {
      double v = 0;
      if (ParseNumber(c, &v) == Parse::kOk) return false;
      if (Classify(c, kind_ == Kind::kWandbCsv).f != F::kNone) ++known;
    }
    return known >= 2;
  }

  // --wide METRIC: the per-GPU columns that name no metric (`GPU 0`, `gpu.3`) hold METRIC.
  Status ApplyWide() {
    if (options_.wide_metric.empty()) return Status::Ok();
    const F f = FieldFromName(AsciiLower(options_.wide_metric));
    static const std::map<F, const char*> kUnits = {
        {F::kPower, "W"},      {F::kPowerLimit, "W"}, {F::kUtil, "%"},    {F::kMemUtil, "%"},
        {F::kMemUsed, "MiB"},  {F::kMemTotal, "MiB"}, {F::kTemp, "C"},    {F::kSmClock, "MHz"},
        {F::kMemClock, "MHz"}, {F::kMemUsedPct, "%"}, {F::kPowerPct, "%"}};
    auto unit = kUnits.find(f);
    if (unit == kUnits.end()) {
      return Status::InvalidInput(
          fmt::format("--wide '{}': not a metric (expected power, util, mem_util, memory_used, "
                      "memory_total, temperature, sm_clock, mem_clock, power_limit)",
                      options_.wide_metric));
    }
    // Columns that name their metric keep it; with no bare GPU column the flag was meant for
    // other files of the job.
    for (Role& r : roles_) {
      const int gpu = BareGpuColumn(r.name);
      if (r.f == F::kNone && gpu >= 0) {
        r.f = f;
        r.gpu = gpu;
        if (r.unit.empty()) r.unit = std::string(unit->second) + " (--wide)";
      }
    }
    return Status::Ok();
  }

  bool IsHeaderAgain() const {
    for (size_t i = 0; i < cells_.size(); ++i) {
      if (TrimSpaceAndQuotes(cells_[i]) != roles_[i].name) return false;
    }
    return true;  // logs appended to: the header printed again
  }

  Status ApplyMap() {
    for (const auto& [field, column] : options_.map) {
      const F f = FieldFromName(field);
      int found = -1;
      for (size_t i = 0; i < roles_.size(); ++i) {
        if (AsciiLower(roles_[i].name) == AsciiLower(TrimSpace(column)))
          found = static_cast<int>(i);
      }
      if (found < 0) {
        std::string cols;
        for (size_t i = 0; i < roles_.size() && i < 12; ++i)
          cols += (i ? ", " : "") + roles_[i].name;
        return Status::InvalidInput(fmt::format("{}:{}: --map {}={}: no such column (columns: {})",
                                                path(), header_line_, field, column, cols));
      }
      for (Role& r : roles_) {
        if (r.f == f && r.gpu < 0 && !r.mapped) r.f = F::kNone;  // the guess it replaces
      }
      Role& r = roles_[static_cast<size_t>(found)];
      const Role guessed = Classify(r.name, false);
      r.f = f;
      r.mapped = true;
      r.gpu = -1;
      r.scale = guessed.f == f ? guessed.scale : 1;
      r.unit = guessed.f == f ? guessed.unit : "";
      r.time_unit = guessed.time_unit;
    }
    return Status::Ok();
  }

  Status CheckColumns() {
    checked_ = true;
    for (const Role& r : roles_) {
      if (r.bad_unit.empty() || r.mapped || r.f == F::kNone) continue;
      return Status::InvalidInput(fmt::format(
          "{}:{}: column '{}': unit '{}' cannot be placed (read as {}: W, kW, mW, %, MiB, MB, "
          "GiB, GB, KiB, bytes, C, MHz, GHz, s, ms); convert the column, or name it with --map "
          "FIELD=COLUMN to read its numbers as they are",
          path(), header_line_, Excerpt(r.name, 60), Excerpt(r.bad_unit, 20), FieldName(r.f)));
    }
    bool reading = false, wide = false;
    int time_cols = 0;
    gpu_col_ = uuid_col_ = name_col_ = time_col_ = runtime_col_ = -1;
    for (size_t i = 0; i < roles_.size(); ++i) {
      const Role& r = roles_[i];
      reading |= IsReading(r.f);
      wide |= r.gpu >= 0;
      if (r.f == F::kTime && time_col_ < 0) {
        time_col_ = static_cast<int>(i);
        ++time_cols;
      }
      if (r.f == F::kRuntime && runtime_col_ < 0) runtime_col_ = static_cast<int>(i);
      if (r.f == F::kGpu && gpu_col_ < 0) gpu_col_ = static_cast<int>(i);
      if (r.f == F::kUuid && uuid_col_ < 0) uuid_col_ = static_cast<int>(i);
      if (r.f == F::kName && name_col_ < 0) name_col_ = static_cast<int>(i);
    }
    wide_ = wide;
    const std::string where = kind_ == Kind::kWandbJsonl
                                  ? fmt::format("{}:{}", path(), reader().line_number())
                                  : fmt::format("{}:{}", path(), header_line_);
    if (!reading && options_.wide_metric.empty()) {
      std::string gpu_cols;
      int n_gpu_cols = 0;
      for (const Role& r : roles_) {
        if (r.f != F::kNone || BareGpuColumn(r.name) < 0) continue;
        if (n_gpu_cols++ < 3) gpu_cols += (gpu_cols.empty() ? "'" : ", '") + r.name + "'";
      }
      if (n_gpu_cols > 0) {
        return Status::InvalidInput(fmt::format(
            "{}: {} column{} of one GPU each ({}{}) but no name says what they hold; pass --wide "
            "METRIC (power, util, memory_used, temperature, ...)",
            where, n_gpu_cols, n_gpu_cols == 1 ? "" : "s", gpu_cols,
            n_gpu_cols > 3 ? ", ..." : ""));
      }
    }
    if (!reading) {
      return Status::InvalidInput(fmt::format(
          "{}: no power or utilization column recognized{}; name them with --map "
          "power=COLUMN --map util=COLUMN",
          where, kind_ == Kind::kWandbJsonl ? " (no system.gpu.N.powerWatts or .gpu key)" : ""));
    }
    if (time_col_ < 0 && runtime_col_ < 0 && options_.interval_ms <= 0) {
      return Status::InvalidInput(fmt::format(
          "{}: no time column recognized; pass --interval-ms with the logging interval, or "
          "--map time=COLUMN",
          where));
    }
    return Status::Ok();
  }

  // A flat JSON object into cells_ by key: a string value with its quotes, a bare word as it
  // stands, nested values skipped (no value for us). false with *err when malformed.
  bool ScanJson(std::string_view t, std::string* err) {
    std::fill(cells_.begin(), cells_.end(), std::string_view());
    JsonCursor in(t.substr(1));
    for (;;) {
      if (in.Eat('}')) return true;
      if (!in.At('"')) {
        *err = "expected a key";
        return false;
      }
      std::string_view key;
      if (!in.RawString(&key)) {
        *err = "unterminated key";
        return false;
      }
      if (!in.Eat(':')) {
        *err = "expected ':'";
        return false;
      }
      std::string_view value;
      switch (in.RawValue(&value)) {
        case JsonCursor::Raw::kNothing:
          *err = "no value";
          return false;
        case JsonCursor::Raw::kOpenString:
          *err = "unterminated string";
          return false;
        case JsonCursor::Raw::kUnbalanced:
          *err = "unbalanced brackets";
          return false;
        case JsonCursor::Raw::kNested:
          value = value.substr(0, 0);
          break;
        default:
          break;
      }
      auto [it, inserted] = keys_.try_emplace(std::string(key), static_cast<int>(roles_.size()));
      if (inserted) {
        roles_.push_back(Classify(key, true));
        cells_.emplace_back();
        if (checked_) {
          const Role& r = roles_.back();
          if (r.f == F::kTime && time_col_ < 0) time_col_ = it->second;
          if (r.f == F::kRuntime && runtime_col_ < 0) runtime_col_ = it->second;
          wide_ |= r.gpu >= 0;
        }
      }
      cells_[static_cast<size_t>(it->second)] = value;
      if (in.Eat(',')) continue;
      if (in.Eat('}')) return true;
      *err = "expected ',' or '}'";
      return false;
    }
  }

  std::optional<int64_t> ParseTime(const Role& r, std::string_view cell) {
    double v = 0;
    const std::string_view c = TrimSpaceAndQuotes(cell);
    if (ParseNumber(c, &v) == Parse::kOk && c.find(':') == std::string_view::npos) {
      if (r.f == F::kRuntime) return static_cast<int64_t>(std::llround(v * 1000));
      const bool ms =
          r.time_unit == TimeUnit::kMs || (r.time_unit == TimeUnit::kAuto && std::fabs(v) > 1e11);
      const double out = ms ? v : v * 1000;
      if (!(out > -1e15 && out < 1e15)) return std::nullopt;
      return static_cast<int64_t>(std::llround(out));
    }
    auto t = ParseTimestamp(c);
    if (!t) return std::nullopt;
    return t->unix_ms;
  }

  // A GPU's sample of the row being read: where it is in tick_, and the percentages that W&B
  // gives beside the readings (turned into a limit and a total once the row is read).
  struct Partial {
    size_t tick_index = 0;
    std::optional<double> power_pct, mem_used_pct;
  };

  Status Row(int64_t n, bool complete, std::vector<GpuSample>* out, bool* flushed) {
    std::optional<int64_t> ms;
    const int tcol = time_col_ >= 0 ? time_col_ : runtime_col_;
    if (tcol >= 0) {
      const std::string_view cell = cells_[static_cast<size_t>(tcol)];
      ms = ParseTime(roles_[static_cast<size_t>(tcol)], cell);
      if (!ms) {
        if (kind_ == Kind::kWandbJsonl && TrimSpace(cell).empty()) {
          Skip("record without _timestamp or _runtime skipped", fmt::format("line {}", n));
          return Status::Ok();
        }
        if (!complete) {
          Skip("truncated last line skipped", fmt::format("line {}", n));
          return Status::Ok();
        }
        return Bad("row with unparseable timestamp skipped",
                   fmt::format("line {}: {}: '{}' is not a time", n,
                               roles_[static_cast<size_t>(tcol)].name, Excerpt(cell, 40)));
      }
    }
    if (ms && wide_) {
      // Several runs concatenated (W&B exports of one project): a time that jumps back starts a
      // new segment, laid one interval after the previous one so that the timeline stays in
      // order and no reading is dropped as out of order.
      const int64_t raw = *ms;
      if (last_raw_ms_ && raw < *last_raw_ms_) {
        const int64_t step = last_step_ms_ > 0 ? last_step_ms_ : 1000;
        const int64_t newest = *last_raw_ms_ + segment_offset_ms_;
        segment_offset_ms_ = newest + step - raw;
        ++segments_;
        Skip("time jumps back: a new segment (run) starts, laid one interval after the previous",
             fmt::format("line {}: {} after {}; later rows shifted by {:.0f} s", n,
                         FormatIsoMs(raw), FormatIsoMs(*last_raw_ms_),
                         static_cast<double>(segment_offset_ms_) / 1000));
      } else if (last_raw_ms_ && raw > *last_raw_ms_) {
        last_step_ms_ = raw - *last_raw_ms_;
      }
      last_raw_ms_ = raw;
      *ms = raw + segment_offset_ms_;
    }
    // The GPU of a long-layout row.
    int row_gpu = 0;
    std::string uuid;
    if (!wide_) {
      if (gpu_col_ >= 0) {
        double v = 0;
        const std::string_view cell = cells_[static_cast<size_t>(gpu_col_)];
        if (ParseNumber(cell, &v) != Parse::kOk || v < 0 || v >= 4096 || v != std::floor(v)) {
          std::string_view id = TrimSpaceAndQuotes(cell);
          // "GPU-0c1d...": a uuid in the gpu column, or "cuda:1".
          if (id.rfind("cuda:", 0) == 0 && ParseNumber(id.substr(5), &v) == Parse::kOk && v >= 0 &&
              v < 4096 && v == std::floor(v)) {
            row_gpu = static_cast<int>(v);
          } else if (!id.empty()) {
            uuid = std::string(id);
            row_gpu = GpuForId(uuid);
          } else {
            return Bad(
                "row without a GPU skipped",
                fmt::format("line {}: {}: empty", n, roles_[static_cast<size_t>(gpu_col_)].name));
          }
        } else {
          row_gpu = static_cast<int>(v);
        }
      } else if (uuid_col_ >= 0) {
        uuid = std::string(TrimSpaceAndQuotes(cells_[static_cast<size_t>(uuid_col_)]));
        row_gpu = GpuForId(uuid);
      }
    }
    // Tick boundaries, decided before the values so that each GPU's sample is read straight into
    // its place in the tick (a GpuSample is ~370 bytes: copies were a large part of a small row's
    // cost).
    bool new_tick = false;
    if (ms) {
      new_tick = !tick_.empty() && *ms != tick_ms_;
    } else if (!wide_) {
      for (const GpuSample& s : tick_) new_tick |= s.key.gpu == row_gpu;
    } else {
      new_tick = !tick_.empty();
    }
    if (new_tick) {
      FlushTick(out);
      *flushed = true;
    }
    const size_t tick_before = tick_.size();
    // Values.
    partials_.clear();
    bool row_bad = false;
    std::string bad_msg;
    for (size_t i = 0; i < roles_.size() && i < cells_.size(); ++i) {
      const Role& r = roles_[i];
      if (r.f == F::kNone || r.f == F::kTime || r.f == F::kRuntime || r.f == F::kGpu ||
          r.f == F::kUuid || r.f == F::kName) {
        continue;
      }
      const std::string_view cell = cells_[i];
      if (kind_ == Kind::kWandbJsonl && cell.empty()) continue;
      double v = 0;
      Parse p = ParseNumber(cell, &v);
      if (p == Parse::kOk) {
        v *= r.scale;
        const Range range = RangeFor(r.f);
        if (v < range.lo || v > range.hi) p = Parse::kImplausible;
      }
      if (p == Parse::kMissing) continue;
      if (p != Parse::kOk) {
        row_bad = true;
        bad_msg = fmt::format("line {}: {}: '{}' is {}", n, r.name, Excerpt(TrimSpace(cell), 24),
                              p == Parse::kBad ? "not a number" : "out of the plausible range");
        continue;
      }
      Partial& part = PartialFor(wide_ ? std::max(r.gpu, 0) : row_gpu, n);
      GpuSample& s = tick_[part.tick_index];
      switch (r.f) {
        case F::kPower:
          s.power_w = v;
          break;
        case F::kPowerLimit:
          s.power_limit_w = v;
          break;
        case F::kPowerPct:
          part.power_pct = v;
          break;
        case F::kUtil:
          s.util_gpu_pct = v;
          break;
        case F::kMemUtil:
          s.util_mem_pct = v;
          break;
        case F::kMemUsed:
          s.mem_used_mib = v;
          break;
        case F::kMemUsedPct:
          part.mem_used_pct = v;
          break;
        case F::kMemTotal:
          s.mem_total_mib = v;
          break;
        case F::kTemp:
          s.temperature_c = v;
          break;
        case F::kSmClock:
          s.sm_clock_mhz = v;
          break;
        case F::kMemClock:
          s.mem_clock_mhz = v;
          break;
        default:
          break;
      }
    }
    if (row_bad) {
      if (!complete) {
        tick_.resize(tick_before);
        tick_lines_.resize(tick_before);
        Skip("truncated last line skipped", fmt::format("line {}", n));
        return Status::Ok();
      }
      WW_RETURN_IF_ERROR(Bad("malformed value (field left absent)", bad_msg));
    }
    if (!wide_ && partials_.empty()) PartialFor(row_gpu, n);  // a row with every field N/A
    if (tick_before == 0) tick_ms_ = ms ? *ms : synthetic_ticks_++ * options_.interval_ms;
    for (auto& [gpu, part] : partials_) {
      GpuSample& s = tick_[part.tick_index];
      s.timestamp_ms = tick_ms_;
      // W&B: the limit and the total from a reading and its percentage.
      if (!s.power_limit_w && s.power_w && part.power_pct && *part.power_pct > 1) {
        s.power_limit_w = *s.power_w * 100 / *part.power_pct;
      }
      if (!s.mem_total_mib && s.mem_used_mib && part.mem_used_pct && *part.mem_used_pct > 0.5) {
        s.mem_total_mib = *s.mem_used_mib * 100 / *part.mem_used_pct;
      }
      if (!uuid.empty() || name_col_ >= 0) {  // (Accept() makes the GpuInfo of every GPU)
        GpuInfo& info = Info(s.key.gpu);
        if (!uuid.empty() && info.uuid.empty()) info.uuid = ValidUtf8(uuid);
        if (name_col_ >= 0 && info.name.empty()) {
          info.name = ValidUtf8(TrimSpaceAndQuotes(cells_[static_cast<size_t>(name_col_)]));
        }
      }
    }
    return Status::Ok();
  }

  // This row's sample of `gpu`, appended to the tick on first use (line: the row's).
  Partial& PartialFor(int gpu, int64_t line) {
    for (auto& [g, p] : partials_) {
      if (g == gpu) return p;
    }
    tick_.emplace_back();
    tick_.back().key = GpuKey{host_index(), static_cast<uint16_t>(gpu)};
    tick_lines_.push_back(line);
    partials_.emplace_back();
    partials_.back().first = gpu;
    partials_.back().second.tick_index = tick_.size() - 1;
    return partials_.back().second;
  }

  int GpuForId(const std::string& id) {
    auto [it, inserted] = id_to_gpu_.try_emplace(id, static_cast<int>(id_to_gpu_.size()));
    return it->second;
  }

  void FlushTick(std::vector<GpuSample>* out) {
    AcceptTick(&tick_, tick_lines_, out);
    tick_lines_.clear();
  }

  ReaderOptions options_;
  Kind kind_;
  char delim_ = ',';
  int64_t header_line_ = 0;
  std::vector<Role> roles_;
  std::vector<std::string_view> cells_;
  std::unordered_map<std::string, int> keys_;
  bool checked_ = false;
  bool wide_ = false;
  int gpu_col_ = -1, uuid_col_ = -1, name_col_ = -1, time_col_ = -1, runtime_col_ = -1;
  std::vector<std::pair<int, Partial>> partials_;
  std::unordered_map<std::string, int> id_to_gpu_;
  // The tick being read, and each sample's line (parallel): handed to AcceptTick whole (a
  // GpuSample is ~400 bytes; in a one-column-per-GPU frame a sample is ~10 bytes of text).
  std::vector<GpuSample> tick_;
  std::vector<int64_t> tick_lines_;
  int64_t tick_ms_ = 0;
  int64_t synthetic_ticks_ = 0;
  // Wide layouts: time segments (a time that jumps back), see Row().
  std::optional<int64_t> last_raw_ms_;
  int64_t last_step_ms_ = 0;
  int64_t segment_offset_ms_ = 0;
  int segments_ = 0;
};

}  // namespace

Result<OpenedFile> OpenCustomCsv(std::unique_ptr<LineReader> reader, const std::string& host,
                                 uint16_t host_index, const ReaderOptions& options, bool wandb) {
  return InitAndOpen(std::make_unique<TableSource>(
      std::move(reader), host, host_index, options,
      wandb ? TableSource::Kind::kWandbCsv : TableSource::Kind::kCsv));
}

Result<OpenedFile> OpenWandbJsonl(std::unique_ptr<LineReader> reader, const std::string& host,
                                  uint16_t host_index, const ReaderOptions& options) {
  return InitAndOpen(std::make_unique<TableSource>(std::move(reader), host, host_index, options,
                                                   TableSource::Kind::kWandbJsonl));
}

}  // namespace ww::ingest
