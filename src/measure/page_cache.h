// PageCache: the machine facts `wattwatch iobench` needs about the kernel page cache, behind one
// seam so tests can give a memory budget or a cache that refuses to drop: which bytes of a file
// are resident (mincore), dropping a file's pages (posix_fadvise DONTNEED, no root needed), the
// memory available for caching (MemAvailable) and the bytes a file really has on disk.
// Ownership: DefaultPageCache() is owned by the library and lives forever.
// Thread-safety: the default implementation is stateless and safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace ww::measure {

class PageCache {
 public:
  virtual ~PageCache() = default;
  // Bytes of `path` resident in the page cache now.
  virtual Result<uint64_t> ResidentBytes(const std::string& path) = 0;
  // Asks the kernel to drop the cached pages of `path`. Best effort: pages that are dirty, under
  // writeback or mapped by another process can stay, so callers measure residency afterwards
  // rather than assume it is zero.
  virtual Status Drop(const std::string& path) = 0;
  // Memory the kernel could give the page cache without swapping (MemAvailable).
  virtual Result<uint64_t> MemAvailableBytes() = 0;
  // Bytes allocated on disk for `path` (st_blocks); below the size for a sparse file, whose
  // holes read as zeros without touching the disk. nullopt when unknown.
  virtual std::optional<uint64_t> AllocatedBytes(const std::string& path) = 0;
};

// The real machine. Never null.
PageCache* DefaultPageCache();

// MemAvailable from the text of /proc/meminfo, in bytes; InvalidInput when absent.
Result<uint64_t> ParseMemAvailable(std::string_view meminfo);

}  // namespace ww::measure
