// GateEnv: every file and machine dependency of the gate (file bytes, free disk space, RAM, page
// cache residency, file system type) behind one interface, so tests and fuzz targets run on
// in-memory files and a fake machine (the leveldb Env pattern).
// Ownership: DefaultGateEnv() is owned by the library and lives forever; MemGateEnv is owned by
// its creator. Thread-safety: PosixGateEnv is stateless and safe from any thread; MemGateEnv is
// safe for concurrent reads once populated, not for concurrent AddFile.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "core/status.h"

namespace ww::gate {

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

class GateEnv {
 public:
  virtual ~GateEnv() = default;
  virtual Result<std::unique_ptr<RandomAccessFile>> OpenFile(const std::string& path) = 0;
  virtual bool FileExists(const std::string& path) = 0;
  // Bytes available to an unprivileged user on the file system holding `path` (or its nearest
  // existing parent directory, since a checkpoint dir is often created by the job itself).
  virtual Result<uint64_t> FreeBytes(const std::string& path) = 0;
  // Physical memory of this machine (MemTotal).
  virtual Result<uint64_t> MemTotalBytes() = 0;
  // Bytes of `path` resident in the page cache now (mincore).
  virtual Result<uint64_t> ResidentBytes(const std::string& path) = 0;
  // Name of the file system type holding `path` when it is a network one ("nfs", "lustre",
  // "cifs", ...), nullopt for a local one.
  virtual std::optional<std::string> NetworkFsType(const std::string& path) = 0;
};

// The real machine. Never null.
GateEnv* DefaultGateEnv();

// In-memory files and a configurable machine, for tests and fuzzing.
class MemGateEnv : public GateEnv {
 public:
  void AddFile(const std::string& path, std::string bytes) { files_[path] = std::move(bytes); }
  uint64_t free_bytes = uint64_t{1} << 40;
  uint64_t mem_total_bytes = uint64_t{64} << 30;
  double resident_fraction = 1.0;
  std::optional<std::string> network_fs;

  Result<std::unique_ptr<RandomAccessFile>> OpenFile(const std::string& path) override;
  bool FileExists(const std::string& path) override { return files_.count(path) > 0; }
  Result<uint64_t> FreeBytes(const std::string&) override { return free_bytes; }
  Result<uint64_t> MemTotalBytes() override { return mem_total_bytes; }
  Result<uint64_t> ResidentBytes(const std::string& path) override;
  std::optional<std::string> NetworkFsType(const std::string&) override { return network_fs; }

 private:
  std::map<std::string, std::string> files_;
};

// Reads a whole (small) file as text, refusing files over max_bytes so a path that points at a
// multi-GB corpus by mistake cannot exhaust memory.
Result<std::string> ReadSmallFile(GateEnv* env, const std::string& path,
                                  uint64_t max_bytes = 64u << 20);

}  // namespace ww::gate
