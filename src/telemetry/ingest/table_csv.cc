#include "telemetry/ingest/table_csv.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <unordered_map>

#include "core/sample_ranges.h"
#include "core/strings.h"
#include "core/timefmt.h"
#include "telemetry/ingest/format.h"

namespace ww::ingest {
namespace {

enum class F : uint8_t {
  kNone,
  kTime,
  kRuntime,
  kGpu,
  kUuid,
  kName,
  kPower,
  kPowerLimit,
  kPowerPct,
  kUtil,
  kMemUtil,
  kMemUsed,
  kMemUsedPct,
  kMemTotal,
  kTemp,
  kSmClock,
  kMemClock,
};

const char* FieldName(F f) {
  switch (f) {
    case F::kTime:
      return "time";
    case F::kRuntime:
      return "runtime";
    case F::kGpu:
      return "gpu";
    case F::kUuid:
      return "uuid";
    case F::kName:
      return "name";
    case F::kPower:
      return "power";
    case F::kPowerLimit:
      return "power_limit";
    case F::kPowerPct:
      return "power_pct";
    case F::kUtil:
      return "util";
    case F::kMemUtil:
      return "mem_util";
    case F::kMemUsed:
      return "memory_used";
    case F::kMemUsedPct:
      return "memory_used_pct";
    case F::kMemTotal:
      return "memory_total";
    case F::kTemp:
      return "temperature";
    case F::kSmClock:
      return "sm_clock";
    case F::kMemClock:
      return "mem_clock";
    default:
      return "";
  }
}

F FieldFromName(std::string_view n) {
  for (F f : {F::kTime, F::kRuntime, F::kGpu, F::kUuid, F::kName, F::kPower, F::kPowerLimit,
              F::kPowerPct, F::kUtil, F::kMemUtil, F::kMemUsed, F::kMemUsedPct, F::kMemTotal,
              F::kTemp, F::kSmClock, F::kMemClock}) {
    if (n == FieldName(f)) return f;
  }
  return F::kNone;
}

enum class TimeUnit : uint8_t { kAuto, kSec, kMs };

struct Role {
  F f = F::kNone;
  int gpu = -1;
  double scale = 1;
  TimeUnit time_unit = TimeUnit::kAuto;
  std::string unit;
  std::string name;  // header text
  bool mapped = false;
  std::string bad_unit;  // a unit in brackets that cannot be placed ("power (dBm)")
};

struct UnitInfo {
  std::string unit;
  double scale = 1;
  TimeUnit time_unit = TimeUnit::kAuto;
  bool ratio = false;
};

std::optional<UnitInfo> ParseUnit(std::string_view u) {
  static const std::unordered_map<std::string, UnitInfo> kUnits = {
      {"w", {"W", 1}},
      {"watt", {"W", 1}},
      {"watts", {"W", 1}},
      {"kw", {"kW", 1000}},
      {"mw", {"mW", 0.001}},
      {"%", {"%", 1}},
      {"pct", {"%", 1}},
      {"percent", {"%", 1}},
      {"perc", {"%", 1}},
      {"percentage", {"%", 1}},
      {"mib", {"MiB", 1}},
      {"mb", {"MB (as MiB)", 1}},
      {"gib", {"GiB", 1024}},
      {"gb", {"GB (as GiB)", 1024}},
      {"kib", {"KiB", 1.0 / 1024}},
      {"kb", {"KB (as KiB)", 1.0 / 1024}},
      {"b", {"bytes", 1.0 / 1048576}},
      {"bytes", {"bytes", 1.0 / 1048576}},
      {"byte", {"bytes", 1.0 / 1048576}},
      {"c", {"C", 1}},
      {"celsius", {"C", 1}},
      {"degc", {"C", 1}},
      {"mhz", {"MHz", 1}},
      {"ghz", {"GHz", 1000}},
      {"ms", {"ms", 1, TimeUnit::kMs}},
      {"s", {"s", 1, TimeUnit::kSec}},
      {"sec", {"s", 1, TimeUnit::kSec}},
      {"secs", {"s", 1, TimeUnit::kSec}},
      {"seconds", {"s", 1, TimeUnit::kSec}},
      {"ratio", {"ratio", 100, TimeUnit::kAuto, true}},
      {"frac", {"ratio", 100, TimeUnit::kAuto, true}},
      {"fraction", {"ratio", 100, TimeUnit::kAuto, true}},
  };
  std::string key = AsciiLower(TrimSpace(u));
  if (key.rfind("in ", 0) == 0) key = std::string(TrimSpace(std::string_view(key).substr(3)));
  // The degree sign: "°C" (UTF-8), "ºC".
  for (const char* deg : {"\xc2\xb0", "\xc2\xba"}) {
    if (key.rfind(deg, 0) == 0) key = key.substr(2);
  }
  auto it = kUnits.find(key);
  if (it == kUnits.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> Words(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  auto flush = [&] {
    if (!cur.empty()) out.push_back(cur);
    cur.clear();
  };
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(s[i])));
    const bool alpha = c >= 'a' && c <= 'z';
    const bool digit = c >= '0' && c <= '9';
    if (c == '%') {
      flush();
      out.push_back("%");
    } else if (alpha || digit) {
      // "gpu0" -> "gpu" "0": a letter run followed by digits splits (GPU numbers, mostly).
      if (!cur.empty() && digit && std::isalpha(static_cast<unsigned char>(cur.back()))) flush();
      if (!cur.empty() && alpha && std::isdigit(static_cast<unsigned char>(cur.back()))) flush();
      cur += c;
    } else {
      flush();
    }
  }
  flush();
  return out;
}

bool AllDigits(const std::string& w) {
  return !w.empty() && w.size() <= 4 &&
         std::all_of(w.begin(), w.end(), [](char c) { return c >= '0' && c <= '9'; });
}

Role Classify(std::string_view raw_name, bool wandb) {
  Role r;
  r.name = std::string(TrimSpaceAndQuotes(raw_name));
  const std::string& name = r.name;
  // W&B's keys without the `system.` prefix (`gpu.0.powerWatts`, as some exports name them).
  const bool short_wandb_key = name.rfind("gpu.", 0) == 0 &&
                               std::count(name.begin(), name.end(), '.') >= 2 &&
                               AllDigits(name.substr(4, name.find('.', 4) - 4));
  if (wandb || name.rfind("system.gpu.", 0) == 0 || short_wandb_key || name == "_timestamp" ||
      name == "_runtime") {
    if (name == "_timestamp") {
      r.f = F::kTime;
      r.time_unit = TimeUnit::kSec;
      r.unit = "epoch s";
      return r;
    }
    if (name == "_runtime") {
      r.f = F::kRuntime;
      r.unit = "s since start";
      return r;
    }
    if (name.rfind("system.gpu.", 0) == 0 || short_wandb_key) {
      std::string_view rest = std::string_view(name).substr(short_wandb_key ? 4 : 11);
      size_t dot = rest.find('.');
      if (dot == std::string_view::npos) return r;
      const std::string num(rest.substr(0, dot));
      if (!AllDigits(num)) return r;  // system.gpu.process.N.*: the same GPU again
      const std::string_view key = rest.substr(dot + 1);
      static const std::unordered_map<std::string_view, std::pair<F, double>> kKeys = {
          {"gpu", {F::kUtil, 1}},
          {"memory", {F::kMemUtil, 1}},
          {"memoryAllocated", {F::kMemUsedPct, 1}},
          {"memoryAllocatedBytes", {F::kMemUsed, 1.0 / 1048576}},
          {"powerWatts", {F::kPower, 1}},
          {"powerPercent", {F::kPowerPct, 1}},
          {"temp", {F::kTemp, 1}},
          {"smClock", {F::kSmClock, 1}},
          {"memoryClock", {F::kMemClock, 1}},
      };
      auto it = kKeys.find(key);
      if (it == kKeys.end()) return r;
      r.f = it->second.first;
      r.scale = it->second.second;
      r.gpu = std::stoi(num);
      r.unit = key == "memoryAllocatedBytes" ? "bytes" : "";
      return r;
    }
    if (wandb) return r;
  }
  std::string_view body = name;
  std::optional<UnitInfo> unit;
  // A unit in brackets or parentheses at the end: "power.draw [W]", "Power (W)".
  if (!body.empty() && (body.back() == ']' || body.back() == ')')) {
    const char open = body.back() == ']' ? '[' : '(';
    size_t at = body.rfind(open);
    if (at != std::string_view::npos) {
      const std::string_view text = body.substr(at + 1, body.size() - at - 2);
      unit = ParseUnit(text);
      if (unit) {
        body = body.substr(0, at);
      } else if (!TrimSpace(text).empty()) {
        r.bad_unit = std::string(TrimSpace(text));
      }
    }
  }
  std::vector<std::string> words = Words(body);
  if (!unit && words.size() >= 2) {
    if (auto u = ParseUnit(words.back())) {
      unit = u;
      words.pop_back();
    }
  }
  if (!unit && words.size() == 1) {
    // A column named only by its unit: "watts", "mib".
    if (auto u = ParseUnit(words.back()); u && (u->unit == "W" || u->unit == "MiB")) {
      unit = u;
      words.pop_back();
    }
  }
  // The GPU of a wide layout: "gpu 0 ...", "... gpu 3", "cuda1", "device 2", or a trailing
  // number after a measurement word ("power_0").
  int gpu = -1;
  for (size_t i = 0; i + 1 < words.size(); ++i) {
    const std::string& w = words[i];
    if ((w == "gpu" || w == "cuda" || w == "device" || w == "dev" || w == "card") &&
        AllDigits(words[i + 1])) {
      gpu = std::stoi(words[i + 1]);
      words.erase(words.begin() + static_cast<long>(i), words.begin() + static_cast<long>(i) + 2);
      break;
    }
  }
  if (gpu < 0 && words.size() >= 2 && AllDigits(words.back())) {
    gpu = std::stoi(words.back());
    words.pop_back();
  }
  auto has = [&](std::initializer_list<const char*> ws) {
    for (const char* w : ws) {
      if (std::find(words.begin(), words.end(), w) != words.end()) return true;
    }
    return false;
  };
  auto only = [&](std::initializer_list<const char*> allowed) {
    if (words.empty()) return false;
    for (const auto& w : words) {
      bool ok = false;
      for (const char* a : allowed) ok |= w == a;
      if (!ok) return false;
    }
    return true;
  };
  const std::string u = unit ? unit->unit : "";
  F f = F::kNone;
  const bool mem = has({"mem", "memory", "fb", "vram", "framebuffer"});
  const bool power = has({"power", "pwr", "energy"}) || (words.empty() && u == "W");
  if (has({"cpu", "ram", "host", "disk", "net", "network", "swap", "enc", "dec", "encoder",
           "decoder", "pcie", "nvlink", "fan"})) {
    f = F::kNone;
  } else if (gpu < 0 &&
             only({"time", "timestamp", "ts", "datetime", "date", "epoch", "unix", "unixtime",
                   "stamp", "wall", "utc", "iso", "local", "sample"}) &&
             has({"time", "timestamp", "ts", "datetime", "date", "epoch", "unixtime"})) {
    f = F::kTime;
  } else if (has({"uuid"})) {
    f = F::kUuid;
  } else if (gpu < 0 &&
             only({"gpu", "id", "index", "idx", "device", "dev", "num", "number", "cuda", "card",
                   "minor", "rank", "local"}) &&
             !has({"rank"}) && u.empty()) {
    f = F::kGpu;
  } else if (only({"name", "gpu", "model", "device", "product", "type"}) &&
             has({"name", "model", "product"})) {
    f = F::kName;
  } else if (power && !has({"energy"})) {
    if (has({"limit", "cap", "max", "enforced", "tdp"})) {
      f = F::kPowerLimit;
    } else if (u == "%") {
      f = F::kPowerPct;
    } else {
      f = F::kPower;
    }
  } else if (has({"temp", "temperature"}) && !mem) {
    f = F::kTemp;
  } else if (has({"clock", "clk", "freq", "frequency"})) {
    f = mem ? F::kMemClock : F::kSmClock;
  } else if (mem) {
    if (has({"util", "utilization", "utilisation", "bandwidth", "bw", "busy"})) {
      f = F::kMemUtil;
    } else if (has({"total", "capacity", "size"})) {
      f = F::kMemTotal;
    } else if (has({"free", "reserved", "temp"})) {
      f = F::kNone;
    } else if (u == "%") {
      f = F::kMemUsedPct;
    } else {
      f = F::kMemUsed;
    }
  } else if (has({"util", "utilization", "utilisation", "usage", "load", "busy"}) ||
             (only({"gpu", "sm"}) && u == "%")) {
    f = F::kUtil;
  }
  r.f = f;
  r.gpu = (f == F::kTime || f == F::kGpu || f == F::kUuid || f == F::kName) ? -1 : gpu;
  if (f == F::kNone || f == F::kGpu || f == F::kUuid || f == F::kName || unit) r.bad_unit.clear();
  if (unit) {
    r.unit = unit->unit;
    r.time_unit = unit->time_unit;
    if (f != F::kTime) r.scale = unit->scale;
    if (unit->ratio && f != F::kUtil && f != F::kMemUtil) r.scale = 1;
  }
  if ((f == F::kMemUsed || f == F::kMemTotal) && !unit) r.unit = "MiB (assumed)";
  return r;
}

using Range = PlausibleRange;
Range RangeFor(F f) {
  switch (f) {
    case F::kPower:
    case F::kPowerLimit:
      return kPowerRangeW;
    case F::kPowerPct:
      return {0, 200};
    case F::kUtil:
    case F::kMemUtil:
    case F::kMemUsedPct:
      return kPercentRange;
    case F::kMemUsed:
    case F::kMemTotal:
      return kMemoryRangeMib;
    case F::kTemp:
      return kTemperatureRangeC;
    case F::kSmClock:
    case F::kMemClock:
      return kClockRangeMhz;
    default:
      return {-1e300, 1e300};
  }
}

bool IsReading(F f) { return f == F::kPower || f == F::kUtil; }

char PickDelimiter(std::string_view header) {
  size_t commas = 0, tabs = 0, semis = 0;
  bool q = false;
  for (char c : header) {
    if (c == '"') q = !q;
    if (q) continue;
    commas += c == ',';
    tabs += c == '\t';
    semis += c == ';';
  }
  if (tabs > commas && tabs >= semis) return '\t';
  if (semis > commas) return ';';
  return ',';
}

// Quote-aware split (RFC 4180 without embedded newlines); cells keep their quotes, which
// TrimSpaceAndQuotes and ParseNumber drop.
void SplitCells(std::string_view line, char delim, std::vector<std::string_view>* out) {
  out->clear();
  if (line.find('"') == std::string_view::npos) {
    // Cells are short (a few bytes): a plain loop beats a memchr call per cell.
    const char* b = line.data();
    const char* e = b + line.size();
    const char* cell = b;
    for (const char* p = b; p < e; ++p) {
      if (*p == delim) {
        out->emplace_back(cell, static_cast<size_t>(p - cell));
        cell = p + 1;
      }
    }
    out->emplace_back(cell, static_cast<size_t>(e - cell));
    return;
  }
  size_t start = 0;
  bool q = false;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '"') q = !q;
    if (!q && line[i] == delim) {
      out->push_back(line.substr(start, i - start));
      start = i + 1;
    }
  }
  out->push_back(line.substr(start));
}

// A column that names one GPU and nothing else: `GPU 0`, `gpu.3`, `gpu_3`, `cuda1`, `device 2`,
// or a bare `3` (pandas pivot on an integer gpu column). Its GPU, or -1. (`Unnamed: 0`, a pandas
// index read back, is not one.)
int BareGpuColumn(std::string_view raw) {
  const std::vector<std::string> w = Words(TrimSpaceAndQuotes(raw));
  if (w.size() == 1 && AllDigits(w[0])) return std::stoi(w[0]);
  if (w.size() == 2 && AllDigits(w[1]) &&
      (w[0] == "gpu" || w[0] == "cuda" || w[0] == "device" || w[0] == "dev" || w[0] == "card")) {
    return std::stoi(w[1]);
  }
  return -1;
}

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
    bool complete;
    for (;;) {
      auto r = reader().Next(&line, &complete);
      if (!r.ok()) return r.status();
      if (!*r) return Status::InvalidInput(fmt::format("{}: empty file", path()));
      if (!TrimSpace(line).empty() && TrimSpace(line).front() != '#') break;
    }
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

  // A flat JSON object into cells_ by key (nested values skipped). false with *err when
  // malformed.
  bool ScanJson(std::string_view t, std::string* err) {
    std::fill(cells_.begin(), cells_.end(), std::string_view());
    size_t i = 1;
    const size_t n = t.size();
    auto ws = [&] {
      while (i < n && (t[i] == ' ' || t[i] == '\t')) ++i;
    };
    auto string_end = [&](size_t from) -> size_t {  // index of the closing quote
      for (size_t k = from; k < n; ++k) {
        if (t[k] == '\\') {
          ++k;
        } else if (t[k] == '"') {
          return k;
        }
      }
      return std::string_view::npos;
    };
    for (;;) {
      ws();
      if (i < n && t[i] == '}') return true;
      if (i >= n || t[i] != '"') {
        *err = "expected a key";
        return false;
      }
      const size_t kend = string_end(i + 1);
      if (kend == std::string_view::npos) {
        *err = "unterminated key";
        return false;
      }
      const std::string_view key = t.substr(i + 1, kend - i - 1);
      i = kend + 1;
      ws();
      if (i >= n || t[i] != ':') {
        *err = "expected ':'";
        return false;
      }
      ++i;
      ws();
      if (i >= n) {
        *err = "no value";
        return false;
      }
      size_t vstart = i, vend;
      if (t[i] == '"') {
        vend = string_end(i + 1);
        if (vend == std::string_view::npos) {
          *err = "unterminated string";
          return false;
        }
        ++vend;
        i = vend;
      } else if (t[i] == '{' || t[i] == '[') {
        int depth = 0;
        for (; i < n; ++i) {
          if (t[i] == '"') {
            i = string_end(i + 1);
            if (i == std::string_view::npos) {
              *err = "unterminated string";
              return false;
            }
          } else if (t[i] == '{' || t[i] == '[') {
            ++depth;
          } else if ((t[i] == '}' || t[i] == ']') && --depth == 0) {
            ++i;
            break;
          }
        }
        if (depth != 0) {
          *err = "unbalanced brackets";
          return false;
        }
        vend = vstart;  // nested: no value for us
      } else {
        while (i < n && t[i] != ',' && t[i] != '}' && t[i] != ' ') ++i;
        vend = i;
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
      cells_[static_cast<size_t>(it->second)] = t.substr(vstart, vend - vstart);
      ws();
      if (i < n && t[i] == ',') {
        ++i;
        continue;
      }
      if (i < n && t[i] == '}') return true;
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

const std::vector<std::string>& MapFieldNames() {
  static const std::vector<std::string> kNames = {
      "time",     "gpu",         "uuid",         "name",        "power",    "power_limit", "util",
      "mem_util", "memory_used", "memory_total", "temperature", "sm_clock", "mem_clock"};
  return kNames;
}

ColumnMeaning RecognizeColumn(std::string_view name, bool wandb) {
  const Role r = Classify(name, wandb);
  ColumnMeaning m;
  m.field = FieldName(r.f);
  m.gpu = r.gpu;
  m.unit = r.f == F::kTime ? (r.time_unit == TimeUnit::kMs    ? "epoch ms"
                              : r.time_unit == TimeUnit::kSec ? "epoch s"
                                                              : "")
                           : r.unit;
  m.scale = r.scale;
  m.bad_unit = r.bad_unit;
  m.time_ms = r.time_unit == TimeUnit::kMs;
  return m;
}

bool LooksLikeCustomCsvHeader(std::string_view line) {
  const char d = PickDelimiter(line);
  std::vector<std::string_view> cells;
  SplitCells(line, d, &cells);
  if (cells.size() < 2) return false;
  for (auto c : cells) {
    if (IsReading(Classify(c, false).f)) return true;
  }
  return false;
}

bool LooksLikeWideGpuHeader(std::string_view line) {
  const char d = PickDelimiter(line);
  std::vector<std::string_view> cells;
  SplitCells(line, d, &cells);
  bool time = false, gpu_column = false;
  for (auto c : cells) {
    const Role r = Classify(c, false);
    time |= r.f == F::kTime;
    gpu_column |= r.f == F::kNone && BareGpuColumn(c) >= 0;
  }
  return time && gpu_column;
}

bool LooksLikeWandbCsvHeader(std::string_view line) {
  return line.find("system.gpu.") != std::string_view::npos &&
         (line.find("_timestamp") != std::string_view::npos ||
          line.find("_runtime") != std::string_view::npos);
}

bool LooksLikeWandbJsonLine(std::string_view line) {
  const std::string_view t = TrimSpace(line);
  return !t.empty() && t.front() == '{' && t.find("\"system.gpu.") != std::string_view::npos;
}

Result<OpenedFile> OpenCustomCsv(std::unique_ptr<LineReader> reader, const std::string& host,
                                 uint16_t host_index, const ReaderOptions& options, bool wandb) {
  auto src =
      std::make_unique<TableSource>(std::move(reader), host, host_index, options,
                                    wandb ? TableSource::Kind::kWandbCsv : TableSource::Kind::kCsv);
  WW_RETURN_IF_ERROR(src->Init());
  OpenedFile f;
  f.file = src.get();
  f.source = std::move(src);
  return f;
}

Result<OpenedFile> OpenWandbJsonl(std::unique_ptr<LineReader> reader, const std::string& host,
                                  uint16_t host_index, const ReaderOptions& options) {
  auto src = std::make_unique<TableSource>(std::move(reader), host, host_index, options,
                                           TableSource::Kind::kWandbJsonl);
  WW_RETURN_IF_ERROR(src->Init());
  OpenedFile f;
  f.file = src.get();
  f.source = std::move(src);
  return f;
}

// --format wandb: a W&B CSV header on the first line or a W&B JSON record anywhere in the first
// lines; JSON lines when the first record is an object, else the CSV export.
namespace {
constexpr DetectRule kWandbDetect[] = {
    {40, DetectRule::kLine,
     [](const DetectLine& l) { return l.index == 0 && LooksLikeWandbCsvHeader(l.text); }},
    {140, DetectRule::kLine, [](const DetectLine& l) { return LooksLikeWandbJsonLine(l.text); }},
};

Result<OpenedFile> OpenWandb(const OpenRequest& r, std::unique_ptr<LineReader> lines) {
  std::string_view line;
  bool complete;
  bool jsonl = false;
  {
    auto peek = LineReader::Open(r.path);
    if (!peek.ok()) return peek.status();
    for (;;) {
      auto next = (*peek)->Next(&line, &complete);
      if (!next.ok()) return next.status();
      if (!*next) break;
      if (TrimSpace(line).empty()) continue;
      jsonl = TrimSpace(line).front() == '{';
      break;
    }
  }
  return jsonl ? OpenWandbJsonl(std::move(lines), r.host, r.host_index, r.reader)
               : OpenCustomCsv(std::move(lines), r.host, r.host_index, r.reader, true);
}

// --format custom-csv: an nvidia-smi-like header with --map, --map on a first line that is not
// whitespace-only, or a header naming a power or utilization column (after every rule that
// looks further down the first lines).
constexpr DetectRule kCustomCsvDetect[] = {
    {80, DetectRule::kLine,
     [](const DetectLine& l) {
       return l.index == 0 && !l.options.map.empty() && LooksLikeNvsmiCsvHeader(l.text);
     }},
    // After the table's rule 100, which takes a whitespace-only first line.
    {101, DetectRule::kLine,
     [](const DetectLine& l) {
       return l.index == 0 && !l.options.map.empty() && l.text.front() != '{';
     }},
    {150, DetectRule::kLine,
     [](const DetectLine& l) { return l.index == 0 && LooksLikeCustomCsvHeader(l.text); }},
};

// --format wide: a `,timestamp,GPU 0,GPU 1` or `gpu.3` header.
constexpr DetectRule kWideDetect[] = {
    {70, DetectRule::kLine,
     [](const DetectLine& l) { return l.index == 0 && LooksLikeWideGpuHeader(l.text); }},
};

Result<OpenedFile> OpenCsv(const OpenRequest& r, std::unique_ptr<LineReader> lines) {
  return OpenCustomCsv(std::move(lines), r.host, r.host_index, r.reader, false);
}
}  // namespace

extern const Format kWandbFormat;
const Format kWandbFormat{"wandb", "W&B system metrics (CSV or JSON lines)", kWandbDetect,
                          OpenWandb, write::kWandbWriters};

extern const Format kCustomCsvFormat;
const Format kCustomCsvFormat{"custom-csv", "CSVs with a power or utilization column (--map)",
                              kCustomCsvDetect, OpenCsv, write::kCustomCsvWriters};

extern const Format kWideFormat;
const Format kWideFormat{"wide",
                         "one column per GPU (',timestamp,GPU 0,GPU 1', 'gpu.3'; --wide METRIC)",
                         kWideDetect, OpenCsv, write::kWideWriters};

}  // namespace ww::ingest
