#include "telemetry/replay/line_reader.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ww {

Result<std::unique_ptr<LineReader>> LineReader::Open(const std::string& path,
                                                     size_t max_line_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Status::NotFound(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  }
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  return std::unique_ptr<LineReader>(new LineReader(path, fd, max_line_bytes));
}

LineReader::LineReader(std::string path, int fd, size_t max_line_bytes)
    : path_(std::move(path)), fd_(fd), max_line_bytes_(max_line_bytes) {
  buf_.resize(std::max<size_t>(1 << 20, max_line_bytes + 1));
}

LineReader::~LineReader() {
  if (fd_ >= 0) ::close(fd_);
}

Status LineReader::Fill() {
  if (begin_ > 0) {
    std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  while (end_ < buf_.size()) {
    ssize_t n = ::read(fd_, buf_.data() + end_, buf_.size() - end_);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::IoError(fmt::format("{}: read failed: {}", path_, std::strerror(errno)));
    }
    if (n == 0) {
      eof_ = true;
      break;
    }
    end_ += static_cast<size_t>(n);
    bytes_read_ += static_cast<uint64_t>(n);
    break;
  }
  return Status::Ok();
}

Result<bool> LineReader::Next(std::string_view* line, bool* complete) {
  for (;;) {
    const char* start = buf_.data() + begin_;
    const size_t avail = end_ - begin_;
    const void* nl = avail > 0 ? std::memchr(start, '\n', avail) : nullptr;
    if (nl != nullptr) {
      size_t len = static_cast<size_t>(static_cast<const char*>(nl) - start);
      if (len > max_line_bytes_) {
        return Status::InvalidInput(fmt::format("{}:{}: line longer than {} bytes (binary file?)",
                                                path_, line_number_ + 1, max_line_bytes_));
      }
      begin_ += len + 1;
      if (len > 0 && start[len - 1] == '\r') --len;
      *line = std::string_view(start, len);
      *complete = true;
      ++line_number_;
      return true;
    }
    if (avail > max_line_bytes_) {
      return Status::InvalidInput(fmt::format("{}:{}: line longer than {} bytes (binary file?)",
                                              path_, line_number_ + 1, max_line_bytes_));
    }
    if (eof_) {
      if (avail == 0) return false;
      size_t len = avail;
      begin_ = end_;
      if (start[len - 1] == '\r') --len;
      *line = std::string_view(start, len);
      *complete = false;
      ++line_number_;
      return true;
    }
    WW_RETURN_IF_ERROR(Fill());
  }
}

}  // namespace ww
