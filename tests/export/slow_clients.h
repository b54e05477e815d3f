// Hostile HTTP clients for the endpoint's tests, on raw sockets: "slow" ones send a request that
// never ends, one byte per interval (slowloris); "idle" ones connect and send nothing. A
// background thread keeps `slow + idle` connections open for as long as it runs: one the server
// closes is counted and opened again, so the pressure never lets up.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace ww::testing {

// A blocking TCP connection to 127.0.0.1:port, from `from_ip` when given (any 127.x address is
// this machine's, so a test can play several clients); -1 when it fails.
inline int ConnectLoopback(int port, const char* from_ip = nullptr) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (from_ip != nullptr) {
    sockaddr_in local{};
    local.sin_family = AF_INET;
    inet_pton(AF_INET, from_ip, &local.sin_addr);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0) {
      ::close(fd);
      return -1;
    }
  }
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Whether the server closed `fd` (EOF, or a reset) within `wait_ms`; what it sent before goes to
// *got.
inline bool ClosedByServer(int fd, int wait_ms, std::string* got = nullptr) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::max<int64_t>(0, left))) <= 0) return false;
    char buf[4096];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return true;
    if (got != nullptr) got->append(buf, static_cast<size_t>(n));
  }
}

class SlowClients {
 public:
  // `from_ips`: the 127.x addresses the connections come from, in turn (default 127.0.0.1).
  SlowClients(int port, int slow, int idle, int byte_interval_ms = 1000,
              std::vector<std::string> from_ips = {})
      : port_(port),
        slow_(slow),
        idle_(idle),
        interval_ms_(byte_interval_ms),
        from_ips_(std::move(from_ips)) {}
  ~SlowClients() { Stop(); }

  // Opens every connection before it returns, then keeps them up on a thread.
  void Start() {
    for (int i = 0; i < slow_ + idle_; ++i) {
      const char* from = from_ips_.empty()
                             ? nullptr
                             : from_ips_[static_cast<size_t>(i) % from_ips_.size()].c_str();
      conns_.push_back({ConnectLoopback(port_, from), from, i < slow_, 0});
    }
    for (const Conn& c : conns_) held_ += c.fd >= 0;
    thread_ = std::thread([this] { Loop(); });
  }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    for (Conn& c : conns_) {
      if (c.fd >= 0) ::close(c.fd);
      c.fd = -1;
    }
  }

  int held() const { return held_.load(); }          // connections open now
  int slow_cut() const { return slow_cut_.load(); }  // slow ones the server closed
  int idle_cut() const { return idle_cut_.load(); }
  int slow_bytes_sent() const { return bytes_.load(); }

 private:
  struct Conn {
    int fd;
    const char* from;
    bool slow;
    size_t sent;
  };

  void Loop() {
    // Never completes: no blank line ever ends the head.
    static const std::string kHead = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
    auto next_byte = std::chrono::steady_clock::now();
    while (!stop_) {
      std::vector<pollfd> fds;
      for (const Conn& c : conns_) fds.push_back({c.fd, POLLIN, 0});
      ::poll(fds.data(), fds.size(), 20);
      const bool send_now = std::chrono::steady_clock::now() >= next_byte;
      if (send_now) next_byte += std::chrono::milliseconds(interval_ms_);
      for (size_t i = 0; i < conns_.size(); ++i) {
        Conn& c = conns_[i];
        bool closed = c.fd < 0;
        if (!closed && (fds[i].revents & (POLLIN | POLLHUP | POLLERR))) {
          char buf[4096];
          const ssize_t n = ::recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);
          closed = n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
        }
        if (!closed && c.slow && send_now) {
          const char byte = c.sent < kHead.size() ? kHead[c.sent] : 'a';
          if (::send(c.fd, &byte, 1, MSG_NOSIGNAL) == 1) {
            ++c.sent;
            ++bytes_;
          } else {
            closed = true;
          }
        }
        if (!closed) continue;
        if (c.fd >= 0) {
          ::close(c.fd);
          --held_;
          ++(c.slow ? slow_cut_ : idle_cut_);
        }
        c.fd = ConnectLoopback(port_, c.from);
        c.sent = 0;
        held_ += c.fd >= 0;
      }
    }
  }

  const int port_, slow_, idle_, interval_ms_;
  const std::vector<std::string> from_ips_;
  std::vector<Conn> conns_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<int> held_{0}, slow_cut_{0}, idle_cut_{0}, bytes_{0};
};

}  // namespace ww::testing
