#include "telemetry/nvml/nvml_api.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "telemetry/ingest/text.h"

namespace ww::nvml {
namespace {

// A library named by path (--nvml-lib, $WATTWATCH_NVML_LIB) is checked before dlopen: dlerror's
// "invalid ELF header" does not tell a user that they pointed at a text file or a program.
Status CheckLoadableLibrary(const std::string& path, const std::string& origin) {
  if (path.find('/') == std::string::npos) return Status::Ok();  // a soname: the loader searches
  auto refuse = [&](const std::string& why) {
    return Status::Unavailable(
        fmt::format("cannot load NVML: {} (from {}) is not a loadable library: {}. {}", path,
                    origin, why, kNvmlHowToPoint));
  };
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return Status::Unavailable(fmt::format("cannot load NVML: {} (from {}): {}. {}", path, origin,
                                           std::strerror(errno), kNvmlHowToPoint));
  }
  if (S_ISDIR(st.st_mode)) return refuse("it is a directory");
  if (!S_ISREG(st.st_mode)) return refuse("it is not a regular file");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return refuse(fmt::format("cannot read it: {}", std::strerror(errno)));
  unsigned char head[sizeof(Elf64_Ehdr)] = {};
  const ssize_t n = ::read(fd, head, sizeof head);
  ::close(fd);
  if (n < EI_NIDENT || std::memcmp(head, ELFMAG, SELFMAG) != 0) {
    return refuse(
        fmt::format("it is not an ELF shared object (it begins '{}')",
                    ingest::Excerpt(std::string_view(reinterpret_cast<const char*>(head),
                                                     static_cast<size_t>(std::max<ssize_t>(n, 0))),
                                    16)));
  }
  // e_type sits at the same offset in 32- and 64-bit headers, in the file's byte order.
  if (n >= 18) {
    const bool big_endian = head[EI_DATA] == ELFDATA2MSB;
    const unsigned type = big_endian ? (head[16] << 8 | head[17]) : (head[17] << 8 | head[16]);
    if (type != ET_DYN) {
      return refuse(type == ET_EXEC ? "it is an ELF executable, not a shared object"
                                    : "it is an ELF file but not a shared object");
    }
  }
  return Status::Ok();
}

}  // namespace

std::string NvmlReturnName(nvmlReturn_t rc) {
  switch (rc) {
    case NVML_SUCCESS:
      return "NVML_SUCCESS";
    case NVML_ERROR_UNINITIALIZED:
      return "NVML_ERROR_UNINITIALIZED";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "NVML_ERROR_INVALID_ARGUMENT";
    case NVML_ERROR_NOT_SUPPORTED:
      return "NVML_ERROR_NOT_SUPPORTED";
    case NVML_ERROR_NO_PERMISSION:
      return "NVML_ERROR_NO_PERMISSION";
    case NVML_ERROR_NOT_FOUND:
      return "NVML_ERROR_NOT_FOUND";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "NVML_ERROR_INSUFFICIENT_SIZE";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "NVML_ERROR_DRIVER_NOT_LOADED";
    case NVML_ERROR_TIMEOUT:
      return "NVML_ERROR_TIMEOUT";
    case NVML_ERROR_LIBRARY_NOT_FOUND:
      return "NVML_ERROR_LIBRARY_NOT_FOUND";
    case NVML_ERROR_FUNCTION_NOT_FOUND:
      return "NVML_ERROR_FUNCTION_NOT_FOUND";
    case NVML_ERROR_GPU_IS_LOST:
      return "NVML_ERROR_GPU_IS_LOST";
    case NVML_ERROR_RESET_REQUIRED:
      return "NVML_ERROR_RESET_REQUIRED";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
      return "NVML_ERROR_LIB_RM_VERSION_MISMATCH";
    case NVML_ERROR_NO_DATA:
      return "NVML_ERROR_NO_DATA";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
      return "NVML_ERROR_ARGUMENT_VERSION_MISMATCH";
    case NVML_ERROR_UNKNOWN:
      return "NVML_ERROR_UNKNOWN";
    default:
      return fmt::format("NVML_ERROR_{}", rc);
  }
}

std::string NvmlLib::ErrorText(nvmlReturn_t rc) const {
  const char* text = ErrorString != nullptr ? ErrorString(rc) : nullptr;
  if (text == nullptr || *text == '\0') return fmt::format("{}={}", NvmlReturnName(rc), rc);
  return fmt::format("{} ({}={})", text, NvmlReturnName(rc), rc);
}

std::string NvmlLib::BoundSymbol(const std::string& member) const {
  static constexpr const char* kMembers[kNvmlEntryCount] = {
#define WW_NVML_MEMBER_NAME(member, sym, fallback, required, ret, params) #member,
      WW_NVML_ENTRY_POINTS(WW_NVML_MEMBER_NAME)
#undef WW_NVML_MEMBER_NAME
  };
  for (int i = 0; i < kNvmlEntryCount; ++i) {
    if (member == kMembers[i]) return bound_[i] != nullptr ? bound_[i] : "";
  }
  return {};
}

Result<std::shared_ptr<NvmlLib>> NvmlLib::Load(const std::string& explicit_path) {
  std::string path = explicit_path;
  std::string origin = "--nvml-lib";
  if (path.empty()) {
    const char* env = std::getenv(kNvmlLibraryEnv);
    if (env != nullptr && *env != '\0') {
      path = env;
      origin = kNvmlLibraryEnv;
    }
  }
  if (path.empty()) {
    path = kDefaultNvmlLibrary;
    origin = "the default library search path";
  }

  std::shared_ptr<NvmlLib> lib(new NvmlLib());
  lib->path_ = path;
  // RTLD_LOCAL: NVML's symbols must not leak into the global namespace of the process.
  WW_RETURN_IF_ERROR(CheckLoadableLibrary(path, origin));
  lib->handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib->handle_ == nullptr) {
    const char* err = dlerror();
    return Status::Unavailable(fmt::format(
        "cannot load NVML: {} (from {}) could not be opened: {}. No NVIDIA driver library is "
        "installed here, or it is not on the loader path. {}",
        path, origin, err != nullptr ? err : "unknown dlopen error", kNvmlHowToPoint));
  }

  std::string missing;
#define WW_NVML_RESOLVE(member, sym, fallback, required, ret, params)                            \
  {                                                                                              \
    const char* bound_name = sym;                                                                \
    void* p = dlsym(lib->handle_, sym);                                                          \
    const char* fb = fallback;                                                                   \
    if (p == nullptr && fb != nullptr) {                                                         \
      p = dlsym(lib->handle_, fb);                                                               \
      bound_name = fb;                                                                           \
    }                                                                                            \
    if (p != nullptr) {                                                                          \
      lib->member = reinterpret_cast<ret(*) params>(p); /* NOLINT(bugprone-macro-parentheses) */ \
      lib->bound_[static_cast<int>(NvmlEntry::k##member)] = bound_name;                          \
    } else if (required) {                                                                       \
      missing += missing.empty() ? "" : ", ";                                                    \
      missing += (sym);                                                                          \
    }                                                                                            \
  }
  WW_NVML_ENTRY_POINTS(WW_NVML_RESOLVE)
#undef WW_NVML_RESOLVE
  if (!missing.empty()) {
    return Status::Unavailable(fmt::format(
        "cannot use NVML: {} does not export {}; it is not an NVIDIA management library or is "
        "too old. {}",
        path, missing, kNvmlHowToPoint));
  }

  const nvmlReturn_t rc = lib->Init();
  if (rc != NVML_SUCCESS) {
    std::string why;
    if (rc == NVML_ERROR_DRIVER_NOT_LOADED) {
      why = "the NVIDIA kernel driver is not loaded (is this a GPU host? try `nvidia-smi`)";
    } else if (rc == NVML_ERROR_LIB_RM_VERSION_MISMATCH) {
      why = "the library does not match the loaded kernel driver (reboot or reload the driver)";
    } else if (rc == NVML_ERROR_NO_PERMISSION) {
      why = "no permission to open the GPU device files (/dev/nvidia*)";
    } else {
      why = "NVML could not start";
    }
    return Status::Unavailable(fmt::format("cannot use NVML: {} on {} failed: {}: {}. {}",
                                           lib->Symbol(NvmlEntry::kInit), path, lib->ErrorText(rc),
                                           why, kNvmlHowToPoint));
  }
  lib->initialized_ = true;
  return lib;
}

NvmlLib::~NvmlLib() {
  if (initialized_ && Shutdown != nullptr) Shutdown();
  if (handle_ != nullptr) dlclose(handle_);
}

}  // namespace ww::nvml
