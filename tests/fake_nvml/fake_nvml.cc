// A fake libnvidia-ml.so.1: the NVML entry points wattwatch (and nvitop-style pollers) call,
// behaving as NVML documents them, driven by a script (README.md in this folder). It injects
// unsupported fields, lost GPUs, calls that block, Xid events and counters that wrap.
//
// Semantics implemented (from nvml.h / the NVML API reference, not from wattwatch):
//  - nvmlInit is reference counted; every other call returns NVML_ERROR_UNINITIALIZED before it.
//  - Null output pointers and foreign handles are NVML_ERROR_INVALID_ARGUMENT.
//  - nvmlDeviceGetPowerUsage is the trailing 1 s average of board power (mW); the
//    NVML_FI_DEV_POWER_INSTANT field is the power now; the energy counter (mJ) is the exact
//    integral of board power since "driver load" (script time 0).
//  - PCIe fields 197/198 are cumulative byte counters that "can be wrapped"; NVLink 138/139 are
//    cumulative KiB counters, scopeId UINT_MAX summing all links.
//  - A lost GPU answers NVML_ERROR_GPU_IS_LOST to everything.
//  - Events reach only sets the device was registered on, for events raised after registration.
//  - GPM metrics are averages over the interval between two samples of the same device.
//
// Time: script milliseconds since the first nvmlInit, on the steady clock; a test that wants
// determinism calls fakeNvmlSetTimeMs() (found with dlsym) and time then moves only when told.
// Thread-safety: one mutex guards the state; it is released while an injected block sleeps, so a
// blocked call on one GPU never blocks the others. State objects are never freed: a thread
// stuck in a blocked call may still hold one after fakeNvmlReset().
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fake_nvml_abi.h"

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))
// Entry points that replaced an older name. The legacy build (FAKE_NVML_LEGACY, an older driver)
// keeps them hidden, so only the older name is exported and a loader must bind its fallback.
#ifdef FAKE_NVML_LEGACY
#define FAKE_EXPORT_NEWER extern "C" __attribute__((visibility("hidden")))
#else
#define FAKE_EXPORT_NEWER FAKE_EXPORT
#endif

namespace {

// A step function of script time: the value set at the latest time <= t.
struct Series {
  std::vector<std::pair<int64_t, double>> steps;  // sorted by time
  bool empty() const { return steps.empty(); }
  void Set(int64_t t, double v) {
    auto it = steps.begin();
    while (it != steps.end() && it->first <= t) ++it;
    steps.insert(it, {t, v});
  }
  double At(int64_t t, double fallback) const {
    double v = fallback;
    for (const auto& [st, sv] : steps) {
      if (st > t) break;
      v = sv;
    }
    return v;
  }
  // Integral of the step function over [a, b] in value*ms (before the first step: fallback).
  double Integral(int64_t a, int64_t b, double fallback) const {
    if (b <= a) return 0;
    double sum = 0;
    int64_t t = a;
    double v = At(a, fallback);
    for (const auto& [st, sv] : steps) {
      if (st <= a) continue;
      if (st >= b) break;
      sum += v * static_cast<double>(st - t);
      t = st;
      v = sv;
    }
    sum += v * static_cast<double>(b - t);
    return sum;
  }
};

// A cumulative counter: rebased by "set" steps, advanced by integrating a rate series.
struct Counter {
  std::vector<std::pair<int64_t, unsigned long long>> bases;  // (time, value set)
  int bits = 64;
  // rate_per_ms: units per ms of the rate series value.
  unsigned long long At(int64_t t, const Series& rate, double rate_default,
                        double units_per_ms) const {
    int64_t since = 0;
    unsigned long long base = 0;
    for (const auto& [bt, bv] : bases) {
      if (bt > t) break;
      since = bt;
      base = bv;
    }
    const double added = rate.Integral(since, t, rate_default) * units_per_ms;
    unsigned long long v = base + static_cast<unsigned long long>(std::llround(added));
    if (bits < 64) v &= (1ULL << bits) - 1;
    return v;
  }
};

struct Block {
  int64_t at_ms;
  std::string call;  // "*" for any
  double seconds;    // < 0: forever
  bool fired = false;
};

struct Xid {
  int64_t at_ms;
  unsigned long long code;
};

struct Device {
  unsigned index = 0;
  std::string name = "NVIDIA H100 80GB HBM3";
  std::string uuid;
  std::string pci;
  unsigned arch = NVML_DEVICE_ARCH_HOPPER;
  std::map<std::string, Series> series;
  std::set<std::string> unsupported;
  int64_t lost_at_ms = -1;
  std::vector<Block> blocks;
  std::vector<Xid> xids;
  Counter energy, pcie_tx, pcie_rx, nvlink_tx, nvlink_rx;
};

struct EventSet {
  std::map<const Device*, int64_t> registered_at;  // device -> time of registration
  std::set<std::pair<const Device*, size_t>> delivered;
};

struct GpmSample {
  const Device* device = nullptr;
  int64_t t_ms = -1;
};

struct State {
  bool driver_absent = false;
  std::string driver_version = "550.54.15";
  std::vector<Device> devices;
  std::string script_error;
};

std::mutex g_mu;
State* g_state = nullptr;  // never freed (see the file comment)
// Every state ever loaded, so a superseded one stays reachable (and leak checkers quiet).
std::vector<State*>* g_all_states = new std::vector<State*>();
int g_refcount = 0;
bool g_manual_time = false;
int64_t g_manual_ms = 0;
std::chrono::steady_clock::time_point g_start;
std::map<std::string, unsigned long long> g_calls;
// Script time 0 as NVML timestamps (microseconds since 1970): 2024-04-05 06:17:19 UTC.
constexpr long long kEpochUs = 1712297839000000LL;

const std::vector<std::string> kSettable = {"power_mw",
                                            "power_avg_mw",
                                            "power_instant_mw",
                                            "power_limit_mw",
                                            "util_gpu",
                                            "util_mem",
                                            "sm_mhz",
                                            "mem_mhz",
                                            "clock_reasons",
                                            "temp_c",
                                            "mem_used_bytes",
                                            "mem_total_bytes",
                                            "mem_used_mib",
                                            "mem_total_mib",
                                            "pstate",
                                            "pcie_tx_bytes_per_s",
                                            "pcie_rx_bytes_per_s",
                                            "nvlink_tx_kib_per_s",
                                            "nvlink_rx_kib_per_s",
                                            "gpm_sm_util",
                                            "gpm_sm_occupancy",
                                            "gpm_tensor_util",
                                            "gpm_dram_bw_util"};
const std::vector<std::string> kCounters = {"energy_mj", "pcie_tx_bytes", "pcie_rx_bytes",
                                            "nvlink_tx_kib", "nvlink_rx_kib"};
const std::vector<std::string> kUnsupportable = {
    "power",     "power_instant", "energy",      "power_limit",  "utilization", "sm_clock",
    "mem_clock", "clock_reasons", "temperature", "memory",       "pstate",      "pcie",
    "nvlink",    "gpm",           "xid",         "field_values", "arch",        "memory_v2"};

double Default(const std::string& key) {
  static const std::map<std::string, double> d = {{"power_mw", 100000},
                                                  {"power_limit_mw", 700000},
                                                  {"util_gpu", 0},
                                                  {"util_mem", 0},
                                                  {"sm_mhz", 1980},
                                                  {"mem_mhz", 2619},
                                                  {"clock_reasons", 0},
                                                  {"temp_c", 40},
                                                  {"mem_used_bytes", 0},
                                                  {"mem_total_bytes", 85520809984.0},
                                                  {"pstate", 0},
                                                  {"pcie_tx_bytes_per_s", 0},
                                                  {"pcie_rx_bytes_per_s", 0},
                                                  {"nvlink_tx_kib_per_s", 0},
                                                  {"nvlink_rx_kib_per_s", 0},
                                                  {"gpm_sm_util", 0},
                                                  {"gpm_sm_occupancy", 0},
                                                  {"gpm_tensor_util", 0},
                                                  {"gpm_dram_bw_util", 0}};
  auto it = d.find(key);
  return it == d.end() ? 0 : it->second;
}

int64_t NowMs() {
  if (g_manual_time) return g_manual_ms;
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               g_start)
      .count();
}

// ---- script ------------------------------------------------------------------------------

std::vector<std::string> Tokenize(const std::string& line) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    if (i >= line.size() || line[i] == '#') break;
    std::string tok;
    if (line[i] == '"') {
      ++i;
      while (i < line.size() && line[i] != '"') tok += line[i++];
      ++i;
    } else {
      while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') {
        tok += line[i++];
      }
    }
    out.push_back(tok);
  }
  return out;
}

bool ParseNum(const std::string& s, double* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  double v;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    v = static_cast<double>(std::strtoull(s.c_str(), &end, 16));
  } else {
    v = std::strtod(s.c_str(), &end);
  }
  if (end == nullptr || *end != '\0' || errno == ERANGE) return false;
  *out = v;
  return true;
}

bool ParseU64(const std::string& s, unsigned long long* out) {
  if (s.empty() || s[0] == '-') return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 0);
  if (end == nullptr || *end != '\0' || errno == ERANGE) return false;
  *out = v;
  return true;
}

unsigned ArchFromName(const std::string& s, bool* ok) {
  static const std::map<std::string, unsigned> m = {
      {"kepler", 2}, {"maxwell", 3}, {"pascal", 4}, {"volta", 5},     {"turing", 6},
      {"ampere", 7}, {"ada", 8},     {"hopper", 9}, {"blackwell", 10}};
  auto it = m.find(s);
  *ok = it != m.end();
  return *ok ? it->second : 0;
}

class ScriptParser {
 public:
  ScriptParser(State* st, std::string origin) : st_(st), origin_(std::move(origin)) {}

  bool Parse(const std::string& text, const std::string& base_dir) {
    std::istringstream in(text);
    std::string line;
    int lineno = 0;
    // First pass: gpus N must be known before per-GPU lines; accept it anywhere.
    std::vector<std::pair<int, std::vector<std::string>>> lines;
    while (std::getline(in, line)) {
      ++lineno;
      auto toks = Tokenize(line);
      if (toks.empty()) continue;
      if (toks[0] == "gpus") {
        double n;
        if (toks.size() != 2 || !ParseNum(toks[1], &n) || n < 0 || n > 64) {
          return Fail(lineno, "expected `gpus N` with 0 <= N <= 64");
        }
        Resize(static_cast<unsigned>(n));
        continue;
      }
      lines.emplace_back(lineno, std::move(toks));
    }
    for (auto& [ln, toks] : lines) {
      if (!Line(ln, toks, base_dir)) return false;
    }
    return true;
  }

  void Resize(unsigned n) {
    st_->devices.resize(n);
    for (unsigned i = 0; i < n; ++i) {
      Device& d = st_->devices[i];
      d.index = i;
      if (d.uuid.empty()) {
        char buf[64];
        std::snprintf(buf, sizeof(buf), "GPU-fa4e0000-0000-4000-8000-%012u", i);
        d.uuid = buf;
      }
      if (d.pci.empty()) {
        char buf[32];
        std::snprintf(buf, sizeof(buf), "00000000:%02X:00.0", 0x18 + i);
        d.pci = buf;
      }
    }
  }

  const std::string& error() const { return error_; }

 private:
  bool Fail(int line, const std::string& msg) {
    error_ = origin_ + ":" + std::to_string(line) + ": " + msg;
    return false;
  }

  // Resolves a GPU selector ("*" or an index) to device indices.
  bool Gpus(int ln, const std::string& sel, std::vector<unsigned>* out) {
    out->clear();
    if (sel == "*") {
      for (unsigned i = 0; i < st_->devices.size(); ++i) out->push_back(i);
      return true;
    }
    double g;
    if (!ParseNum(sel, &g) || g < 0 || g >= st_->devices.size() || g != std::floor(g)) {
      return Fail(ln, "GPU `" + sel + "` is not * or an index below `gpus` (" +
                          std::to_string(st_->devices.size()) + ")");
    }
    out->push_back(static_cast<unsigned>(g));
    return true;
  }

  bool Set(int ln, int64_t t, const std::vector<unsigned>& gpus, const std::string& key,
           const std::string& value) {
    bool counter = false;
    for (const auto& c : kCounters) counter |= c == key;
    bool settable = false;
    for (const auto& c : kSettable) settable |= c == key;
    if (!counter && !settable) return Fail(ln, "unknown key `" + key + "`");
    if (counter) {
      unsigned long long v;
      if (!ParseU64(value, &v)) return Fail(ln, "`" + key + "` needs an unsigned integer");
      for (unsigned g : gpus) {
        Device& d = st_->devices[g];
        Counter& c = key == "energy_mj"       ? d.energy
                     : key == "pcie_tx_bytes" ? d.pcie_tx
                     : key == "pcie_rx_bytes" ? d.pcie_rx
                     : key == "nvlink_tx_kib" ? d.nvlink_tx
                                              : d.nvlink_rx;
        c.bases.emplace_back(t, v);
      }
      return true;
    }
    double v;
    if (!ParseNum(value, &v)) return Fail(ln, "`" + key + "` needs a number, got `" + value + "`");
    std::string k = key;
    if (k == "mem_used_mib" || k == "mem_total_mib") {
      k = k == "mem_used_mib" ? "mem_used_bytes" : "mem_total_bytes";
      v *= 1048576.0;
    }
    for (unsigned g : gpus) st_->devices[g].series[k].Set(t, v);
    return true;
  }

  bool Timeline(int ln, const std::string& path) {
    std::ifstream in(path);
    if (!in) return Fail(ln, "cannot open timeline `" + path + "`");
    std::string line;
    std::vector<std::string> header;
    int row = 0;
    while (std::getline(in, line)) {
      ++row;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty() || line[0] == '#') continue;
      std::vector<std::string> cells;
      std::stringstream ss(line);
      std::string cell;
      while (std::getline(ss, cell, ',')) {
        while (!cell.empty() && cell.front() == ' ') cell.erase(cell.begin());
        while (!cell.empty() && cell.back() == ' ') cell.pop_back();
        cells.push_back(cell);
      }
      if (header.empty()) {
        header = cells;
        if (header.size() < 3 || header[0] != "t_ms" || header[1] != "gpu") {
          return Fail(ln, path + ":1: timeline header must start with `t_ms,gpu,`");
        }
        continue;
      }
      if (cells.size() != header.size()) {
        return Fail(ln, path + ":" + std::to_string(row) + ": expected " +
                            std::to_string(header.size()) + " cells");
      }
      double t;
      if (!ParseNum(cells[0], &t)) return Fail(ln, path + ":" + std::to_string(row) + ": bad t_ms");
      std::vector<unsigned> gpus;
      if (!Gpus(ln, cells[1], &gpus)) return false;
      for (size_t c = 2; c < cells.size(); ++c) {
        if (cells[c].empty()) continue;  // no change
        if (!Set(ln, static_cast<int64_t>(t), gpus, header[c], cells[c])) return false;
      }
    }
    return true;
  }

  bool Line(int ln, std::vector<std::string>& toks, const std::string& base_dir) {
    int64_t t = 0;
    size_t i = 0;
    if (toks[0] == "at") {
      double tm;
      if (toks.size() < 3 || !ParseNum(toks[1], &tm) || tm < 0) {
        return Fail(ln, "expected `at T_MS COMMAND ...`");
      }
      t = static_cast<int64_t>(tm);
      i = 2;
    }
    const std::string& cmd = toks[i];
    const size_t nargs = toks.size() - i - 1;
    auto arg = [&](size_t k) -> const std::string& { return toks[i + 1 + k]; };
    std::vector<unsigned> gpus;
    if (cmd == "driver") {
      if (nargs != 1 || (arg(0) != "absent" && arg(0) != "present")) {
        return Fail(ln, "expected `driver absent` or `driver present`");
      }
      st_->driver_absent = arg(0) == "absent";
      return true;
    }
    if (cmd == "driver_version") {
      if (nargs != 1) return Fail(ln, "expected `driver_version X`");
      st_->driver_version = arg(0);
      return true;
    }
    if (cmd == "timeline") {
      if (nargs != 1) return Fail(ln, "expected `timeline FILE.csv`");
      std::string p = arg(0);
      if (!p.empty() && p[0] != '/' && !base_dir.empty()) p = base_dir + "/" + p;
      return Timeline(ln, p);
    }
    if (cmd == "gpu") {
      if (nargs < 1 || (nargs - 1) % 2 != 0) return Fail(ln, "expected `gpu G key value ...`");
      if (!Gpus(ln, arg(0), &gpus)) return false;
      for (size_t k = 1; k < nargs; k += 2) {
        const std::string& key = arg(k);
        const std::string& val = arg(k + 1);
        for (unsigned g : gpus) {
          Device& d = st_->devices[g];
          if (key == "name") {
            d.name = val;
          } else if (key == "uuid") {
            d.uuid = val;
          } else if (key == "pci") {
            d.pci = val;
          } else if (key == "arch") {
            bool ok;
            d.arch = ArchFromName(val, &ok);
            if (!ok) return Fail(ln, "unknown arch `" + val + "` (ampere, hopper, blackwell, ...)");
          } else {
            return Fail(ln, "unknown gpu attribute `" + key + "` (name, uuid, pci, arch)");
          }
        }
      }
      return true;
    }
    if (cmd == "set") {
      if (nargs != 3) return Fail(ln, "expected `set G KEY VALUE`");
      if (!Gpus(ln, arg(0), &gpus)) return false;
      return Set(ln, t, gpus, arg(1), arg(2));
    }
    if (cmd == "unsupported") {
      if (nargs != 2) return Fail(ln, "expected `unsupported G WHAT`");
      if (!Gpus(ln, arg(0), &gpus)) return false;
      bool known = false;
      for (const auto& u : kUnsupportable) known |= u == arg(1);
      if (!known) return Fail(ln, "cannot make `" + arg(1) + "` unsupported");
      for (unsigned g : gpus) st_->devices[g].unsupported.insert(arg(1));
      return true;
    }
    if (cmd == "counter_bits") {
      double b;
      if (nargs != 3 || !ParseNum(arg(2), &b) || (b != 32 && b != 64)) {
        return Fail(ln, "expected `counter_bits G pcie|nvlink|energy 32|64`");
      }
      if (!Gpus(ln, arg(0), &gpus)) return false;
      for (unsigned g : gpus) {
        Device& d = st_->devices[g];
        if (arg(1) == "pcie") {
          d.pcie_tx.bits = d.pcie_rx.bits = static_cast<int>(b);
        } else if (arg(1) == "nvlink") {
          d.nvlink_tx.bits = d.nvlink_rx.bits = static_cast<int>(b);
        } else if (arg(1) == "energy") {
          d.energy.bits = static_cast<int>(b);
        } else {
          return Fail(ln, "counter_bits applies to pcie, nvlink or energy");
        }
      }
      return true;
    }
    if (cmd == "lost") {
      if (nargs != 1) return Fail(ln, "expected `at T lost G`");
      if (!Gpus(ln, arg(0), &gpus)) return false;
      for (unsigned g : gpus) st_->devices[g].lost_at_ms = t;
      return true;
    }
    if (cmd == "block") {
      double secs = -1;
      if (nargs != 3 || (arg(2) != "forever" && (!ParseNum(arg(2), &secs) || secs < 0))) {
        return Fail(ln, "expected `at T block G CALL SECONDS|forever`");
      }
      if (!Gpus(ln, arg(0), &gpus)) return false;
      for (unsigned g : gpus) st_->devices[g].blocks.push_back(Block{t, arg(1), secs});
      return true;
    }
    if (cmd == "xid") {
      unsigned long long code;
      if (nargs != 2 || !ParseU64(arg(1), &code)) return Fail(ln, "expected `at T xid G CODE`");
      if (!Gpus(ln, arg(0), &gpus)) return false;
      for (unsigned g : gpus) st_->devices[g].xids.push_back(Xid{t, code});
      return true;
    }
    return Fail(ln, "unknown command `" + cmd + "`");
  }

  State* st_;
  std::string origin_;
  std::string error_;
};

State* LoadState() {
  auto* st = new State();
  std::string text;
  std::string base_dir;
  std::string origin;
  if (const char* inline_text = std::getenv("FAKE_NVML_SCRIPT_TEXT")) {
    text = inline_text;
    origin = "FAKE_NVML_SCRIPT_TEXT";
  } else if (const char* path = std::getenv("FAKE_NVML_SCRIPT")) {
    std::ifstream in(path);
    if (!in) {
      st->script_error = std::string("cannot open FAKE_NVML_SCRIPT=") + path;
      return st;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
    origin = path;
    const std::string p(path);
    const size_t slash = p.rfind('/');
    if (slash != std::string::npos) base_dir = p.substr(0, slash);
  }
  ScriptParser real(st, origin);
  real.Resize(1);
  if (!real.Parse(text, base_dir)) st->script_error = real.error();
  return st;
}

// ---- call plumbing ----------------------------------------------------------------------

Device* Dev(nvmlDevice_t h) {
  if (g_state == nullptr || h == nullptr) return nullptr;
  auto* d = reinterpret_cast<Device*>(h);
  for (Device& x : g_state->devices) {
    if (&x == d) return d;
  }
  return nullptr;
}

// Runs an injected block for (device, call) if one is due; releases the lock while sleeping.
void MaybeBlock(std::unique_lock<std::mutex>& lock, Device* d, const char* call) {
  const int64_t now = NowMs();
  for (Block& b : d->blocks) {
    if (b.fired || now < b.at_ms || (b.call != "*" && b.call != call)) continue;
    b.fired = true;
    const double secs = b.seconds;
    lock.unlock();
    if (secs < 0) {
      for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(secs * 1e6)));
    lock.lock();
    return;
  }
}

bool Lost(const Device* d) { return d->lost_at_ms >= 0 && NowMs() >= d->lost_at_ms; }
bool Unsupported(const Device* d, const char* what) { return d->unsupported.count(what) != 0; }

double Val(const Device* d, const std::string& key, int64_t t) {
  auto it = d->series.find(key);
  return it == d->series.end() ? Default(key) : it->second.At(t, Default(key));
}
const Series& Ser(const Device* d, const std::string& key) {
  static const Series kEmpty;
  auto it = d->series.find(key);
  return it == d->series.end() ? kEmpty : it->second;
}

// Common prologue of a device call: counts it, checks init, handle, output pointer, injected
// block and loss. Returns NVML_SUCCESS with *dev set when the call should proceed.
nvmlReturn_t Enter(std::unique_lock<std::mutex>& lock, const char* call, nvmlDevice_t h,
                   const void* out, Device** dev) {
  ++g_calls[call];
  if (g_refcount == 0) return NVML_ERROR_UNINITIALIZED;
  Device* d = Dev(h);
  if (d == nullptr || out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  MaybeBlock(lock, d, call);
  if (g_refcount == 0) return NVML_ERROR_UNINITIALIZED;
  if (Lost(d)) return NVML_ERROR_GPU_IS_LOST;
  *dev = d;
  return NVML_SUCCESS;
}

unsigned long long Energy(const Device* d, int64_t t) {
  // mW * ms = uJ; /1000 -> mJ.
  return d->energy.At(t, Ser(d, "power_mw"), Default("power_mw"), 1.0 / 1000.0);
}

// Cumulative GPM activity (percent * ms) up to t.
double GpmIntegral(const Device* d, const std::string& key, int64_t t) {
  return Ser(d, key).Integral(0, t, Default(key));
}

nvmlReturn_t InitImpl() {
  std::lock_guard<std::mutex> lock(g_mu);
  ++g_calls["nvmlInit_v2"];
  if (g_refcount == 0 && g_state == nullptr) {
    g_state = LoadState();
    g_all_states->push_back(g_state);
    g_start = std::chrono::steady_clock::now();
  }
  if (!g_state->script_error.empty()) {
    std::fprintf(stderr, "fake_nvml: %s\n", g_state->script_error.c_str());
    return NVML_ERROR_UNKNOWN;
  }
  if (g_state->driver_absent) return NVML_ERROR_DRIVER_NOT_LOADED;
  ++g_refcount;
  return NVML_SUCCESS;
}

nvmlReturn_t CopyString(const std::string& s, char* out, unsigned length) {
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (length < s.size() + 1) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(out, s.c_str(), s.size() + 1);
  return NVML_SUCCESS;
}

nvmlReturn_t EventWait(nvmlEventSet_t set, nvmlEventData_t* data, unsigned timeoutms, bool v2) {
  std::unique_lock<std::mutex> lock(g_mu);
  ++g_calls[v2 ? "nvmlEventSetWait_v2" : "nvmlEventSetWait"];
  if (g_refcount == 0) return NVML_ERROR_UNINITIALIZED;
  if (set == nullptr || data == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  auto* es = reinterpret_cast<EventSet*>(set);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutms);
  for (;;) {
    const int64_t now = NowMs();
    const Device* best = nullptr;
    size_t best_i = 0;
    for (const auto& [dev, reg_t] : es->registered_at) {
      for (size_t i = 0; i < dev->xids.size(); ++i) {
        const Xid& x = dev->xids[i];
        if (x.at_ms > now || x.at_ms < reg_t || es->delivered.count({dev, i}) != 0) continue;
        if (best == nullptr || x.at_ms < best->xids[best_i].at_ms) {
          best = dev;
          best_i = i;
        }
      }
    }
    if (best != nullptr) {
      es->delivered.insert({best, best_i});
      data->device = reinterpret_cast<nvmlDevice_t>(const_cast<Device*>(best));
      data->eventType = nvmlEventTypeXidCriticalError;
      data->eventData = best->xids[best_i].code;
      if (v2) {
        data->gpuInstanceId = 0xFFFFFFFFu;
        data->computeInstanceId = 0xFFFFFFFFu;
      }
      return NVML_SUCCESS;
    }
    // With manual time nothing can happen while we wait.
    if (g_manual_time || std::chrono::steady_clock::now() >= give_up) return NVML_ERROR_TIMEOUT;
    lock.unlock();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    lock.lock();
  }
}

}  // namespace

// ---- test control (not NVML) ------------------------------------------------------------

// Switches to manual time and sets script time to ms.
FAKE_EXPORT void fakeNvmlSetTimeMs(long long ms) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_manual_time = true;
  g_manual_ms = ms;
}
// Forgets the loaded script and init count: the next nvmlInit reloads from the environment.
FAKE_EXPORT void fakeNvmlReset() {
  std::lock_guard<std::mutex> lock(g_mu);
  g_state = nullptr;  // the old state stays allocated for any thread still inside a call
  g_refcount = 0;
  g_manual_time = false;
  g_manual_ms = 0;
  g_calls.clear();
}
// How many times an entry point was called since the last reset.
FAKE_EXPORT unsigned long long fakeNvmlCallCount(const char* name) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = g_calls.find(name);
  return it == g_calls.end() ? 0 : it->second;
}

// ---- NVML ---------------------------------------------------------------------------------

FAKE_EXPORT nvmlReturn_t nvmlInit_v2(void) { return InitImpl(); }
FAKE_EXPORT nvmlReturn_t nvmlInit(void) { return InitImpl(); }

FAKE_EXPORT nvmlReturn_t nvmlShutdown(void) {
  std::lock_guard<std::mutex> lock(g_mu);
  ++g_calls["nvmlShutdown"];
  if (g_refcount == 0) return NVML_ERROR_UNINITIALIZED;
  --g_refcount;
  return NVML_SUCCESS;
}

FAKE_EXPORT const char* nvmlErrorString(nvmlReturn_t rc) {
  switch (rc) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_NO_PERMISSION:
      return "Insufficient Permissions";
    case NVML_ERROR_NOT_FOUND:
      return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT:
      return "Timeout";
    case NVML_ERROR_FUNCTION_NOT_FOUND:
      return "Function Not Found";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
      return "Argument Version Mismatch";
    default:
      return "Unknown Error";
  }
}

FAKE_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  std::lock_guard<std::mutex> lock(g_mu);
  ++g_calls["nvmlSystemGetDriverVersion"];
  if (g_refcount == 0) return NVML_ERROR_UNINITIALIZED;
  return CopyString(g_state->driver_version, version, length);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  std::lock_guard<std::mutex> lock(g_mu);
  ++g_calls["nvmlDeviceGetCount_v2"];
  if (g_refcount == 0) return NVML_ERROR_UNINITIALIZED;
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *count = static_cast<unsigned>(g_state->devices.size());
  return NVML_SUCCESS;
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int* count) {
  return nvmlDeviceGetCount_v2(count);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  std::lock_guard<std::mutex> lock(g_mu);
  ++g_calls["nvmlDeviceGetHandleByIndex_v2"];
  if (g_refcount == 0) return NVML_ERROR_UNINITIALIZED;
  if (device == nullptr || index >= g_state->devices.size()) return NVML_ERROR_INVALID_ARGUMENT;
  *device = reinterpret_cast<nvmlDevice_t>(&g_state->devices[index]);
  return NVML_SUCCESS;
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t* device) {
  return nvmlDeviceGetHandleByIndex_v2(index, device);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t h, char* name, unsigned int length) {
  std::unique_lock<std::mutex> lock(g_mu);
  Device* d = nullptr;
  if (nvmlReturn_t rc = Enter(lock, "nvmlDeviceGetName", h, name, &d); rc != NVML_SUCCESS)
    return rc;
  return CopyString(d->name, name, length);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t h, char* uuid, unsigned int length) {
  std::unique_lock<std::mutex> lock(g_mu);
  Device* d = nullptr;
  if (nvmlReturn_t rc = Enter(lock, "nvmlDeviceGetUUID", h, uuid, &d); rc != NVML_SUCCESS)
    return rc;
  return CopyString(d->uuid, uuid, length);
}

static nvmlReturn_t PciInfo(const char* call, nvmlDevice_t h, nvmlPciInfo_t* pci) {
  std::unique_lock<std::mutex> lock(g_mu);
  Device* d = nullptr;
  if (nvmlReturn_t rc = Enter(lock, call, h, pci, &d); rc != NVML_SUCCESS) return rc;
  std::memset(pci, 0, sizeof(*pci));
  std::snprintf(pci->busId, sizeof(pci->busId), "%s", d->pci.c_str());
  std::snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "%s",
                d->pci.size() > 4 ? d->pci.c_str() + 4 : d->pci.c_str());
  pci->bus = 0x18 + d->index;
  pci->pciDeviceId = 0x233010DE;
  return NVML_SUCCESS;
}
FAKE_EXPORT_NEWER nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t h, nvmlPciInfo_t* pci) {
  return PciInfo("nvmlDeviceGetPciInfo_v3", h, pci);
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t h, nvmlPciInfo_t* pci) {
  return PciInfo("nvmlDeviceGetPciInfo_v2", h, pci);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t h, nvmlDeviceArchitecture_t* arch) {
  std::unique_lock<std::mutex> lock(g_mu);
  Device* d = nullptr;
  if (nvmlReturn_t rc = Enter(lock, "nvmlDeviceGetArchitecture", h, arch, &d); rc != NVML_SUCCESS) {
    return rc;
  }
  if (Unsupported(d, "arch")) return NVML_ERROR_NOT_SUPPORTED;
  *arch = d->arch;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t h, unsigned int* power_mw) {
  std::unique_lock<std::mutex> lock(g_mu);
  Device* d = nullptr;
  if (nvmlReturn_t rc = Enter(lock, "nvmlDeviceGetPowerUsage", h, power_mw, &d);
      rc != NVML_SUCCESS) {
    return rc;
  }
  if (Unsupported(d, "power")) return NVML_ERROR_NOT_SUPPORTED;
  const int64_t t = NowMs();
  if (!Ser(d, "power_avg_mw").empty()) {
    *power_mw = static_cast<unsigned>(Val(d, "power_avg_mw", t));
    return NVML_SUCCESS;
  }
  // The trailing one-second mean of board power (shorter right after "driver load").
  const int64_t from = t > 1000 ? t - 1000 : 0;
  const Series& p = Ser(d, "power_mw");
  const double avg = t > from
                         ? p.Integral(from, t, Default("power_mw")) / static_cast<double>(t - from)
                         : p.At(t, Default("power_mw"));
  *power_mw = static_cast<unsigned>(std::llround(avg));
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t h,
                                                             unsigned long long* mj) {
  std::unique_lock<std::mutex> lock(g_mu);
  Device* d = nullptr;
  if (nvmlReturn_t rc = Enter(lock, "nvmlDeviceGetTotalEnergyConsumption", h, mj, &d);
      rc != NVML_SUCCESS) {
    return rc;
  }
  if (Unsupported(d, "energy")) return NVML_ERROR_NOT_SUPPORTED;
  *mj = Energy(d, NowMs());
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t h, unsigned int* limit_mw) {
  std::unique_lock<std::mutex> lock(g_mu);
  Device* d = nullptr;
  if (nvmlReturn_t rc = Enter(lock, "nvmlDeviceGetEnforcedPowerLimit", h, limit_mw, &d);
      rc != NVML_SUCCESS) {
    return rc;
  }
  if (Unsupported(d, "power_limit")) return NVML_ERROR_NOT_SUPPORTED;
  *limit_mw = static_cast<unsigned>(Val(d, "power_limit_mw", NowMs()));
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t h, nvmlUtilization_t* util) {
  std::unique_lock<std::mutex> lock(g_mu);
  Device* d = nullptr;
  if (nvmlReturn_t rc = Enter(lock, "nvmlDeviceGetUtilizationRates", h, util, &d);
      rc != NVML_SUCCESS) {
    return rc;
  }
  if (Unsupported(d, "utilization")) return NVML_ERROR_NOT_SUPPORTED;
  const int64_t t = NowMs();
  util->gpu = static_cast<unsigned>(Val(d, "util_gpu", t));
  util->memory = static_cast<unsigned>(Val(d, "util_mem", t));
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t h, nvmlClockType_t type,
                                                unsigned int* mhz) {
  std::unique_lock<std::mutex> lock(g_mu);
  Device* d = nullptr;
  if (nvmlReturn_t rc = Enter(lock, "nvmlDeviceGetClockInfo", h, mhz, &d); rc != NVML_SUCCESS)
    return rc;
  const int64_t t = NowMs();
  switch (type) {
    case NVML_CLOCK_GRAPHICS:
    case NVML_CLOCK_SM:
      if (Unsupported(d, "sm_clock")) return NVML_ERROR_NOT_SUPPORTED;
      *mhz = static_cast<unsigned>(Val(d, "sm_mhz", t));
      return NVML_SUCCESS;
    case NVML_CLOCK_MEM:
      if (Unsupported(d, "mem_clock")) return NVML_ERROR_NOT_SUPPORTED;
      *mhz = static_cast<unsigned>(Val(d, "mem_mhz", t));
      return NVML_SUCCESS;
    case NVML_CLOCK_VIDEO:
      return NVML_ERROR_NOT_SUPPORTED;
    default:
      return NVML_ERROR_INVALID_ARGUMENT;
  }
}

static nvmlReturn_t Reasons(const char* call, nvmlDevice_t h, unsigned long long* reasons) {
  std::unique_lock<std::mutex> lock(g_mu);
  Device* d = nullptr;
  if (nvmlReturn_t rc = Enter(lock, call, h, reasons, &d); rc != NVML_SUCCESS) return rc;
  if (Unsupported(d, "clock_reasons")) return NVML_ERROR_NOT_SUPPORTED;
  *reasons = static_cast<unsigned long long>(Val(d, "clock_reasons", NowMs()));
  return NVML_SUCCESS;
}
FAKE_EXPORT_NEWER nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t h,
                                                                      unsigned long long* r) {
  return Reasons("nvmlDeviceGetCurrentClocksEventReasons", h, r);
}
FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t h,
                                                                   unsigned long long* r) {
  return Reasons("nvmlDeviceGetCurrentClocksThrottleReasons", h, r);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t h, nvmlTemperatureSensors_t sensor,
                                                  unsigned int* temp) {
  std::unique_lock<std::mutex> lock(g_mu);
  Device* d = nullptr;
  if (nvmlReturn_t rc = Enter(lock, "nvmlDeviceGetTemperature", h, temp, &d); rc != NVML_SUCCESS) {
    return rc;
  }
  if (sensor != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
  if (Unsupported(d, "temperature")) return NVML_ERROR_NOT_SUPPORTED;
  *temp = static_cast<unsigned>(Val(d, "temp_c", NowMs()));
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t h, nvmlMemory_t* mem) {
  std::unique_lock<std::mutex> lock(g_mu);
  Device* d = nullptr;
  if (nvmlReturn_t rc = Enter(lock, "nvmlDeviceGetMemoryInfo", h, mem, &d); rc != NVML_SUCCESS)
    return rc;
  if (Unsupported(d, "memory")) return NVML_ERROR_NOT_SUPPORTED;
  const int64_t t = NowMs();
  mem->total = static_cast<unsigned long long>(Val(d, "mem_total_bytes", t));
  mem->used = static_cast<unsigned long long>(Val(d, "mem_used_bytes", t));
  mem->free = mem->total > mem->used ? mem->total - mem->used : 0;
  return NVML_SUCCESS;
}

FAKE_EXPORT_NEWER nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t h, nvmlMemory_v2_t* mem) {
  std::unique_lock<std::mutex> lock(g_mu);
  Device* d = nullptr;
  if (nvmlReturn_t rc = Enter(lock, "nvmlDeviceGetMemoryInfo_v2", h, mem, &d); rc != NVML_SUCCESS) {
    return rc;
  }
  if (mem->version != nvmlMemory_v2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  if (Unsupported(d, "memory") || Unsupported(d, "memory_v2")) return NVML_ERROR_NOT_SUPPORTED;
  const int64_t t = NowMs();
  mem->total = static_cast<unsigned long long>(Val(d, "mem_total_bytes", t));
  mem->reserved = 0;
  mem->used = static_cast<unsigned long long>(Val(d, "mem_used_bytes", t));
  mem->free = mem->total > mem->used ? mem->total - mem->used : 0;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPerformanceState(nvmlDevice_t h, nvmlPstates_t* p) {
  std::unique_lock<std::mutex> lock(g_mu);
  Device* d = nullptr;
  if (nvmlReturn_t rc = Enter(lock, "nvmlDeviceGetPerformanceState", h, p, &d);
      rc != NVML_SUCCESS) {
    return rc;
  }
  if (Unsupported(d, "pstate")) return NVML_ERROR_NOT_SUPPORTED;
  *p = static_cast<nvmlPstates_t>(static_cast<int>(Val(d, "pstate", NowMs())));
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t h, int count,
                                                  nvmlFieldValue_t* values) {
  std::unique_lock<std::mutex> lock(g_mu);
  Device* d = nullptr;
  if (nvmlReturn_t rc = Enter(lock, "nvmlDeviceGetFieldValues", h, values, &d);
      rc != NVML_SUCCESS) {
    return rc;
  }
  if (count <= 0) return NVML_ERROR_INVALID_ARGUMENT;
  if (Unsupported(d, "field_values")) return NVML_ERROR_NOT_SUPPORTED;
  const int64_t t = NowMs();
  constexpr unsigned kLinks = 18;
  for (int i = 0; i < count; ++i) {
    nvmlFieldValue_t& v = values[i];
    v.timestamp = kEpochUs + t * 1000;
    v.latencyUsec = 0;
    v.nvmlReturn = NVML_SUCCESS;
    auto counter = [&](const Counter& c, const char* rate_key, double units_per_ms,
                       const char* what) {
      if (Unsupported(d, what)) {
        v.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
        return;
      }
      unsigned long long val = c.At(t, Ser(d, rate_key), Default(rate_key), units_per_ms);
      if (v.scopeId != 0xFFFFFFFFu && v.fieldId != NVML_FI_DEV_PCIE_COUNT_TX_BYTES &&
          v.fieldId != NVML_FI_DEV_PCIE_COUNT_RX_BYTES) {
        if (v.scopeId >= kLinks) {
          v.nvmlReturn = NVML_ERROR_INVALID_ARGUMENT;
          return;
        }
        val /= kLinks;  // an even share per link
      }
      if (c.bits == 32) {
        v.valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
        v.value.uiVal = static_cast<unsigned>(val);
      } else {
        v.valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
        v.value.ullVal = val;
      }
    };
    switch (v.fieldId) {
      case NVML_FI_DEV_POWER_INSTANT: {
        if (Unsupported(d, "power_instant")) {
          v.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
          break;
        }
        v.valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
        v.value.uiVal = static_cast<unsigned>(!Ser(d, "power_instant_mw").empty()
                                                  ? Val(d, "power_instant_mw", t)
                                                  : Val(d, "power_mw", t));
        break;
      }
      case NVML_FI_DEV_ENERGY:
        if (Unsupported(d, "energy")) {
          v.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
          break;
        }
        v.valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
        v.value.ullVal = Energy(d, t);
        break;
      // Rates are per second; counters advance per ms.
      case NVML_FI_DEV_PCIE_COUNT_TX_BYTES:
        counter(d->pcie_tx, "pcie_tx_bytes_per_s", 1.0 / 1000.0, "pcie");
        break;
      case NVML_FI_DEV_PCIE_COUNT_RX_BYTES:
        counter(d->pcie_rx, "pcie_rx_bytes_per_s", 1.0 / 1000.0, "pcie");
        break;
      case NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX:
        counter(d->nvlink_tx, "nvlink_tx_kib_per_s", 1.0 / 1000.0, "nvlink");
        break;
      case NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX:
        counter(d->nvlink_rx, "nvlink_rx_kib_per_s", 1.0 / 1000.0, "nvlink");
        break;
      default:
        v.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
        break;
    }
  }
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t h,
                                                          unsigned long long* types) {
  std::unique_lock<std::mutex> lock(g_mu);
  Device* d = nullptr;
  if (nvmlReturn_t rc = Enter(lock, "nvmlDeviceGetSupportedEventTypes", h, types, &d);
      rc != NVML_SUCCESS) {
    return rc;
  }
  *types = Unsupported(d, "xid") ? 0 : nvmlEventTypeXidCriticalError;
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  std::lock_guard<std::mutex> lock(g_mu);
  ++g_calls["nvmlEventSetCreate"];
  if (g_refcount == 0) return NVML_ERROR_UNINITIALIZED;
  if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *set = reinterpret_cast<nvmlEventSet_t>(new EventSet());
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t h, unsigned long long types,
                                                  nvmlEventSet_t set) {
  std::unique_lock<std::mutex> lock(g_mu);
  Device* d = nullptr;
  if (nvmlReturn_t rc = Enter(lock, "nvmlDeviceRegisterEvents", h, set, &d); rc != NVML_SUCCESS) {
    return rc;
  }
  if ((types & ~nvmlEventTypeXidCriticalError) != 0 || Unsupported(d, "xid")) {
    return NVML_ERROR_NOT_SUPPORTED;
  }
  reinterpret_cast<EventSet*>(set)->registered_at[d] = NowMs();
  return NVML_SUCCESS;
}

FAKE_EXPORT_NEWER nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data,
                                                   unsigned int timeoutms) {
  return EventWait(set, data, timeoutms, true);
}
// v1's nvmlEventData_t ended after eventData; EventWait writes only that prefix for it.
FAKE_EXPORT nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t* data,
                                          unsigned int timeoutms) {
  return EventWait(set, data, timeoutms, false);
}

FAKE_EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  std::lock_guard<std::mutex> lock(g_mu);
  ++g_calls["nvmlEventSetFree"];
  if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  delete reinterpret_cast<EventSet*>(set);
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t h, nvmlGpmSupport_t* support) {
  std::unique_lock<std::mutex> lock(g_mu);
  Device* d = nullptr;
  if (nvmlReturn_t rc = Enter(lock, "nvmlGpmQueryDeviceSupport", h, support, &d);
      rc != NVML_SUCCESS) {
    return rc;
  }
  if (support->version != NVML_GPM_SUPPORT_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  support->isSupportedDevice = d->arch >= NVML_DEVICE_ARCH_HOPPER &&
                               d->arch != NVML_DEVICE_ARCH_UNKNOWN && !Unsupported(d, "gpm");
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t* sample) {
  std::lock_guard<std::mutex> lock(g_mu);
  ++g_calls["nvmlGpmSampleAlloc"];
  if (g_refcount == 0) return NVML_ERROR_UNINITIALIZED;
  if (sample == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *sample = reinterpret_cast<nvmlGpmSample_t>(new GpmSample());
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t sample) {
  std::lock_guard<std::mutex> lock(g_mu);
  ++g_calls["nvmlGpmSampleFree"];
  if (sample == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  delete reinterpret_cast<GpmSample*>(sample);
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t h, nvmlGpmSample_t sample) {
  std::unique_lock<std::mutex> lock(g_mu);
  Device* d = nullptr;
  if (nvmlReturn_t rc = Enter(lock, "nvmlGpmSampleGet", h, sample, &d); rc != NVML_SUCCESS)
    return rc;
  if (d->arch < NVML_DEVICE_ARCH_HOPPER || Unsupported(d, "gpm")) return NVML_ERROR_NOT_SUPPORTED;
  auto* s = reinterpret_cast<GpmSample*>(sample);
  s->device = d;
  s->t_ms = NowMs();
  return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t* get) {
  std::lock_guard<std::mutex> lock(g_mu);
  ++g_calls["nvmlGpmMetricsGet"];
  if (g_refcount == 0) return NVML_ERROR_UNINITIALIZED;
  if (get == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (get->version != NVML_GPM_METRICS_GET_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  auto* s1 = reinterpret_cast<GpmSample*>(get->sample1);
  auto* s2 = reinterpret_cast<GpmSample*>(get->sample2);
  if (s1 == nullptr || s2 == nullptr || s1->device == nullptr || s1->device != s2->device ||
      get->numMetrics == 0 || get->numMetrics > NVML_GPM_METRIC_MAX) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (s2->t_ms <= s1->t_ms) return NVML_ERROR_INVALID_ARGUMENT;
  const Device* d = s1->device;
  const double dt = static_cast<double>(s2->t_ms - s1->t_ms);
  for (unsigned i = 0; i < get->numMetrics; ++i) {
    nvmlGpmMetric_t& m = get->metrics[i];
    const char* key = nullptr;
    switch (m.metricId) {
      case NVML_GPM_METRIC_SM_UTIL:
        key = "gpm_sm_util";
        break;
      case NVML_GPM_METRIC_SM_OCCUPANCY:
        key = "gpm_sm_occupancy";
        break;
      case NVML_GPM_METRIC_ANY_TENSOR_UTIL:
        key = "gpm_tensor_util";
        break;
      case NVML_GPM_METRIC_DRAM_BW_UTIL:
        key = "gpm_dram_bw_util";
        break;
      default:
        break;
    }
    m.metricInfo.shortName = m.metricInfo.longName = m.metricInfo.unit = nullptr;
    if (key == nullptr) {
      m.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
      continue;
    }
    m.nvmlReturn = NVML_SUCCESS;
    m.value = (GpmIntegral(d, key, s2->t_ms) - GpmIntegral(d, key, s1->t_ms)) / dt;
  }
  return NVML_SUCCESS;
}
