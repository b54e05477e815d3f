#include "telemetry/amdsmi/rocm_smi_api.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>

namespace ww::amdsmi {

std::string RocmSmiLib::ErrorText(rsmi_status_t rc) const {
  const char* text = nullptr;
  if (StatusString == nullptr || StatusString(rc, &text) != kRsmiSuccess || text == nullptr ||
      *text == '\0') {
    return fmt::format("rsmi status {}", rc);
  }
  return fmt::format("{} ({})", text, rc);
}

Result<std::shared_ptr<RocmSmiLib>> RocmSmiLib::Load(const std::string& explicit_path) {
  std::string path = explicit_path;
  std::string origin = "--rocm-smi-lib";
  if (path.empty()) {
    const char* env = std::getenv(kRocmSmiLibraryEnv);
    if (env != nullptr && *env != '\0') {
      path = env;
      origin = kRocmSmiLibraryEnv;
    }
  }
  if (path.empty()) {
    path = kDefaultRocmSmiLibrary;
    origin = "the default library search path";
  }
  std::shared_ptr<RocmSmiLib> lib(new RocmSmiLib());
  lib->path_ = path;
  lib->handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib->handle_ == nullptr) {
    const char* err = dlerror();
    return Status::Unavailable(
        fmt::format("cannot load ROCm SMI: {} (from {}) could not be opened: {}. Install "
                    "librocm-smi64-1 (Debian) or ROCm, or set WATTWATCH_ROCM_SMI_LIB=PATH.",
                    path, origin, err != nullptr ? err : "unknown dlopen error"));
  }
  std::string missing;
#define WW_RSMI_RESOLVE(member, sym, required, params)                         \
  {                                                                            \
    void* p = dlsym(lib->handle_, sym);                                        \
    if (p != nullptr) {                                                        \
      lib->member = reinterpret_cast<rsmi_status_t(*) params>(p); /* NOLINT */ \
    } else if (required) {                                                     \
      missing += missing.empty() ? "" : ", ";                                  \
      missing += (sym);                                                        \
    }                                                                          \
  }
  WW_RSMI_ENTRY_POINTS(WW_RSMI_RESOLVE)
#undef WW_RSMI_RESOLVE
  if (!missing.empty()) {
    return Status::Unavailable(
        fmt::format("cannot use ROCm SMI: {} does not export {}; it is not the ROCm SMI library",
                    path, missing));
  }
  const rsmi_status_t rc = lib->Init(0);
  if (rc != kRsmiSuccess) {
    std::string why = "ROCm SMI could not start";
    if (rc == kRsmiInitError) {
      why = "no AMD GPU or amdgpu driver found (is this an AMD GPU host? `ls /sys/class/kfd`)";
    } else if (rc == kRsmiPermission) {
      why = "no permission to read the GPU's sysfs files";
    }
    return Status::Unavailable(fmt::format("cannot use ROCm SMI: rsmi_init on {} failed: {}: {}",
                                           path, lib->ErrorText(rc), why));
  }
  lib->initialized_ = true;
  return lib;
}

RocmSmiLib::~RocmSmiLib() {
  if (initialized_ && ShutDown != nullptr) ShutDown();
  if (handle_ != nullptr) dlclose(handle_);
}

}  // namespace ww::amdsmi
