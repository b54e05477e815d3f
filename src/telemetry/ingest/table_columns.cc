// The column recognizer (table_columns.h): header cells to fields, units and GPUs.
#include "telemetry/ingest/table_columns.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <unordered_map>

#include "core/strings.h"

namespace ww::ingest {
namespace columns {

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

namespace {

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

}  // namespace

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

PlausibleRange RangeFor(F f) {
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

}  // namespace columns

const std::vector<std::string>& MapFieldNames() {
  static const std::vector<std::string> kNames = {
      "time",     "gpu",         "uuid",         "name",        "power",    "power_limit", "util",
      "mem_util", "memory_used", "memory_total", "temperature", "sm_clock", "mem_clock"};
  return kNames;
}

ColumnMeaning RecognizeColumn(std::string_view name, bool wandb) {
  using columns::F;
  using columns::TimeUnit;
  const columns::Role r = columns::Classify(name, wandb);
  ColumnMeaning m;
  m.field = columns::FieldName(r.f);
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

}  // namespace ww::ingest
