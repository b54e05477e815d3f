#include "measure/page_cache.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

#include "gate/env.h"

namespace ww::measure {
namespace {

class PosixPageCache final : public PageCache {
 public:
  // The gate already probes residency with mincore; one implementation, shared.
  Result<uint64_t> ResidentBytes(const std::string& path) override {
    return gate::DefaultGateEnv()->ResidentBytes(path);
  }

  Status Drop(const std::string& path) override {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      return Status::IoError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
    int rc = ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    if (rc == 0) {
      // DONTNEED skips dirty pages (a corpus written moments ago). Writing them back first is
      // allowed on a read-only descriptor and lets the second advice drop them too.
      auto resident = ResidentBytes(path);
      if (resident.ok() && *resident > 0 && ::fdatasync(fd) == 0) {
        rc = ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
      }
    }
    ::close(fd);
    if (rc != 0) {
      return Status::IoError(
          fmt::format("{}: posix_fadvise(DONTNEED) failed: {}", path, std::strerror(rc)));
    }
    return Status::Ok();
  }

  Result<uint64_t> MemAvailableBytes() override {
    std::ifstream in("/proc/meminfo");
    if (!in) return Status::Unavailable("/proc/meminfo: cannot open");
    std::stringstream text;
    text << in.rdbuf();
    return ParseMemAvailable(text.str());
  }

  std::optional<uint64_t> AllocatedBytes(const std::string& path) override {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return std::nullopt;
    return static_cast<uint64_t>(st.st_blocks) * 512;  // st_blocks is in 512-byte units
  }
};

}  // namespace

PageCache* DefaultPageCache() {
  static PosixPageCache* cache = new PosixPageCache();
  return cache;
}

Result<uint64_t> ParseMemAvailable(std::string_view meminfo) {
  constexpr std::string_view kKey = "MemAvailable:";
  size_t pos = 0;
  while (pos < meminfo.size()) {
    size_t end = meminfo.find('\n', pos);
    if (end == std::string_view::npos) end = meminfo.size();
    std::string_view line = meminfo.substr(pos, end - pos);
    pos = end + 1;
    if (line.substr(0, kKey.size()) != kKey) continue;
    line.remove_prefix(kKey.size());
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    uint64_t kib = 0;
    auto [ptr, ec] = std::from_chars(line.data(), line.data() + line.size(), kib);
    if (ec != std::errc() || ptr == line.data()) break;
    if (kib > UINT64_MAX / 1024) break;
    return kib * 1024;  // /proc/meminfo says "kB" and means KiB
  }
  return Status::InvalidInput("/proc/meminfo: no MemAvailable line (Linux 3.14 or later has one)");
}

}  // namespace ww::measure
