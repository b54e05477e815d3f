#include "core/env.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <set>

#include "core/strings.h"

namespace ww {
namespace {

std::string TooLarge(const std::string& path, uint64_t bytes, uint64_t max_bytes, bool at_least) {
  return fmt::format("{}: {}{} bytes is too large for this kind of file (limit {})", path,
                     at_least ? "more than " : "", bytes, max_bytes);
}

// Opens `path` read-only and returns its descriptor only when it is a regular file. O_NONBLOCK
// makes the open of a FIFO return at once (without it, it waits for a writer forever); the fstat
// then refuses it. For a regular file O_NONBLOCK has no effect, and it is cleared anyway.
Result<int> OpenRegular(const std::string& path, struct stat* st) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    std::string msg = fmt::format("{}: cannot open: {}", path, std::strerror(err));
    return err == ENOENT ? Status::NotFound(msg) : Status::IoError(msg);
  }
  if (::fstat(fd, st) != 0) {
    const int err = errno;
    ::close(fd);
    return Status::IoError(fmt::format("{}: fstat failed: {}", path, std::strerror(err)));
  }
  if (!S_ISREG(st->st_mode)) {
    ::close(fd);
    return Status::IoError(fmt::format("{}: not a regular file ({}); give the file itself", path,
                                       NonRegularFileKind(st->st_mode)));
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

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

class PosixEnv final : public Env {
 public:
  Result<std::unique_ptr<RandomAccessFile>> OpenFile(const std::string& path) override {
    struct stat st {};
    auto fd = OpenRegular(path, &st);
    if (!fd.ok()) return fd.status();
    return std::unique_ptr<RandomAccessFile>(
        new PosixFile(path, *fd, static_cast<uint64_t>(st.st_size)));
  }

  bool FileExists(const std::string& path) override {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  }

  Result<std::string> ReadFileToString(const std::string& path, uint64_t max_bytes) override {
    struct stat st {};
    auto fd = OpenRegular(path, &st);
    if (!fd.ok()) return fd.status();
    const uint64_t size = static_cast<uint64_t>(st.st_size);
    if (size > max_bytes) {
      ::close(*fd);
      return Status::InvalidInput(TooLarge(path, size, max_bytes, /*at_least=*/false));
    }
    // Read to the end rather than st_size bytes: /proc files say 0 and hold text.
    std::string text;
    text.reserve(static_cast<size_t>(size));
    char buf[65536];
    for (;;) {
      const ssize_t n = ::read(*fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        const int err = errno;
        ::close(*fd);
        return Status::IoError(fmt::format("{}: read failed: {}", path, std::strerror(err)));
      }
      if (n == 0) break;
      text.append(buf, static_cast<size_t>(n));
      if (text.size() > max_bytes) {
        ::close(*fd);
        return Status::InvalidInput(TooLarge(path, max_bytes, max_bytes, /*at_least=*/true));
      }
    }
    ::close(*fd);
    return text;
  }

  Result<std::vector<std::string>> GetChildren(const std::string& dir) override {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) {
      const int err = errno;
      std::string msg = fmt::format("{}: cannot list: {}", dir, std::strerror(err));
      return err == ENOENT ? Status::NotFound(msg) : Status::IoError(msg);
    }
    std::vector<std::string> names;
    while (dirent* e = ::readdir(d)) {
      const std::string_view name = e->d_name;
      if (name == "." || name == "..") continue;
      names.emplace_back(name);
    }
    ::closedir(d);
    return names;
  }

  Result<MemInfo> ReadMemInfo() override {
    auto text = ReadFileToString("/proc/meminfo", uint64_t{1} << 20);
    if (!text.ok()) return Status::Unavailable(text.status().message());
    return ParseMemInfo(*text);
  }

  Result<uint64_t> FreeBytes(const std::string& path) override {
    const std::string existing = NearestExisting(path);
    struct statvfs vfs {};
    if (::statvfs(existing.c_str(), &vfs) != 0) {
      return Status::IoError(fmt::format("{}: statvfs failed: {}", existing, std::strerror(errno)));
    }
    return static_cast<uint64_t>(vfs.f_bavail) * static_cast<uint64_t>(vfs.f_frsize);
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

  Result<uint64_t> ResidentBytes(const std::string& path) override {
    struct stat st {};
    auto fd = OpenRegular(path, &st);
    if (!fd.ok()) return fd.status();
    const uint64_t size = static_cast<uint64_t>(st.st_size);
    const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    uint64_t resident = 0;
    // Map and probe in windows so a 1 TB corpus needs neither 1 TB of address space at once
    // nor a 256 MB residency vector.
    constexpr uint64_t kWindowBytes = uint64_t{1} << 30;
    std::vector<unsigned char> vec;
    for (uint64_t off = 0; off < size; off += kWindowBytes) {
      const uint64_t len = std::min(kWindowBytes, size - off);
      void* map = ::mmap(nullptr, len, PROT_READ, MAP_SHARED, *fd, static_cast<off_t>(off));
      if (map == MAP_FAILED) {
        const int err = errno;
        ::close(*fd);
        return Status::IoError(fmt::format("{}: mmap failed: {}", path, std::strerror(err)));
      }
      vec.assign((len + page - 1) / page, 0);
      if (::mincore(map, len, vec.data()) == 0) {
        for (size_t i = 0; i < vec.size(); ++i) {
          if (vec[i] & 1) resident += std::min(page, len - i * page);
        }
      }
      ::munmap(map, len);
    }
    ::close(*fd);
    return resident;
  }

  Status DropCachedPages(const std::string& path) override {
    struct stat st {};
    auto fd = OpenRegular(path, &st);
    if (!fd.ok()) return fd.status();
    int rc = ::posix_fadvise(*fd, 0, 0, POSIX_FADV_DONTNEED);
    if (rc == 0) {
      // DONTNEED skips dirty pages (a corpus written moments ago). Writing them back first is
      // allowed on a read-only descriptor and lets the second advice drop them too.
      auto resident = ResidentBytes(path);
      if (resident.ok() && *resident > 0 && ::fdatasync(*fd) == 0) {
        rc = ::posix_fadvise(*fd, 0, 0, POSIX_FADV_DONTNEED);
      }
    }
    ::close(*fd);
    if (rc != 0) {
      return Status::IoError(
          fmt::format("{}: posix_fadvise(DONTNEED) failed: {}", path, std::strerror(rc)));
    }
    return Status::Ok();
  }

  std::optional<uint64_t> AllocatedBytes(const std::string& path) override {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return std::nullopt;
    return static_cast<uint64_t>(st.st_blocks) * 512;  // st_blocks is in 512-byte units
  }
};

Status MemNotFound(const std::string& path) {
  return Status::NotFound(fmt::format("{}: cannot open: no such file", path));
}

}  // namespace

const char* NonRegularFileKind(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a plain file";
}

Result<MemInfo> ParseMemInfo(std::string_view text) {
  MemInfo info;
  bool any = false;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view key = line.substr(0, colon);
    std::optional<uint64_t>* field = key == "MemTotal"       ? &info.total_bytes
                                     : key == "MemAvailable" ? &info.available_bytes
                                                             : nullptr;
    if (field == nullptr) continue;
    any = true;
    const std::string_view value = TrimSpace(line.substr(colon + 1));
    uint64_t kib = 0;
    auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), kib);
    if (ec != std::errc() || ptr == value.data() || kib > UINT64_MAX / 1024) continue;
    if (TrimSpace(std::string_view(ptr, static_cast<size_t>(value.data() + value.size() - ptr))) !=
        "kB") {
      continue;
    }
    *field = kib * 1024;  // /proc/meminfo says "kB" and means KiB
  }
  if (!any) {
    return Status::InvalidInput("/proc/meminfo: no MemTotal or MemAvailable line");
  }
  return info;
}

Env* DefaultEnv() {
  static PosixEnv* env = new PosixEnv();
  return env;
}

Result<std::unique_ptr<RandomAccessFile>> MemEnv::OpenFile(const std::string& path) {
  auto it = files_.find(path);
  if (it == files_.end()) return MemNotFound(path);
  return std::unique_ptr<RandomAccessFile>(new MemFile(path, &it->second));
}

Result<std::string> MemEnv::ReadFileToString(const std::string& path, uint64_t max_bytes) {
  auto it = files_.find(path);
  if (it == files_.end()) return MemNotFound(path);
  if (it->second.size() > max_bytes) {
    return Status::InvalidInput(TooLarge(path, it->second.size(), max_bytes, /*at_least=*/false));
  }
  return it->second;
}

Result<std::vector<std::string>> MemEnv::GetChildren(const std::string& dir) {
  const std::string prefix = dir.empty() || dir.back() == '/' ? dir : dir + "/";
  std::set<std::string> names;
  for (auto it = files_.lower_bound(prefix); it != files_.end(); ++it) {
    if (it->first.compare(0, prefix.size(), prefix) != 0) break;
    const std::string rest = it->first.substr(prefix.size());
    names.insert(rest.substr(0, rest.find('/')));
  }
  if (names.empty())
    return Status::NotFound(fmt::format("{}: cannot list: no such directory", dir));
  return std::vector<std::string>(names.begin(), names.end());
}

Result<uint64_t> MemEnv::ResidentBytes(const std::string& path) {
  auto it = files_.find(path);
  if (it == files_.end()) return MemNotFound(path);
  return static_cast<uint64_t>(it->second.size());
}

Status MemEnv::DropCachedPages(const std::string& path) {
  return files_.count(path) ? Status::Ok() : MemNotFound(path);
}

std::optional<uint64_t> MemEnv::AllocatedBytes(const std::string& path) {
  auto it = files_.find(path);
  if (it == files_.end()) return std::nullopt;
  return static_cast<uint64_t>(it->second.size());
}

}  // namespace ww
