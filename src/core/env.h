// Env: every file and machine dependency of the data-path tools and the watcher's probes behind
// one interface (the leveldb Env pattern): files read by offset and whole, directory listings,
// memory (MemTotal and MemAvailable, /proc/meminfo read and parsed once per call), free space,
// the file system type, and the page cache (residency, dropping a file's pages, allocated bytes).
// Production passes DefaultEnv(); a test derives from EnvWrapper and overrides the one call it
// fakes, or uses MemEnv for in-memory files (fuzz targets, reader tests, a fake /proc).
//
// Ownership: DefaultEnv() is owned by the library and lives forever; an EnvWrapper does not own
// its target, which must outlive it; a RandomAccessFile owns its descriptor.
// Thread-safety: DefaultEnv() and the files it opens are safe from any thread (pread, no shared
// state). MemEnv is safe for concurrent reads once populated, not for AddFile concurrent with
// anything else.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace ww {

// What a file that is not a regular one is, in words, for "not a regular file (a FIFO)": a FIFO,
// a directory, a character or block device, a socket.
const char* NonRegularFileKind(mode_t mode);

// A file read by offset. Reads are exact: a read past the end is an error, never a short read,
// so a reader that trusts a lying header gets a clear error rather than garbage.
class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;
  virtual uint64_t size_bytes() const = 0;
  // Reads exactly n bytes at offset into dst; IoError (naming the file) when the range is past
  // the end or the read fails.
  virtual Status ReadAt(uint64_t offset, size_t n, void* dst) const = 0;
  virtual const std::string& path() const = 0;
};

// The memory lines of /proc/meminfo that the tools use, in bytes.
struct MemInfo {
  std::optional<uint64_t> total_bytes;      // MemTotal: physical memory
  std::optional<uint64_t> available_bytes;  // MemAvailable: what the page cache could get
};

// Parses the text of /proc/meminfo ("kB" there means KiB). InvalidInput when it has neither
// MemTotal nor MemAvailable; a malformed value leaves that field empty.
Result<MemInfo> ParseMemInfo(std::string_view meminfo_text);

class Env {
 public:
  virtual ~Env() = default;

  // ---- Files ----
  // Opens a regular file for reads by offset. NotFound when missing; IoError naming the file
  // when it is not a regular file (a FIFO, a directory, a device): those are refused without
  // blocking, since opening a FIFO for reading would wait for a writer forever.
  virtual Result<std::unique_ptr<RandomAccessFile>> OpenFile(const std::string& path) = 0;
  // True for an existing regular file.
  virtual bool FileExists(const std::string& path) = 0;
  // The whole of a small regular file (or a /proc file, whose size reads as 0), refusing more
  // than max_bytes with InvalidInput so a path that points at a multi-GB corpus by mistake cannot
  // exhaust memory. Not-regular files are refused as OpenFile refuses them.
  virtual Result<std::string> ReadFileToString(const std::string& path, uint64_t max_bytes) = 0;
  // Names of the entries of directory `dir` (no "." or ".."), in no particular order.
  virtual Result<std::vector<std::string>> GetChildren(const std::string& dir) = 0;

  // ---- Machine ----
  // MemTotal and MemAvailable, from one read of /proc/meminfo.
  virtual Result<MemInfo> ReadMemInfo() = 0;
  // Bytes available to an unprivileged user on the file system holding `path` (or its nearest
  // existing parent directory, since a checkpoint dir is often created by the job itself).
  virtual Result<uint64_t> FreeBytes(const std::string& path) = 0;
  // Name of the file system type holding `path` when it is a network one ("nfs", "lustre",
  // "cifs", ...), nullopt for a local one.
  virtual std::optional<std::string> NetworkFsType(const std::string& path) = 0;

  // ---- Page cache ----
  // Bytes of `path` resident in the page cache now (mincore).
  virtual Result<uint64_t> ResidentBytes(const std::string& path) = 0;
  // Asks the kernel to drop the cached pages of `path` (posix_fadvise DONTNEED, no root needed).
  // Best effort: pages that are dirty, under writeback or mapped by another process can stay, so
  // callers measure residency afterwards rather than assume it is zero.
  virtual Status DropCachedPages(const std::string& path) = 0;
  // Bytes allocated on disk for `path` (st_blocks); below the size for a sparse file, whose
  // holes read as zeros without touching the disk. nullopt when unknown.
  virtual std::optional<uint64_t> AllocatedBytes(const std::string& path) = 0;
};

// The real machine (POSIX, Linux /proc). Never null.
Env* DefaultEnv();

// Forwards every call to a target Env, so a test overrides only the call it fakes:
//   class NoDrop : public EnvWrapper {
//     using EnvWrapper::EnvWrapper;
//     Status DropCachedPages(const std::string&) override { return Status::Ok(); }
//   };
class EnvWrapper : public Env {
 public:
  explicit EnvWrapper(Env* target) : target_(target) {}
  Env* target() const { return target_; }

  Result<std::unique_ptr<RandomAccessFile>> OpenFile(const std::string& path) override {
    return target_->OpenFile(path);
  }
  bool FileExists(const std::string& path) override { return target_->FileExists(path); }
  Result<std::string> ReadFileToString(const std::string& path, uint64_t max_bytes) override {
    return target_->ReadFileToString(path, max_bytes);
  }
  Result<std::vector<std::string>> GetChildren(const std::string& dir) override {
    return target_->GetChildren(dir);
  }
  Result<MemInfo> ReadMemInfo() override { return target_->ReadMemInfo(); }
  Result<uint64_t> FreeBytes(const std::string& path) override { return target_->FreeBytes(path); }
  std::optional<std::string> NetworkFsType(const std::string& path) override {
    return target_->NetworkFsType(path);
  }
  Result<uint64_t> ResidentBytes(const std::string& path) override {
    return target_->ResidentBytes(path);
  }
  Status DropCachedPages(const std::string& path) override {
    return target_->DropCachedPages(path);
  }
  std::optional<uint64_t> AllocatedBytes(const std::string& path) override {
    return target_->AllocatedBytes(path);
  }

 private:
  Env* target_;
};

// Files held in memory; every machine call goes to `base` (leveldb's NewMemEnv). The file calls
// see only the in-memory files: OpenFile, FileExists, ReadFileToString, GetChildren (the names
// under a directory prefix) and the page-cache calls on them (an in-memory file is fully
// resident and fully allocated; dropping is a no-op).
class MemEnv : public EnvWrapper {
 public:
  explicit MemEnv(Env* base = DefaultEnv()) : EnvWrapper(base) {}
  // Adds or replaces a file.
  void AddFile(const std::string& path, std::string bytes) { files_[path] = std::move(bytes); }
  void RemoveFile(const std::string& path) { files_.erase(path); }

  Result<std::unique_ptr<RandomAccessFile>> OpenFile(const std::string& path) override;
  bool FileExists(const std::string& path) override { return files_.count(path) > 0; }
  Result<std::string> ReadFileToString(const std::string& path, uint64_t max_bytes) override;
  Result<std::vector<std::string>> GetChildren(const std::string& dir) override;
  Result<uint64_t> ResidentBytes(const std::string& path) override;
  Status DropCachedPages(const std::string& path) override;
  std::optional<uint64_t> AllocatedBytes(const std::string& path) override;

 private:
  std::map<std::string, std::string> files_;
};

}  // namespace ww
