// Page-cache facts for tests on the real machine: a file written durably (so posix_fadvise can
// drop its pages) and whether the file system holding a path can have cold reads at all.
#pragma once

#include <fcntl.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <optional>
#include <string>

namespace ww::testing {

// fsync, so no page of the file is dirty: DONTNEED drops only clean pages.
inline void SyncFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

// Why a cold read cannot be had on the file system holding `path`, or nullopt on a real disk.
// tmpfs and overlay (over tmpfs) keep file pages in memory whatever fadvise says.
inline std::optional<std::string> NoColdReads(const std::string& path) {
  struct statfs fs {};
  if (::statfs(path.c_str(), &fs) != 0) return "statfs failed";
  switch (static_cast<uint64_t>(fs.f_type)) {
    case 0x01021994:
      return "tmpfs keeps file pages in memory; posix_fadvise cannot drop them";
    case 0x794c7630:
      return "overlayfs: posix_fadvise may not reach the lower file system's pages";
    case 0x858458f6:
      return "ramfs keeps file pages in memory";
    default:
      return std::nullopt;
  }
}

}  // namespace ww::testing
