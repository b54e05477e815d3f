#include "telemetry/amdsmi/amdsmi_api.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>

namespace ww::amdsmi {

std::string AmdSmiStatusName(amdsmi_status_t rc) {
  switch (rc) {
    case AMDSMI_STATUS_SUCCESS:
      return "AMDSMI_STATUS_SUCCESS";
    case AMDSMI_STATUS_INVAL:
      return "AMDSMI_STATUS_INVAL";
    case AMDSMI_STATUS_NOT_SUPPORTED:
      return "AMDSMI_STATUS_NOT_SUPPORTED";
    case AMDSMI_STATUS_NOT_YET_IMPLEMENTED:
      return "AMDSMI_STATUS_NOT_YET_IMPLEMENTED";
    case AMDSMI_STATUS_FAIL_LOAD_MODULE:
      return "AMDSMI_STATUS_FAIL_LOAD_MODULE";
    case AMDSMI_STATUS_NO_PERM:
      return "AMDSMI_STATUS_NO_PERM";
    case AMDSMI_STATUS_INIT_ERROR:
      return "AMDSMI_STATUS_INIT_ERROR";
    case AMDSMI_STATUS_NOT_FOUND:
      return "AMDSMI_STATUS_NOT_FOUND";
    case AMDSMI_STATUS_NOT_INIT:
      return "AMDSMI_STATUS_NOT_INIT";
    case AMDSMI_STATUS_DRIVER_NOT_LOADED:
      return "AMDSMI_STATUS_DRIVER_NOT_LOADED";
    case AMDSMI_STATUS_NO_DATA:
      return "AMDSMI_STATUS_NO_DATA";
    case AMDSMI_STATUS_UNKNOWN_ERROR:
      return "AMDSMI_STATUS_UNKNOWN_ERROR";
    default:
      return fmt::format("AMDSMI_STATUS_{}", rc);
  }
}

std::string AmdSmiLib::ErrorText(amdsmi_status_t rc) const {
  const char* text = nullptr;
  if (StatusCodeToString == nullptr || StatusCodeToString(rc, &text) != AMDSMI_STATUS_SUCCESS ||
      text == nullptr || *text == '\0') {
    return fmt::format("{}={}", AmdSmiStatusName(rc), rc);
  }
  return fmt::format("{} ({}={})", text, AmdSmiStatusName(rc), rc);
}

Result<std::shared_ptr<AmdSmiLib>> AmdSmiLib::Load(const std::string& explicit_path) {
  std::string path = explicit_path;
  std::string origin = "--amdsmi-lib";
  if (path.empty()) {
    const char* env = std::getenv(kAmdSmiLibraryEnv);
    if (env != nullptr && *env != '\0') {
      path = env;
      origin = kAmdSmiLibraryEnv;
    }
  }
  if (path.empty()) {
    path = kDefaultAmdSmiLibrary;
    origin = "the default library search path";
  }
  std::shared_ptr<AmdSmiLib> lib(new AmdSmiLib());
  lib->path_ = path;
  lib->handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib->handle_ == nullptr) {
    const char* err = dlerror();
    return Status::Unavailable(fmt::format(
        "cannot load AMD SMI: {} (from {}) could not be opened: {}. No ROCm AMD SMI library is "
        "installed here, or it is not on the loader path. {}",
        path, origin, err != nullptr ? err : "unknown dlopen error", kAmdSmiHowToPoint));
  }
  std::string missing;
#define WW_AMDSMI_RESOLVE(member, sym, required, params)                         \
  {                                                                              \
    void* p = dlsym(lib->handle_, sym);                                          \
    if (p != nullptr) {                                                          \
      lib->member = reinterpret_cast<amdsmi_status_t(*) params>(p); /* NOLINT */ \
    } else if (required) {                                                       \
      missing += missing.empty() ? "" : ", ";                                    \
      missing += (sym);                                                          \
    }                                                                            \
  }
  WW_AMDSMI_ENTRY_POINTS(WW_AMDSMI_RESOLVE)
#undef WW_AMDSMI_RESOLVE
  if (!missing.empty()) {
    return Status::Unavailable(
        fmt::format("cannot use AMD SMI: {} does not export {}; it is not the AMD SMI library or "
                    "is too old. {}",
                    path, missing, kAmdSmiHowToPoint));
  }
  // The struct layouts in amdsmi_abi.h are those of one version: a library of another year.major
  // would write structs of another size into ours.
  amdsmi_version_t v{};
  const amdsmi_status_t vrc = lib->GetLibVersion(&v);
  if (vrc != AMDSMI_STATUS_SUCCESS) {
    return Status::Unavailable(fmt::format(
        "cannot use AMD SMI: amdsmi_get_lib_version on {} failed: {}", path, lib->ErrorText(vrc)));
  }
  lib->version_ = fmt::format("{}.{}.{}.{}", v.year, v.major, v.minor, v.release);
  if (v.year != kAmdSmiPinnedYear || v.major != kAmdSmiPinnedMajor) {
    return Status::Unavailable(fmt::format(
        "cannot use AMD SMI: {} is version {}, and wattwatch reads the structures of version "
        "{}.{}.x only (their layouts change between versions; reading another would misread "
        "every field). Point --amdsmi-lib at a {}.{} library, or use --source rocm-smi.",
        path, lib->version_, kAmdSmiPinnedYear, kAmdSmiPinnedMajor, kAmdSmiPinnedYear,
        kAmdSmiPinnedMajor));
  }
  const amdsmi_status_t rc = lib->Init(AMDSMI_INIT_AMD_GPUS);
  if (rc != AMDSMI_STATUS_SUCCESS) {
    std::string why = "AMD SMI could not start";
    if (rc == AMDSMI_STATUS_DRIVER_NOT_LOADED || rc == AMDSMI_STATUS_FAIL_LOAD_MODULE) {
      why = "the amdgpu kernel driver is not loaded (is this an AMD GPU host? try `amd-smi list`)";
    } else if (rc == AMDSMI_STATUS_NO_PERM) {
      why = "no permission to open the GPU device files (/dev/kfd, /dev/dri/*)";
    }
    return Status::Unavailable(
        fmt::format("cannot use AMD SMI: amdsmi_init on {} failed: {}: {}. {}", path,
                    lib->ErrorText(rc), why, kAmdSmiHowToPoint));
  }
  lib->initialized_ = true;
  return lib;
}

AmdSmiLib::~AmdSmiLib() {
  if (initialized_ && ShutDown != nullptr) ShutDown();
  if (handle_ != nullptr) dlclose(handle_);
}

}  // namespace ww::amdsmi
