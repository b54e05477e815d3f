// The amd-smi, rocm-smi and split rocm-smi CSV readers (amd_smi.h): one source that turns each
// layout into records (a GPU's key/value pairs of one poll), one key table that says what a
// key holds and in which unit, and the formats' rows. The split layout's pairing and join are
// in amd_split.cc.
#include "telemetry/ingest/amd_smi.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "core/sample_ranges.h"
#include "core/strings.h"
#include "telemetry/ingest/format.h"
#include "telemetry/ingest/gpustat.h"  // IsDateLine, ParseGpustatHostLine
#include "telemetry/ingest/table_columns.h"

namespace ww::ingest {
namespace {

// What a key holds. Units are the key's own; a JSON `{"value", "unit"}` or a unit after the
// number overrides them (power and memory).
enum class Key : uint8_t {
  kNone,
  kTime,          // epoch seconds (ms when > 1e11)
  kGpu,           // 0, card0, GPU 0
  kPower,         // W
  kPowerLimit,    // W
  kUtil,          // %
  kGfxActivity,   // %: utilization, or gr_engine_active_ratio beside a `GPU use` column
  kMemUtil,       // %
  kMemOrTemp,     // amd-smi `mem`: UMC activity (monitor) or memory temperature (metric)
  kMemUsedMb,     // amd-smi MB (MiB)
  kMemTotalMb,    //
  kMemUsedBytes,  // B
  kMemTotalBytes,
  kMemUsedPct,  // % of VRAM allocated
  kVramUsage,   // legacy monitor `USED/TOTAL UNIT`
  kTempEdge,    // C
  kTempHotspot,
  kGfxClock,  // MHz
  kMemClock,
};

struct KeyName {
  const char* name;  // lower case
  Key key;
};

// amd-smi (CSV keys, JSON leaf keys, monitor table headings) and rocm-smi keys, lower case.
constexpr KeyName kKeys[] = {
    {"timestamp", Key::kTime},
    {"gpu", Key::kGpu},
    {"device", Key::kGpu},
    // amd-smi monitor: power_usage, hotspot_temperature, memory_temperature, gfx, gfx_clock,
    // mem, mem_clock, vram_used, vram_total; the table: POWER GPU_TEMP MEM_TEMP GFX_UTIL
    // GFX_CLOCK MEM_UTIL MEM_CLOCK VRAM_USED VRAM_TOTAL (older: GPU_T MEM_T GFX_CLK GFX% MEM%
    // VRAM_USAGE).
    {"power_usage", Key::kPower},
    {"power", Key::kPower},
    {"hotspot_temperature", Key::kTempHotspot},
    {"gpu_temp", Key::kTempHotspot},
    {"gpu_t", Key::kTempHotspot},
    {"gfx", Key::kUtil},
    {"gfx_util", Key::kUtil},
    {"gfx%", Key::kUtil},
    {"gfx_clock", Key::kGfxClock},
    {"gfx_clk", Key::kGfxClock},
    {"mem", Key::kMemOrTemp},
    {"mem_util", Key::kMemUtil},
    {"mem%", Key::kMemUtil},
    {"mem_clock", Key::kMemClock},
    {"vram_used", Key::kMemUsedMb},
    {"vram_total", Key::kMemTotalMb},
    {"vram_usage", Key::kVramUsage},
    // amd-smi metric: usage.{gfx_activity, umc_activity}, power.socket_power,
    // temperature.{edge, hotspot, mem}, mem_usage.{total_vram, used_vram}.
    {"gfx_activity", Key::kGfxActivity},
    {"umc_activity", Key::kMemUtil},
    {"socket_power", Key::kPower},
    {"current_socket_power", Key::kPower},
    {"average_socket_power", Key::kPower},
    {"edge", Key::kTempEdge},
    {"hotspot", Key::kTempHotspot},
    {"temperature_edge", Key::kTempEdge},
    {"temperature_hotspot", Key::kTempHotspot},
    {"total_vram", Key::kMemTotalMb},
    {"used_vram", Key::kMemUsedMb},
    // rocm-smi (--showpower --showmaxpower --showuse --showmemuse --showtemp --showmeminfo vram).
    {"average graphics package power (w)", Key::kPower},
    {"current socket graphics package power (w)", Key::kPower},
    {"max graphics package power (w)", Key::kPowerLimit},
    {"gpu use (%)", Key::kUtil},
    {"gpu memory read/write activity (%)", Key::kMemUtil},
    {"gpu memory use (%)", Key::kMemUtil},
    {"gpu memory allocated (vram%)", Key::kMemUsedPct},
    {"vram total memory (b)", Key::kMemTotalBytes},
    {"vram total used memory (b)", Key::kMemUsedBytes},
    {"temperature (sensor edge) (c)", Key::kTempEdge},
    {"temperature (sensor junction) (c)", Key::kTempHotspot},
    // The split layout.
    {"power_watts", Key::kPower},
    {"power_cap_watts", Key::kPowerLimit},
    {"gpu_use_percent", Key::kUtil},
    {"vram_total_bytes", Key::kMemTotalBytes},
    {"vram_used_bytes", Key::kMemUsedBytes},
};

Key KeyOf(std::string_view raw) {
  const std::string k = AsciiLower(TrimSpaceAndQuotes(raw));
  for (const KeyName& n : kKeys) {
    if (k == n.name) return n.key;
  }
  return Key::kNone;
}

// A reading: a number with what followed it ("248 W", "55 °C", "1235 MB", "N/A Mb/s").
enum class Val { kOk, kMissing, kBad };
Val ParseValue(std::string_view text, double* v, std::string_view* unit) {
  text = TrimSpaceAndQuotes(text);
  if (text.empty() || text.starts_with("N/A") || text.starts_with("n/a") || text[0] == '[') {
    return Val::kMissing;
  }
  size_t end = 0;
  while (end < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '.' ||
          text[end] == '-' || text[end] == '+' ||
          ((text[end] == 'e' || text[end] == 'E') && end > 0 && end + 1 < text.size() &&
           (std::isdigit(static_cast<unsigned char>(text[end + 1])) || text[end + 1] == '-' ||
            text[end + 1] == '+')))) {
    ++end;
  }
  if (end == 0) return Val::kBad;
  switch (ParseNumber(text.substr(0, end), v)) {
    case Parse::kOk:
      break;
    case Parse::kMissing:
      return Val::kMissing;
    default:
      return Val::kBad;
  }
  *unit = TrimSpace(text.substr(end));
  return Val::kOk;
}

// MiB in one `unit` of memory; 0 when it is none. amd-smi's MB, GB are 1024-based.
double MibPer(std::string_view unit) {
  const std::string u = AsciiLower(unit);
  if (u == "b" || u == "bytes") return 1.0 / (1024 * 1024);
  if (u == "kb" || u == "kib") return 1.0 / 1024;
  if (u == "mb" || u == "mib") return 1;
  if (u == "gb" || u == "gib") return 1024;
  if (u == "tb" || u == "tib") return 1024.0 * 1024;
  return 0;
}

// W in one `unit` of power; 0 when it is none.
double WattsPer(std::string_view unit) {
  if (unit == "W" || unit == "w") return 1;
  if (unit == "mW") return 1e-3;
  if (unit == "uW" || unit == "\xc2\xb5W" || unit == "\xce\xbcW") return 1e-6;
  return 0;
}

// One GPU's readings of one poll.
struct Record {
  int gpu = -1;
  std::optional<int64_t> time_ms;
  std::vector<std::pair<std::string, std::string>> values;  // key, value as printed
};

// The GPU of `0`, `card3`, `GPU 3`, `GPU[3]`; -1 when none.
int GpuIndexOf(std::string_view text) {
  std::string_view t = TrimSpaceAndQuotes(text);
  const std::string lower = AsciiLower(t);
  for (std::string_view prefix : {"card", "gpu[", "gpu ", "gpu"}) {
    if (std::string_view(lower).starts_with(prefix)) {
      t = t.substr(prefix.size());
      break;
    }
  }
  if (!t.empty() && t.back() == ']') t.remove_suffix(1);
  t = TrimSpace(t);
  if (t.empty() || t.size() > 4) return -1;
  int n = 0;
  for (char c : t) {
    if (c < '0' || c > '9') return -1;
    n = n * 10 + (c - '0');
  }
  return n < 4096 ? n : -1;
}

// An epoch time in seconds (ms when > 1e11): ms; nullopt when not one.
std::optional<int64_t> EpochMs(std::string_view text) {
  double v = 0;
  if (ParseNumber(TrimSpaceAndQuotes(text), &v) != Parse::kOk || v < 0 || v > 1e14) {
    return std::nullopt;
  }
  return static_cast<int64_t>(std::llround(v > 1e11 ? v : v * 1000));
}

// What a record's readings made of a sample, and what was noticed on the way.
struct Mapped {
  bool secondary_die = false;  // rocm-smi `N/A (Secondary die)`
  bool zero_power = false;     // 0 W read as absent
};

// The record's values into *s; an error message when a value is not a number or implausible.
bool MapRecord(const Record& r, GpuSample* s, Mapped* m, std::string* error) {
  bool metric_temps = false, gpu_use = false;
  for (const auto& [k, v] : r.values) {
    const Key key = KeyOf(k);
    metric_temps |= key == Key::kTempEdge;
    gpu_use |= key == Key::kUtil;
  }
  std::optional<double> edge, hotspot, used_pct, gfx_activity;
  for (const auto& [k, text] : r.values) {
    Key key = KeyOf(k);
    if (key == Key::kNone || key == Key::kTime || key == Key::kGpu) continue;
    if (key == Key::kMemOrTemp) {
      if (metric_temps) continue;  // metric's temperature.mem: the HBM temperature, not read
      key = Key::kMemUtil;
    }
    if (key == Key::kVramUsage) {
      // Older `amd-smi monitor`: "USED/TOTAL UNIT".
      const std::string_view t = TrimSpaceAndQuotes(text);
      if (t.starts_with("N/A")) continue;
      const size_t slash = t.find('/');
      double used = 0, total = 0;
      std::string_view unit;
      if (slash == std::string_view::npos ||
          ParseNumber(TrimSpace(t.substr(0, slash)), &used) != Parse::kOk ||
          ParseValue(t.substr(slash + 1), &total, &unit) != Val::kOk || MibPer(unit) == 0) {
        *error = fmt::format("{}: '{}' is not 'USED/TOTAL UNIT'", k, Excerpt(t, 32));
        return false;
      }
      s->mem_used_mib = used * MibPer(unit);
      s->mem_total_mib = total * MibPer(unit);
      continue;
    }
    double v = 0;
    std::string_view unit;
    const Val p = ParseValue(text, &v, &unit);
    if (p == Val::kMissing) {
      if (key == Key::kPower && TrimSpaceAndQuotes(text).find("Secondary") != std::string::npos) {
        m->secondary_die = true;
      }
      continue;
    }
    if (p == Val::kBad) {
      *error = fmt::format("{}: '{}' is not a number", k, Excerpt(TrimSpaceAndQuotes(text), 32));
      return false;
    }
    PlausibleRange range = kPercentRange;
    std::optional<double>* field = nullptr;
    switch (key) {
      case Key::kPower:
      case Key::kPowerLimit:
        if (!unit.empty()) {
          if (WattsPer(unit) == 0) {
            *error = fmt::format("{}: unit '{}' is not W", k, Excerpt(unit, 16));
            return false;
          }
          v *= WattsPer(unit);
        }
        range = kPowerRangeW;
        if (key == Key::kPower && v == 0) {
          m->zero_power = true;  // a secondary GCD's, or no reading: never a 0 W GPU
          continue;
        }
        field = key == Key::kPower ? &s->power_w : &s->power_limit_w;
        break;
      case Key::kUtil:
        field = &s->util_gpu_pct;
        break;
      case Key::kGfxActivity:
        field = &gfx_activity;
        // rocm-smi's coarse-grain GFX activity is an accumulating counter beside `GPU use`:
        // only a percentage is read.
        if (gpu_use && v > 100) continue;
        break;
      case Key::kMemUtil:
        field = &s->util_mem_pct;
        break;
      case Key::kMemUsedPct:
        field = &used_pct;
        break;
      case Key::kMemUsedMb:
      case Key::kMemTotalMb:
      case Key::kMemUsedBytes:
      case Key::kMemTotalBytes: {
        const bool bytes = key == Key::kMemUsedBytes || key == Key::kMemTotalBytes;
        const double per = unit.empty() ? (bytes ? MibPer("B") : 1) : MibPer(unit);
        if (per == 0) {
          *error = fmt::format("{}: unit '{}' is not a memory size", k, Excerpt(unit, 16));
          return false;
        }
        v *= per;
        range = kMemoryRangeMib;
        field = (key == Key::kMemUsedMb || key == Key::kMemUsedBytes) ? &s->mem_used_mib
                                                                      : &s->mem_total_mib;
        break;
      }
      case Key::kTempEdge:
      case Key::kTempHotspot:
        range = kTemperatureRangeC;
        field = key == Key::kTempEdge ? &edge : &hotspot;
        break;
      case Key::kGfxClock:
      case Key::kMemClock:
        range = kClockRangeMhz;
        field = key == Key::kGfxClock ? &s->sm_clock_mhz : &s->mem_clock_mhz;
        break;
      default:
        continue;
    }
    if (!(v >= range.lo && v <= range.hi)) {
      *error = fmt::format("{}: '{}' is out of the plausible range", k,
                           Excerpt(TrimSpaceAndQuotes(text), 32));
      return false;
    }
    *field = v;
  }
  // Edge is the board's temperature as nvidia-smi reports one; MI300 has none (N/A): hotspot.
  s->temperature_c = edge ? edge : hotspot;
  if (gfx_activity) {
    if (gpu_use) {
      s->gr_engine_active_ratio = *gfx_activity / 100;
    } else {
      s->util_gpu_pct = gfx_activity;
    }
  }
  if (used_pct && !s->mem_used_mib && s->mem_total_mib) {
    s->mem_used_mib = *used_pct / 100 * *s->mem_total_mib;
  }
  return true;
}

bool HasReading(const GpuSample& s) {
  return s.power_w || s.util_gpu_pct || s.util_mem_pct || s.mem_used_mib || s.temperature_c ||
         s.gr_engine_active_ratio || s.power_limit_w || s.mem_total_mib;
}

// A CSV header of these readers: a time, GPU or device column first and a key of the table.
bool IsAmdCsvHeader(std::string_view line) {
  if (line.find(',') == std::string_view::npos) return false;
  std::vector<std::string_view> cells;
  columns::SplitCells(line, ',', &cells);
  if (cells.size() < 2) return false;
  const std::string first = AsciiLower(TrimSpaceAndQuotes(cells[0]));
  if (first != "timestamp" && first != "gpu" && first != "device") return false;
  // A key only these tools print (`power_usage`, `umc_activity`, `GPU use (%)`), not one a
  // home-made CSV may have (`power`, `mem`): custom-csv keeps those.
  for (auto c : cells) {
    const Key k = KeyOf(c);
    const std::string_view name = TrimSpaceAndQuotes(c);
    if (k != Key::kNone && k != Key::kTime && k != Key::kGpu &&
        (name.find('_') != std::string_view::npos || name.find('(') != std::string_view::npos)) {
      return true;
    }
  }
  return false;
}

// Heading words of `amd-smi monitor`'s table.
bool IsMonitorHeader(std::string_view line) {
  const auto toks = SplitWhitespace(line);
  if (toks.size() < 2) return false;
  size_t i = 0;
  if (toks[0] == "TIMESTAMP") ++i;
  if (toks[i] != "GPU") return false;
  int known = 0;
  for (size_t k = i + 1; k < toks.size(); ++k) {
    for (char c : toks[k]) {
      if (!(std::isupper(static_cast<unsigned char>(c)) || c == '_' || c == '%' ||
            std::isdigit(static_cast<unsigned char>(c)))) {
        return false;
      }
    }
    // A heading only amd-smi prints (GPU_TEMP, GFX_UTIL, VRAM_USED, GFX%), not POWER alone.
    if (KeyOf(toks[k]) != Key::kNone && toks[k] != "POWER") ++known;
  }
  return known >= 1;
}

// A `rocm-smi` log line: `GPU[0]\t\t: KEY: VALUE` (*gpu, *key, *value), not an XCP line.
bool ParseRocmLogLine(std::string_view line, int* gpu, std::string_view* key,
                      std::string_view* value) {
  if (!line.starts_with("GPU[")) return false;
  const size_t close = line.find(']');
  if (close == std::string_view::npos) return false;
  *gpu = GpuIndexOf(line.substr(0, close + 1));
  if (*gpu < 0) return false;
  std::string_view rest = TrimSpace(line.substr(close + 1));
  if (rest.empty() || rest[0] != ':') return false;
  rest = TrimSpace(rest.substr(1));
  const size_t sep = rest.find(": ");
  if (sep == std::string_view::npos) return false;
  *key = TrimSpace(rest.substr(0, sep));
  *value = TrimSpace(rest.substr(sep + 2));
  return true;
}

enum class Tool { kAmdSmi, kRocmSmi, kSplit };

class AmdSource final : public FileSource {
 public:
  AmdSource(std::unique_ptr<LineReader> reader, const std::string& host, uint16_t host_index,
            const ReaderOptions& options, Tool tool)
      : FileSource(std::move(reader), host, host_index, options.limits),
        options_(options),
        tool_(tool) {}

  std::string Describe() const override {
    static const char* kTools[] = {"amd-smi", "rocm-smi", "rocm-smi split CSV"};
    std::string d = kTools[static_cast<int>(tool_)];
    if (tool_ != Tool::kSplit) d += layout_.empty() ? "" : " " + layout_;
    if (tool_ == Tool::kSplit) {
      d += half_ == SplitHalf::kPower ? " (power half)"
                                      : (half_ == SplitHalf::kUse ? " (use half)" : "");
    }
    d += fmt::format(": {} polls", polls_);
    if (timed_) {
      d += ", times from the timestamp column";
    } else if (dated_) {
      d += ", times from the date lines";
    } else if (polls_ > 0) {
      d += fmt::format(", {} ms apart (--interval-ms)", options_.interval_ms);
    }
    std::string fields;
    auto add = [&](bool seen, const char* name) {
      if (seen) fields += (fields.empty() ? "" : ", ") + std::string(name);
    };
    add(seen_.power_w.has_value(), "power");
    add(seen_.power_limit_w.has_value(), "power cap");
    add(seen_.util_gpu_pct.has_value(), "utilization");
    add(seen_.gr_engine_active_ratio.has_value(), "gfx activity (as engine activity)");
    add(seen_.util_mem_pct.has_value(), "memory activity");
    add(seen_.mem_used_mib.has_value(), "VRAM used");
    add(seen_.mem_total_mib.has_value(), "VRAM total");
    add(seen_.temperature_c.has_value(), "temperature");
    add(seen_.sm_clock_mhz.has_value(), "gfx clock");
    d += "; " + (fields.empty() ? std::string("no readings") : fields);
    if (!secondary_.empty() || !zero_power_.empty()) {
      std::set<int> gcds(secondary_.begin(), secondary_.end());
      gcds.insert(zero_power_.begin(), zero_power_.end());
      std::string list;
      for (int g : gcds) list += (list.empty() ? "" : ", ") + std::to_string(g);
      d += fmt::format(
          "; GPU {} without power readings (N/A, 0 W: secondary GCDs of an MI250X package, "
          "whose power the primary GCD reports): power absent, not 0 W",
          list);
    }
    return d;
  }

 protected:
  Status ReadBatch(std::vector<GpuSample>* out, bool* at_end) override {
    for (;;) {
      if (!ready_.empty()) {
        Tick t = std::move(ready_.front());
        ready_.pop_front();
        AcceptTick(&t.samples, t.lines, out);
        return Status::Ok();
      }
      if (done_) {
        *at_end = true;
        return Status::Ok();
      }
      std::string_view raw;
      bool complete;
      auto r = reader().Next(&raw, &complete);
      if (!r.ok()) return r.status();
      if (!*r) {
        WW_RETURN_IF_ERROR(EndOfFile());
        done_ = true;
        continue;
      }
      const int64_t n = reader().line_number();
      if (raw.find('\0') != std::string_view::npos) {
        return Status::InvalidInput(fmt::format("{}:{}: binary data in an AMD GPU log", path(), n));
      }
      const std::string_view t = TrimSpace(raw);
      if (t.empty()) continue;
      WW_RETURN_IF_ERROR(Line(t, n, complete));
    }
  }

 private:
  enum class Layout { kUnknown, kCsv, kJson, kMonitor, kLog };
  struct Tick {
    std::vector<GpuSample> samples;
    std::vector<int64_t> lines;
  };

  Status Line(std::string_view t, int64_t n, bool complete) {
    if (layout_kind_ == Layout::kUnknown) {
      if (IsDateLine(t)) return DateLine(t);
      if (t[0] == '[' || t[0] == '{') {
        layout_kind_ = Layout::kJson;
        layout_ = "JSON";
      } else if (tool_ == Tool::kRocmSmi && (t.starts_with("GPU[") || t.starts_with("="))) {
        layout_kind_ = Layout::kLog;
        layout_ = "log";
      } else if (tool_ == Tool::kAmdSmi && IsMonitorHeader(t)) {
        layout_kind_ = Layout::kMonitor;
        layout_ = "monitor table";
      } else {
        layout_kind_ = Layout::kCsv;
        layout_ = "CSV";
      }
    }
    switch (layout_kind_) {
      case Layout::kJson:
        return JsonLine(t, n);
      case Layout::kLog:
        return LogLine(t, n);
      case Layout::kMonitor:
        return MonitorLine(t, n, complete);
      default:
        return CsvLine(t, n, complete);
    }
  }

  Status DateLine(std::string_view t) {
    if (auto ms = ParseGpustatHostLine(t)) {
      CloseTick();
      pending_ms_ = *ms;
      dated_ = true;
    }
    return Status::Ok();
  }

  // --- CSV (amd-smi --csv, rocm-smi --csv, the split layout) ---
  Status CsvLine(std::string_view t, int64_t n, bool complete) {
    if (t.find(',') == std::string_view::npos && IsDateLine(t)) return DateLine(t);
    std::vector<std::string_view> cells;
    columns::SplitCells(t, ',', &cells);
    const std::string first = AsciiLower(TrimSpaceAndQuotes(cells[0]));
    if (first == "timestamp" || first == "gpu" || first == "device") {
      header_.clear();
      for (auto c : cells) header_.emplace_back(TrimSpaceAndQuotes(c));
      if (tool_ == Tool::kSplit) half_ = SplitHalfOfHeader(t);
      CloseTick();  // rocm-smi --csv in a loop: a header before every poll
      return Status::Ok();
    }
    if (header_.empty()) {
      Skip("lines before the CSV header skipped", fmt::format("line {}: '{}'", n, Excerpt(t, 40)));
      return Status::Ok();
    }
    CountRecord();
    if (cells.size() != header_.size()) {
      if (!complete) {
        Skip("truncated last line skipped", fmt::format("line {}", n));
        return Status::Ok();
      }
      return Bad(
          "rows with the wrong number of fields skipped",
          fmt::format("line {}: {} fields, the header has {}", n, cells.size(), header_.size()));
    }
    Record rec;
    for (size_t i = 0; i < cells.size(); ++i) {
      const Key k = KeyOf(header_[i]);
      if (k == Key::kGpu) {
        rec.gpu = GpuIndexOf(cells[i]);
      } else if (k == Key::kTime) {
        rec.time_ms = EpochMs(cells[i]);
        if (!rec.time_ms) {
          return Bad("rows with unparseable times skipped",
                     fmt::format("line {}: '{}'", n, Excerpt(TrimSpaceAndQuotes(cells[i]), 32)));
        }
      } else if (k != Key::kNone) {
        rec.values.emplace_back(header_[i], std::string(cells[i]));
      }
    }
    return Add(std::move(rec), n);
  }

  // --- amd-smi monitor's table ---
  Status MonitorLine(std::string_view t, int64_t n, bool complete) {
    if (IsDateLine(t)) return DateLine(t);
    if (IsMonitorHeader(t)) {
      header_.clear();
      for (auto w : SplitWhitespace(t)) header_.emplace_back(w);
      in_process_table_ = false;
      CloseTick();
      return Status::Ok();
    }
    if (t.starts_with("PROCESS INFO")) in_process_table_ = true;
    if (header_.empty() || in_process_table_ || !std::isdigit(static_cast<unsigned char>(t[0]))) {
      Skip("lines that are not amd-smi monitor rows skipped",
           fmt::format("line {}: '{}'", n, Excerpt(t, 40)));
      return Status::Ok();
    }
    CountRecord();
    // Values are a number or N/A, each maybe followed by its unit ("248 W", "55 °C", "N/A Mb/s").
    std::vector<std::string> values;
    for (auto w : SplitWhitespace(t)) {
      const char c = w[0];
      const bool starts_value = std::isdigit(static_cast<unsigned char>(c)) || c == '-' ||
                                c == '.' || w == "N/A" || values.empty();
      if (starts_value) {
        values.emplace_back(w);
      } else {
        values.back() += " " + std::string(w);
      }
    }
    if (values.size() != header_.size()) {
      if (!complete) {
        Skip("truncated last line skipped", fmt::format("line {}", n));
        return Status::Ok();
      }
      return Bad(
          "rows with the wrong number of fields skipped",
          fmt::format("line {}: {} values, the header has {}", n, values.size(), header_.size()));
    }
    Record rec;
    for (size_t i = 0; i < values.size(); ++i) {
      const Key k = KeyOf(header_[i]);
      if (k == Key::kGpu) {
        rec.gpu = GpuIndexOf(values[i]);
      } else if (k == Key::kTime) {
        rec.time_ms = EpochMs(values[i]);
      } else if (k != Key::kNone) {
        rec.values.emplace_back(header_[i], values[i]);
      }
    }
    return Add(std::move(rec), n);
  }

  // --- rocm-smi's log: `GPU[0]\t\t: KEY: VALUE`, a poll between banners ---
  Status LogLine(std::string_view t, int64_t n) {
    if (IsDateLine(t)) {
      WW_RETURN_IF_ERROR(FlushLog());
      return DateLine(t);
    }
    if (t.find("ROCm System Management Interface") != std::string_view::npos ||
        t.find("End of ROCm SMI Log") != std::string_view::npos) {
      return FlushLog();
    }
    int gpu = -1;
    std::string_view key, value;
    if (!ParseRocmLogLine(t, &gpu, &key, &value)) return Status::Ok();  // spacers, notes
    if (KeyOf(key) == Key::kNone) return Status::Ok();
    auto& rec = log_[gpu];
    rec.first_line = rec.first_line ? rec.first_line : n;
    rec.record.gpu = gpu;
    rec.record.values.emplace_back(std::string(key), std::string(value));
    return Status::Ok();
  }

  Status FlushLog() {
    auto polled = std::move(log_);
    log_.clear();
    CloseTick();
    for (auto& [gpu, r] : polled) {
      CountRecord();
      WW_RETURN_IF_ERROR(Add(std::move(r.record), r.first_line));
    }
    CloseTick();
    return Status::Ok();
  }

  // --- JSON: amd-smi's arrays of GPU objects, rocm-smi's {"card0": {...}} documents ---
  Status JsonLine(std::string_view t, int64_t n) {
    if (depth_ == 0 && t[0] != '[' && t[0] != '{') {
      if (IsDateLine(t)) return DateLine(t);
      Skip("lines outside the JSON documents skipped",
           fmt::format("line {}: '{}'", n, Excerpt(t, 40)));
      return Status::Ok();
    }
    for (char c : t) {
      if (depth_ > 0 && (top_ == '{' || depth_ >= 2)) buf_ += c;
      if (in_string_) {
        if (escaped_) {
          escaped_ = false;
        } else if (c == '\\') {
          escaped_ = true;
        } else if (c == '"') {
          in_string_ = false;
        }
        continue;
      }
      if (c == '"') {
        in_string_ = depth_ > 0;
      } else if (c == '{' || c == '[') {
        if (depth_ == 0) {
          top_ = c;
          buf_.assign(1, c);
          json_line_ = n;
        }
        if (depth_ == 1 && top_ == '[') {
          buf_.assign(1, c);
          json_line_ = n;
        }
        ++depth_;
      } else if (c == '}' || c == ']') {
        if (depth_ == 0) continue;
        --depth_;
        if (depth_ == 1 && top_ == '[') {
          WW_RETURN_IF_ERROR(JsonRecord(buf_, json_line_));
          buf_.clear();
        } else if (depth_ == 0) {
          if (top_ == '{') WW_RETURN_IF_ERROR(JsonRecord(buf_, json_line_));
          buf_.clear();
          CloseTick();  // a document is a poll (or a whole --watch run, with timestamps)
        }
      } else if (depth_ == 0 && c != ' ' && c != '\t' && c != ',' && c != '\r') {
        Skip("text outside the JSON documents skipped", fmt::format("line {}", n));
        return Status::Ok();
      }
    }
    if (depth_ > 0) buf_ += '\n';
    if (buf_.size() > (64u << 20)) {
      return Status::InvalidInput(
          fmt::format("{}:{}: a JSON record longer than 64 MiB", path(), json_line_));
    }
    return Status::Ok();
  }

  Status JsonRecord(const std::string& text, int64_t n) {
    CountRecord();
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      return Bad("malformed JSON records skipped",
                 fmt::format("line {}: '{}'", n, Excerpt(text, 40)));
    }
    if (j.contains("gpu")) return Add(AmdJsonRecord(j), n);
    // rocm-smi: {"card0": {"KEY": "VALUE", ...}, ..., "system": {...}}
    bool any = false;
    for (const auto& [card, keys] : j.items()) {
      if (!keys.is_object()) continue;
      Record rec;
      rec.gpu = GpuIndexOf(card);
      if (rec.gpu < 0) continue;
      for (const auto& [k, v] : keys.items()) {
        if (v.is_string()) rec.values.emplace_back(k, v.get<std::string>());
        if (v.is_number()) rec.values.emplace_back(k, v.dump());
      }
      any = true;
      WW_RETURN_IF_ERROR(Add(std::move(rec), n));
    }
    if (!any) {
      return Bad("JSON records without a GPU skipped",
                 fmt::format("line {}: '{}'", n, Excerpt(text, 40)));
    }
    return Status::Ok();
  }

  // amd-smi: {"gpu": 0, "timestamp": T, "usage": {"gfx_activity": {"value": 99, "unit": "%"}}, ...}
  static void Flatten(const nlohmann::json& j, const std::string& parent, Record* rec) {
    for (const auto& [k, v] : j.items()) {
      const std::string key = parent == "temperature" ? "temperature_" + k : k;
      if (v.is_object() && v.contains("value")) {
        const auto& value = v["value"];
        std::string text = value.is_string() ? value.get<std::string>() : value.dump();
        if (v.contains("unit") && v["unit"].is_string() && !value.is_string()) {
          text += " " + v["unit"].get<std::string>();
        }
        rec->values.emplace_back(key, std::move(text));
      } else if (v.is_object()) {
        Flatten(v, k, rec);
      } else if (v.is_string()) {
        rec->values.emplace_back(key, v.get<std::string>());
      } else if (v.is_number()) {
        rec->values.emplace_back(key, v.dump());
      }
    }
  }

  Record AmdJsonRecord(const nlohmann::json& j) {
    Record rec;
    const auto& gpu = j["gpu"];
    rec.gpu = gpu.is_number_integer()
                  ? static_cast<int>(std::clamp<int64_t>(gpu.get<int64_t>(), -1, 4095))
                  : (gpu.is_string() ? GpuIndexOf(gpu.get<std::string>()) : -1);
    if (j.contains("timestamp")) {
      const auto& ts = j["timestamp"];
      rec.time_ms = EpochMs(ts.is_string() ? ts.get<std::string>() : ts.dump());
    }
    nlohmann::json rest = j;
    rest.erase("gpu");
    rest.erase("timestamp");
    Flatten(rest, "", &rec);
    return rec;
  }

  // --- records into ticks ---
  Status Add(Record rec, int64_t n) {
    if (rec.gpu < 0) {
      return Bad("records without a GPU index skipped",
                 fmt::format("line {}: no GPU (gpu, device, cardN)", n));
    }
    GpuSample s;
    Mapped m;
    std::string error;
    if (!MapRecord(rec, &s, &m, &error)) {
      return Bad("malformed records skipped", fmt::format("line {}: {}", n, error));
    }
    if (m.secondary_die) secondary_.insert(rec.gpu);
    if (m.zero_power) zero_power_.insert(rec.gpu);
    if (!HasReading(s) && !m.secondary_die && !m.zero_power) {
      Skip("records without a reading skipped", fmt::format("line {}", n));
      return Status::Ok();
    }
    s.key = GpuKey{host_index(), static_cast<uint16_t>(rec.gpu)};
    bool repeat = false;
    for (const GpuSample& o : tick_.samples) repeat |= o.key.gpu == s.key.gpu;
    if (repeat || (rec.time_ms && tick_time_ && *rec.time_ms != *tick_time_)) CloseTick();
    if (tick_.samples.empty()) {
      if (rec.time_ms) {
        tick_ms_ = *rec.time_ms;
        timed_ = true;
      } else if (pending_ms_) {
        tick_ms_ = *pending_ms_;
        pending_ms_.reset();
      } else if (options_.interval_ms > 0) {
        tick_ms_ = polls_ > 0 ? tick_ms_ + options_.interval_ms : 0;
      } else if (dated_ || timed_) {
        return Bad("polls without a date line (no time) skipped",
                   fmt::format("line {}: GPU {} seen again before a date line; pass "
                               "--interval-ms to place such polls",
                               n, rec.gpu));
      } else {
        return Status::InvalidInput(fmt::format(
            "{}:{}: this {} output carries no times (no timestamp column, no `date` lines "
            "between polls); pass --interval-ms with the polling interval",
            path(), n, tool_ == Tool::kAmdSmi ? "amd-smi" : "rocm-smi"));
      }
      tick_time_ = rec.time_ms;
      ++polls_;
    }
    s.timestamp_ms = tick_ms_;
    Note(s);
    tick_.samples.push_back(s);
    tick_.lines.push_back(n);
    return Status::Ok();
  }

  void Note(const GpuSample& s) {
    auto mark = [](std::optional<double>& seen, const std::optional<double>& v) {
      if (v) seen = 1;
    };
    mark(seen_.power_w, s.power_w);
    mark(seen_.power_limit_w, s.power_limit_w);
    mark(seen_.util_gpu_pct, s.util_gpu_pct);
    mark(seen_.gr_engine_active_ratio, s.gr_engine_active_ratio);
    mark(seen_.util_mem_pct, s.util_mem_pct);
    mark(seen_.mem_used_mib, s.mem_used_mib);
    mark(seen_.mem_total_mib, s.mem_total_mib);
    mark(seen_.temperature_c, s.temperature_c);
    mark(seen_.sm_clock_mhz, s.sm_clock_mhz);
  }

  void CloseTick() {
    if (tick_.samples.empty()) return;
    std::sort(tick_.samples.begin(), tick_.samples.end(),
              [](const GpuSample& a, const GpuSample& b) { return a.key.gpu < b.key.gpu; });
    ready_.push_back(std::move(tick_));
    tick_ = Tick{};
    tick_time_.reset();
  }

  Status EndOfFile() {
    if (layout_kind_ == Layout::kLog) WW_RETURN_IF_ERROR(FlushLog());
    if (layout_kind_ == Layout::kJson && depth_ > 0) {
      Skip("truncated last JSON record skipped", fmt::format("line {}", json_line_));
    }
    CloseTick();
    return Status::Ok();
  }

  struct LogRecord {
    Record record;
    int64_t first_line = 0;
  };

  ReaderOptions options_;
  Tool tool_;
  Layout layout_kind_ = Layout::kUnknown;
  std::string layout_;
  SplitHalf half_ = SplitHalf::kNone;
  std::vector<std::string> header_;
  bool in_process_table_ = false;
  std::map<int, LogRecord> log_;
  // JSON scanning state.
  int depth_ = 0;
  char top_ = 0;
  bool in_string_ = false, escaped_ = false;
  std::string buf_;
  int64_t json_line_ = 0;
  // Ticks.
  Tick tick_;
  std::deque<Tick> ready_;
  std::optional<int64_t> tick_time_, pending_ms_;
  int64_t tick_ms_ = 0;
  int64_t polls_ = 0;
  bool dated_ = false, timed_ = false, done_ = false;
  GpuSample seen_;
  std::set<int> secondary_, zero_power_;
};

template <Tool kTool>
Result<OpenedFile> OpenAmd(const OpenRequest& r, std::unique_ptr<LineReader> lines) {
  return OpenedFileOf(
      std::make_unique<AmdSource>(std::move(lines), r.host, r.host_index, r.reader, kTool));
}

// Detection. amd-smi: a monitor table heading (`GPU  POWER  GPU_TEMP ...`), a JSON GPU object
// (`"gpu": 0` in the first lines of a document that starts with '[' or '{'), a CSV header
// starting `timestamp,gpu` or `gpu,` with a key of amd-smi's. rocm-smi: a CSV header
// `device,` with a rocm-smi key, a JSON document `{"card0": {...`, a `GPU[0] : KEY: VALUE` line
// with a key of the table. Split: a header of one of its two halves. All before custom-csv,
// which would take the CSVs' power columns.
bool FirstLinesOfJson(const DetectLine& l) {
  return l.index <= 3 && (l.first.starts_with("[") || l.first.starts_with("{"));
}

constexpr DetectRule kAmdSmiDetect[] = {
    {51, DetectRule::kLine, [](const DetectLine& l) { return IsMonitorHeader(l.text); }},
    {52, DetectRule::kLine,
     [](const DetectLine& l) {
       return FirstLinesOfJson(l) &&
              (l.text.starts_with("\"gpu\":") || l.text.starts_with("[{\"gpu\":") ||
               l.text.starts_with("{\"gpu\":"));
     }},
    {53, DetectRule::kLine,
     [](const DetectLine& l) {
       if (l.index != 0 || !IsAmdCsvHeader(l.text)) return false;
       const std::string t = AsciiLower(l.text);
       return t.starts_with("gpu,") || t.starts_with("timestamp,gpu,");
     }},
};

constexpr DetectRule kRocmSmiDetect[] = {
    {54, DetectRule::kLine,
     [](const DetectLine& l) {
       return l.index == 0 && AsciiLower(l.text).starts_with("device,") && IsAmdCsvHeader(l.text);
     }},
    {55, DetectRule::kLine,
     [](const DetectLine& l) {
       return l.index == 0 && l.text.starts_with("{\"card") &&
              l.text.find("\": {") != std::string_view::npos;
     }},
    {56, DetectRule::kLine,
     [](const DetectLine& l) {
       int gpu;
       std::string_view key, value;
       return ParseRocmLogLine(l.text, &gpu, &key, &value) && KeyOf(key) != Key::kNone;
     }},
};

constexpr DetectRule kSplitDetect[] = {
    {57, DetectRule::kLine,
     [](const DetectLine& l) {
       return l.index == 0 && SplitHalfOfHeader(l.text) != SplitHalf::kNone;
     }},
};

}  // namespace

SplitHalf SplitHalfOfHeader(std::string_view header) {
  std::vector<std::string_view> cells;
  columns::SplitCells(TrimSpace(header), ',', &cells);
  std::vector<std::string> names;
  for (auto c : cells) names.push_back(AsciiLower(TrimSpaceAndQuotes(c)));
  if (names.size() < 3 || names[0] != "timestamp" || names[1] != "device") return SplitHalf::kNone;
  bool power = false, use = false;
  for (size_t i = 2; i < names.size(); ++i) {
    const std::string& n = names[i];
    if (n == "power_watts" || n == "power_cap_watts") {
      power = true;
    } else if (n == "gpu_use_percent" || n == "gfx_activity" || n == "vram_total_bytes" ||
               n == "vram_used_bytes") {
      use = true;
    } else {
      return SplitHalf::kNone;
    }
  }
  if (power == use) return SplitHalf::kNone;
  return power ? SplitHalf::kPower : SplitHalf::kUse;
}

SplitHalf SplitHalfOfFile(const std::string& path) {
  auto reader = LineReader::Open(path);
  if (!reader.ok()) return SplitHalf::kNone;
  std::string_view line;
  bool complete;
  for (int i = 0; i < 8; ++i) {
    auto r = (*reader)->Next(&line, &complete);
    if (!r.ok() || !*r) return SplitHalf::kNone;
    const std::string_view t = TrimSpace(line);
    if (t.empty()) continue;
    return SplitHalfOfHeader(t);
  }
  return SplitHalf::kNone;
}

extern const Format kAmdSmiFormat;
const Format kAmdSmiFormat{"amd-smi",
                           "amd-smi monitor / metric output: CSV, JSON, the monitor table",
                           kAmdSmiDetect, OpenAmd<Tool::kAmdSmi>, write::kAmdSmiWriters};

extern const Format kRocmSmiFormat;
const Format kRocmSmiFormat{
    "rocm-smi",
    "rocm-smi --showpower --showuse --showmemuse --showtemp: CSV, JSON, the GPU[N] log "
    "(date lines or --interval-ms)",
    kRocmSmiDetect, OpenAmd<Tool::kRocmSmi>, write::kRocmSmiWriters};

extern const Format kRocmSplitFormat;
const Format kRocmSplitFormat{"rocm-smi-split",
                              "one host's rocm-smi data in two CSVs (power_watts; "
                              "gpu_use_percent, vram_*_bytes), joined by (time, device)",
                              kSplitDetect, OpenAmd<Tool::kSplit>};

}  // namespace ww::ingest
