#include "gate/env.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

namespace ww::gate {
namespace {

class PosixFile final : public RandomAccessFile {
 public:
  PosixFile(std::string path, int fd, uint64_t size)
      : path_(std::move(path)), fd_(fd), size_(size) {}
  ~PosixFile() override { ::close(fd_); }
  uint64_t size_bytes() const override { return size_; }
  const std::string& path() const override { return path_; }
  Status ReadAt(uint64_t offset, size_t n, void* dst) const override {
    if (offset > size_ || n > size_ - offset) {
      return Status::IoError(fmt::format(
          "{}: read of {} bytes at offset {} is past the end ({} bytes)", path_, n, offset, size_));
    }
    char* out = static_cast<char*>(dst);
    while (n > 0) {
      ssize_t got = ::pread(fd_, out, n, static_cast<off_t>(offset));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        return Status::IoError(
            fmt::format("{}: read failed at offset {}: {}", path_, offset,
                        got < 0 ? std::strerror(errno) : "unexpected end of file"));
      }
      out += got;
      offset += static_cast<uint64_t>(got);
      n -= static_cast<size_t>(got);
    }
    return Status::Ok();
  }

 private:
  std::string path_;
  int fd_;
  uint64_t size_;
};

class MemFile final : public RandomAccessFile {
 public:
  MemFile(std::string path, const std::string* bytes) : path_(std::move(path)), bytes_(bytes) {}
  uint64_t size_bytes() const override { return bytes_->size(); }
  const std::string& path() const override { return path_; }
  Status ReadAt(uint64_t offset, size_t n, void* dst) const override {
    if (offset > bytes_->size() || n > bytes_->size() - offset) {
      return Status::IoError(
          fmt::format("{}: read of {} bytes at offset {} is past the end ({} bytes)", path_, n,
                      offset, bytes_->size()));
    }
    if (n > 0) std::memcpy(dst, bytes_->data() + offset, n);
    return Status::Ok();
  }

 private:
  std::string path_;
  const std::string* bytes_;
};

std::string NearestExisting(const std::string& path) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(path, ec);
  while (!p.empty() && !std::filesystem::exists(p, ec)) {
    if (p == p.parent_path()) break;
    p = p.parent_path();
  }
  return p.empty() ? std::string("/") : p.string();
}

class PosixGateEnv final : public GateEnv {
 public:
  Result<std::unique_ptr<RandomAccessFile>> OpenFile(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      std::string msg = fmt::format("{}: cannot open: {}", path, std::strerror(err));
      return err == ENOENT ? Status::NotFound(msg) : Status::IoError(msg);
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      return Status::IoError(fmt::format("{}: not a regular file", path));
    }
    return std::unique_ptr<RandomAccessFile>(
        new PosixFile(path, fd, static_cast<uint64_t>(st.st_size)));
  }
  bool FileExists(const std::string& path) override {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  }
  Result<uint64_t> FreeBytes(const std::string& path) override {
    const std::string existing = NearestExisting(path);
    struct statvfs vfs {};
    if (::statvfs(existing.c_str(), &vfs) != 0) {
      return Status::IoError(fmt::format("{}: statvfs failed: {}", existing, std::strerror(errno)));
    }
    return static_cast<uint64_t>(vfs.f_bavail) * static_cast<uint64_t>(vfs.f_frsize);
  }
  Result<uint64_t> MemTotalBytes() override {
    std::ifstream in("/proc/meminfo");
    std::string key;
    uint64_t kib = 0;
    std::string unit;
    while (in >> key >> kib >> unit) {
      if (key == "MemTotal:") return kib * 1024;
    }
    return Status::Unavailable("/proc/meminfo: no MemTotal line");
  }
  Result<uint64_t> ResidentBytes(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      return Status::IoError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      ::close(fd);
      return Status::IoError(fmt::format("{}: fstat failed", path));
    }
    const uint64_t size = static_cast<uint64_t>(st.st_size);
    const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    uint64_t resident = 0;
    // Map and probe in windows so a 1 TB corpus needs neither 1 TB of address space at once
    // nor a 256 MB residency vector.
    constexpr uint64_t kWindowBytes = uint64_t{1} << 30;
    std::vector<unsigned char> vec;
    for (uint64_t off = 0; off < size; off += kWindowBytes) {
      const uint64_t len = std::min(kWindowBytes, size - off);
      void* map = ::mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(off));
      if (map == MAP_FAILED) {
        ::close(fd);
        return Status::IoError(fmt::format("{}: mmap failed: {}", path, std::strerror(errno)));
      }
      vec.assign((len + page - 1) / page, 0);
      if (::mincore(map, len, vec.data()) == 0) {
        for (size_t i = 0; i < vec.size(); ++i) {
          if (vec[i] & 1) resident += std::min(page, len - i * page);
        }
      }
      ::munmap(map, len);
    }
    ::close(fd);
    return resident;
  }
  std::optional<std::string> NetworkFsType(const std::string& path) override {
    struct statfs fs {};
    if (::statfs(NearestExisting(path).c_str(), &fs) != 0) return std::nullopt;
    switch (static_cast<uint64_t>(fs.f_type)) {
      case 0x6969:
        return "nfs";
      case 0x0BD00BD0:
        return "lustre";
      case 0xFF534D42:
        return "cifs";
      case 0xFE534D42:
        return "smb2";
      case 0x47504653:
        return "gpfs";
      case 0x65735546:
        return "fuse";
      case 0x00C36400:
        return "ceph";
      case 0x013111A8:
        return "ibrix";
      case 0x5346414F:
        return "afs";
      default:
        return std::nullopt;
    }
  }
};

}  // namespace

GateEnv* DefaultGateEnv() {
  static PosixGateEnv* env = new PosixGateEnv();
  return env;
}

Result<std::unique_ptr<RandomAccessFile>> MemGateEnv::OpenFile(const std::string& path) {
  auto it = files_.find(path);
  if (it == files_.end())
    return Status::NotFound(fmt::format("{}: cannot open: no such file", path));
  return std::unique_ptr<RandomAccessFile>(new MemFile(path, &it->second));
}

Result<uint64_t> MemGateEnv::ResidentBytes(const std::string& path) {
  auto it = files_.find(path);
  if (it == files_.end()) return Status::NotFound(path + ": no such file");
  return static_cast<uint64_t>(static_cast<double>(it->second.size()) * resident_fraction);
}

Result<std::string> ReadSmallFile(GateEnv* env, const std::string& path, uint64_t max_bytes) {
  auto file = env->OpenFile(path);
  if (!file.ok()) return file.status();
  const uint64_t size = (*file)->size_bytes();
  if (size > max_bytes) {
    return Status::InvalidInput(fmt::format(
        "{}: {} bytes is too large for this kind of file (limit {})", path, size, max_bytes));
  }
  std::string text(size, '\0');
  WW_RETURN_IF_ERROR((*file)->ReadAt(0, size, text.data()));
  return text;
}

}  // namespace ww::gate
