// Helpers for the measure tests: files on the real disk (page-cache tests need a real file
// system), written durably so posix_fadvise can drop their pages.
#pragma once

#include <fcntl.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gate/corpus_writers.h"

namespace ww::measure::testing {

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

// A Megatron corpus of `samples` samples of `tokens` int32 tokens each, written durably.
inline std::vector<uint32_t> WriteDurableMegatron(const std::string& prefix, size_t samples,
                                                  uint32_t tokens) {
  std::vector<uint32_t> lengths(samples);
  for (size_t i = 0; i < samples; ++i) lengths[i] = tokens + static_cast<uint32_t>(i % 7);
  gate::testing::WriteMegatron(prefix, lengths, /*int32*/ 4, 50000);
  SyncFile(prefix + ".idx");
  SyncFile(prefix + ".bin");
  return lengths;
}

}  // namespace ww::measure::testing
