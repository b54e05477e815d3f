// The fake libamd_smi.so (README.md): AMD SMI's C entry points over a script, with the struct
// layouts of amdsmi 24.7 written out here again (not shared with wattwatch's amdsmi_abi.h).
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

typedef uint32_t Status;
constexpr Status kSuccess = 0, kInval = 1, kNotSupported = 2, kNotInit = 32, kDriverNotLoaded = 34;

struct Version {
  uint32_t year, major, minor, release;
  const char* build;
};
struct PowerInfo {
  uint32_t current_socket_power, average_socket_power, gfx_voltage, soc_voltage, mem_voltage,
      power_limit, reserved[11];
};
struct PowerCapInfo {
  uint64_t power_cap, default_power_cap, dpm_cap, min_power_cap, max_power_cap, reserved[3];
};
struct EngineUsage {
  uint32_t gfx_activity, umc_activity, mm_activity, reserved[13];
};
struct VramUsage {
  uint32_t vram_total, vram_used, reserved[2];
};
struct ClkInfo {
  uint32_t clk, min_clk, max_clk;
  uint8_t clk_locked, clk_deep_sleep;
  uint32_t reserved[4];
};
struct AsicInfo {
  char market_name[256];
  uint32_t vendor_id;
  char vendor_name[64];
  uint32_t subvendor_id;
  uint64_t device_id;
  uint32_t rev_id;
  char asic_serial[32];
  uint32_t oam_id, num_of_compute_units;
  uint64_t target_graphics_version;
  uint32_t reserved[15];
};
struct BoardInfo {
  char model_number[256], product_serial[32], fru_id[32], product_name[256], manufacturer_name[64];
  uint32_t reserved[32];
};
static_assert(sizeof(PowerInfo) == 68 && sizeof(PowerCapInfo) == 64 && sizeof(AsicInfo) == 456);

struct Gpu {
  std::string name = "AMD Instinct MI300X";
  uint64_t bdf = 0;
  std::map<std::string, double> values;
  std::vector<std::string> unsupported;  // function names, or "hotspot"
  std::vector<std::string> blocked;      // function names
  bool Unsupported(const std::string& what) const {
    for (const auto& u : unsupported) {
      if (u == what) return true;
    }
    return false;
  }
  bool Blocked(const std::string& what) const {
    for (const auto& b : blocked) {
      if (b == what) return true;
    }
    return false;
  }
  double Get(const std::string& key) const { return values.at(key); }
};

struct State {
  std::mutex mu;
  std::condition_variable released_cv;
  bool released = false;
  bool initialized = false;
  bool driver_absent = false;
  uint32_t year = 24, major = 7;
  int gcds_per_socket = 1;
  std::vector<Gpu> gpus;
  std::map<std::string, unsigned long long> calls;
};

State& S() {
  static State* s = new State();  // never destroyed: a blocked call may outlive main
  return *s;
}

std::map<std::string, double> Defaults() {
  return {{"avg_power_w", 300},
          {"cur_power_w", 0xFFFF},
          {"power_cap_uw", 750000000},
          {"gfx", 0},
          {"umc", 0},
          {"mm", 0},
          {"vram_total_mb", 196592},
          {"vram_used_mb", 0},
          {"edge_c", 40},
          {"hotspot_c", 50},
          {"gfx_mhz", 2100},
          {"mem_mhz", 1300},
          {"energy_ticks", 0},
          {"energy_resolution_uj", 15.3}};
}

std::vector<std::string> Tokens(const std::string& line) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i >= line.size() || line[i] == '#') break;
    std::string tok;
    if (line[i] == '"') {
      const size_t end = line.find('"', i + 1);
      tok = line.substr(i + 1, end == std::string::npos ? std::string::npos : end - i - 1);
      i = end == std::string::npos ? line.size() : end + 1;
    } else {
      while (i < line.size() && line[i] != ' ' && line[i] != '\t') tok += line[i++];
    }
    out.push_back(tok);
  }
  return out;
}

uint64_t ParseBdf(const std::string& text) {
  unsigned domain = 0, bus = 0, dev = 0, fn = 0;
  if (std::sscanf(text.c_str(), "%x:%x:%x.%x", &domain, &bus, &dev, &fn) != 4) return 0;
  return (uint64_t{domain} << 32) | (bus << 8) | (dev << 3) | fn;
}

// Applies to GPU G or every GPU for "*".
template <typename F>
bool ForGpus(State& s, const std::string& g, F&& f) {
  if (g == "*") {
    for (Gpu& gpu : s.gpus) f(gpu);
    return true;
  }
  const size_t i = std::strtoul(g.c_str(), nullptr, 10);
  if (i >= s.gpus.size()) return false;
  f(s.gpus[i]);
  return true;
}

bool LoadScript(State& s) {
  s.gpus.assign(1, Gpu{});
  for (Gpu& g : s.gpus) g.values = Defaults();
  const char* text = std::getenv("FAKE_AMDSMI_SCRIPT_TEXT");
  std::istringstream in(text != nullptr ? text : "");
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    const auto t = Tokens(line);
    if (t.empty()) continue;
    bool ok = true;
    if (t[0] == "version" && t.size() == 3) {
      s.year = std::stoul(t[1]);
      s.major = std::stoul(t[2]);
    } else if (t[0] == "driver" && t.size() == 2 && t[1] == "absent") {
      s.driver_absent = true;
    } else if (t[0] == "gpus" && t.size() == 2) {
      s.gpus.assign(std::stoul(t[1]), Gpu{});
      for (size_t i = 0; i < s.gpus.size(); ++i) {
        s.gpus[i].values = Defaults();
        s.gpus[i].bdf = ParseBdf("0000:00:00.0") | ((0x10 + i) << 8);
      }
    } else if (t[0] == "gcds_per_socket" && t.size() == 2) {
      s.gcds_per_socket = std::max(1, std::stoi(t[1]));
    } else if (t[0] == "gpu" && t.size() >= 2) {
      ok = ForGpus(s, t[1], [&](Gpu& g) {
        for (size_t i = 2; i + 1 < t.size(); i += 2) {
          if (t[i] == "name") g.name = t[i + 1];
          if (t[i] == "bdf") g.bdf = ParseBdf(t[i + 1]);
        }
      });
    } else if (t[0] == "set" && t.size() == 4) {
      const double v = std::stod(t[3], nullptr);
      ok = Defaults().count(t[2]) != 0 && ForGpus(s, t[1], [&](Gpu& g) { g.values[t[2]] = v; });
    } else if (t[0] == "unsupported" && t.size() == 3) {
      ok = ForGpus(s, t[1], [&](Gpu& g) { g.unsupported.push_back(t[2]); });
    } else if (t[0] == "block" && t.size() == 3) {
      ok = ForGpus(s, t[1], [&](Gpu& g) { g.blocked.push_back(t[2]); });
    } else {
      ok = false;
    }
    if (!ok) {
      std::fprintf(stderr, "fake_amdsmi: script line %d: cannot use '%s'\n", n, line.c_str());
      return false;
    }
  }
  return true;
}

// Socket handles are 1-based socket numbers; processor handles 1-based GPU numbers.
void* SocketHandle(size_t socket) { return reinterpret_cast<void*>(socket + 1); }
void* ProcessorHandle(size_t gpu) { return reinterpret_cast<void*>(gpu + 0x1000); }

// Counts the call, checks init and the handle, and blocks when scripted to. On success *gpu is a
// copy of the GPU's script (taken before blocking, as a driver reads its state).
Status Enter(const char* call, void* handle, Gpu* gpu) {
  State& s = S();
  std::unique_lock<std::mutex> lock(s.mu);
  ++s.calls[call];
  if (!s.initialized) return kNotInit;
  const uintptr_t h = reinterpret_cast<uintptr_t>(handle);
  if (h < 0x1000 || h - 0x1000 >= s.gpus.size()) return kInval;
  *gpu = s.gpus[h - 0x1000];
  if (gpu->Blocked(call)) s.released_cv.wait(lock, [&] { return s.released; });
  if (gpu->Unsupported(call)) return kNotSupported;
  return kSuccess;
}

}  // namespace

FAKE_EXPORT void fakeAmdSmiReset() {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  s.initialized = false;
  s.driver_absent = false;
  s.year = 24;
  s.major = 7;
  s.gcds_per_socket = 1;
  s.gpus.clear();
  s.calls.clear();
  s.released = false;
}

FAKE_EXPORT void fakeAmdSmiRelease() {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  s.released = true;
  s.released_cv.notify_all();
}

FAKE_EXPORT unsigned long long fakeAmdSmiCallCount(const char* name) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.calls.find(name);
  return it == s.calls.end() ? 0 : it->second;
}

FAKE_EXPORT Status amdsmi_init(uint64_t flags) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  ++s.calls["amdsmi_init"];
  if ((flags & (1U << 1)) == 0) return kInval;  // AMDSMI_INIT_AMD_GPUS
  s.driver_absent = false;
  if (!LoadScript(s)) return kInval;
  if (s.driver_absent) return kDriverNotLoaded;
  s.initialized = true;
  return kSuccess;
}

FAKE_EXPORT Status amdsmi_shut_down() {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  s.initialized = false;
  return kSuccess;
}

FAKE_EXPORT Status amdsmi_get_lib_version(Version* v) {
  if (v == nullptr) return kInval;
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  // Before amdsmi_init, as the real one: the version is a property of the library.
  const char* text = std::getenv("FAKE_AMDSMI_SCRIPT_TEXT");
  std::istringstream in(text != nullptr ? text : "");
  std::string line;
  v->year = 24;
  v->major = 7;
  while (std::getline(in, line)) {
    const auto t = Tokens(line);
    if (t.size() == 3 && t[0] == "version") {
      v->year = std::stoul(t[1]);
      v->major = std::stoul(t[2]);
    }
  }
  v->minor = 0;
  v->release = 0;
  v->build = "fake";
  return kSuccess;
}

FAKE_EXPORT Status amdsmi_status_code_to_string(Status rc, const char** text) {
  if (text == nullptr) return kInval;
  switch (rc) {
    case kSuccess:
      *text = "AMDSMI_STATUS_SUCCESS: Call succeeded";
      break;
    case kNotSupported:
      *text = "AMDSMI_STATUS_NOT_SUPPORTED: Feature not supported";
      break;
    default:
      *text = "An unknown error occurred";
  }
  return kSuccess;
}

FAKE_EXPORT Status amdsmi_get_socket_handles(uint32_t* count, void** handles) {
  if (count == nullptr) return kInval;
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.initialized) return kNotInit;
  const size_t sockets = (s.gpus.size() + s.gcds_per_socket - 1) / s.gcds_per_socket;
  if (handles == nullptr) {
    *count = static_cast<uint32_t>(sockets);
    return kSuccess;
  }
  const size_t n = std::min<size_t>(*count, sockets);
  for (size_t i = 0; i < n; ++i) handles[i] = SocketHandle(i);
  *count = static_cast<uint32_t>(n);
  return kSuccess;
}

FAKE_EXPORT Status amdsmi_get_processor_handles(void* socket, uint32_t* count, void** handles) {
  if (count == nullptr) return kInval;
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.initialized) return kNotInit;
  const size_t sock = reinterpret_cast<uintptr_t>(socket) - 1;
  const size_t first = sock * s.gcds_per_socket;
  if (first >= s.gpus.size()) return kInval;
  const size_t in_socket = std::min<size_t>(s.gcds_per_socket, s.gpus.size() - first);
  if (handles == nullptr) {
    *count = static_cast<uint32_t>(in_socket);
    return kSuccess;
  }
  const size_t n = std::min<size_t>(*count, in_socket);
  for (size_t i = 0; i < n; ++i) handles[i] = ProcessorHandle(first + i);
  *count = static_cast<uint32_t>(n);
  return kSuccess;
}

FAKE_EXPORT Status amdsmi_get_gpu_asic_info(void* h, AsicInfo* info) {
  if (info == nullptr) return kInval;
  Gpu g;
  if (Status rc = Enter("amdsmi_get_gpu_asic_info", h, &g); rc != kSuccess) return rc;
  *info = AsicInfo{};
  std::snprintf(info->market_name, sizeof info->market_name, "%s", g.name.c_str());
  std::snprintf(info->vendor_name, sizeof info->vendor_name, "Advanced Micro Devices Inc.");
  info->vendor_id = 0x1002;
  info->target_graphics_version = 0x942;
  return kSuccess;
}

FAKE_EXPORT Status amdsmi_get_gpu_board_info(void* h, BoardInfo* info) {
  if (info == nullptr) return kInval;
  Gpu g;
  if (Status rc = Enter("amdsmi_get_gpu_board_info", h, &g); rc != kSuccess) return rc;
  *info = BoardInfo{};
  std::snprintf(info->product_name, sizeof info->product_name, "%s", g.name.c_str());
  return kSuccess;
}

FAKE_EXPORT Status amdsmi_get_gpu_bdf_id(void* h, uint64_t* bdf) {
  if (bdf == nullptr) return kInval;
  Gpu g;
  if (Status rc = Enter("amdsmi_get_gpu_bdf_id", h, &g); rc != kSuccess) return rc;
  *bdf = g.bdf;
  return kSuccess;
}

FAKE_EXPORT Status amdsmi_get_power_info(void* h, PowerInfo* p) {
  if (p == nullptr) return kInval;
  Gpu g;
  if (Status rc = Enter("amdsmi_get_power_info", h, &g); rc != kSuccess) return rc;
  *p = PowerInfo{};
  p->average_socket_power = static_cast<uint32_t>(g.Get("avg_power_w"));
  p->current_socket_power = static_cast<uint32_t>(g.Get("cur_power_w"));
  p->power_limit = static_cast<uint32_t>(g.Get("power_cap_uw") / 1e6);
  return kSuccess;
}

FAKE_EXPORT Status amdsmi_get_power_cap_info(void* h, uint32_t sensor, PowerCapInfo* c) {
  if (c == nullptr || sensor != 0) return kInval;
  Gpu g;
  if (Status rc = Enter("amdsmi_get_power_cap_info", h, &g); rc != kSuccess) return rc;
  *c = PowerCapInfo{};
  c->power_cap = static_cast<uint64_t>(g.Get("power_cap_uw"));
  c->default_power_cap = c->power_cap;
  c->max_power_cap = c->power_cap;
  return kSuccess;
}

FAKE_EXPORT Status amdsmi_get_gpu_activity(void* h, EngineUsage* u) {
  if (u == nullptr) return kInval;
  Gpu g;
  if (Status rc = Enter("amdsmi_get_gpu_activity", h, &g); rc != kSuccess) return rc;
  *u = EngineUsage{};
  u->gfx_activity = static_cast<uint32_t>(g.Get("gfx"));
  u->umc_activity = static_cast<uint32_t>(g.Get("umc"));
  u->mm_activity = static_cast<uint32_t>(g.Get("mm"));
  return kSuccess;
}

FAKE_EXPORT Status amdsmi_get_gpu_vram_usage(void* h, VramUsage* v) {
  if (v == nullptr) return kInval;
  Gpu g;
  if (Status rc = Enter("amdsmi_get_gpu_vram_usage", h, &g); rc != kSuccess) return rc;
  *v = VramUsage{};
  v->vram_total = static_cast<uint32_t>(g.Get("vram_total_mb"));
  v->vram_used = static_cast<uint32_t>(g.Get("vram_used_mb"));
  return kSuccess;
}

FAKE_EXPORT Status amdsmi_get_temp_metric(void* h, int sensor, int metric, int64_t* temp) {
  if (temp == nullptr || metric != 0) return kInval;
  Gpu g;
  if (Status rc = Enter("amdsmi_get_temp_metric", h, &g); rc != kSuccess) return rc;
  if (sensor == 1) {  // HOTSPOT
    if (g.Unsupported("hotspot")) return kNotSupported;
    *temp = static_cast<int64_t>(g.Get("hotspot_c"));
  } else if (sensor == 0) {  // EDGE
    *temp = static_cast<int64_t>(g.Get("edge_c"));
  } else {
    return kNotSupported;
  }
  return kSuccess;
}

FAKE_EXPORT Status amdsmi_get_clock_info(void* h, int type, ClkInfo* c) {
  if (c == nullptr) return kInval;
  Gpu g;
  if (Status rc = Enter("amdsmi_get_clock_info", h, &g); rc != kSuccess) return rc;
  *c = ClkInfo{};
  if (type == 0) {
    c->clk = static_cast<uint32_t>(g.Get("gfx_mhz"));
  } else if (type == 4) {
    c->clk = static_cast<uint32_t>(g.Get("mem_mhz"));
  } else {
    return kNotSupported;
  }
  return kSuccess;
}

FAKE_EXPORT Status amdsmi_get_energy_count(void* h, uint64_t* ticks, float* resolution,
                                           uint64_t* timestamp) {
  if (ticks == nullptr || resolution == nullptr || timestamp == nullptr) return kInval;
  Gpu g;
  if (Status rc = Enter("amdsmi_get_energy_count", h, &g); rc != kSuccess) return rc;
  *ticks = static_cast<uint64_t>(g.Get("energy_ticks"));
  *resolution = static_cast<float>(g.Get("energy_resolution_uj"));
  *timestamp = 0;
  return kSuccess;
}
