#include "export/event_log.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ww::exporter {

Result<std::unique_ptr<EventLog>> EventLog::Open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Status::IoError(fmt::format("--events {}: {}", path, std::strerror(errno)));
  }
  return std::unique_ptr<EventLog>(new EventLog(path, fd));
}

EventLog::~EventLog() { ::close(fd_); }

Status EventLog::Append(const nlohmann::json& event) {
  // Invalid UTF-8 (a host name, a log line quoted in a reason) becomes U+FFFD,
  // never an exception.
  std::string line = event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  line += '\n';
  std::lock_guard<std::mutex> lock(mu_);
  size_t off = 0;
  while (off < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + off, line.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::IoError(fmt::format("events {}: {}", path_, std::strerror(errno)));
    }
    off += static_cast<size_t>(n);
  }
  if (::fsync(fd_) != 0) {
    return Status::IoError(fmt::format("events {}: fsync: {}", path_, std::strerror(errno)));
  }
  return Status::Ok();
}

}  // namespace ww::exporter
