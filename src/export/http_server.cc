#include "export/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <httplib.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <map>
#include <system_error>
#include <thread>
#include <vector>

#include "core/strings.h"

namespace ww::exporter {

Status ParseListenAddress(const std::string& listen, std::string* host, int* port) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == listen.size()) {
    return Status::InvalidInput(fmt::format(
        "--listen '{}': expected HOST:PORT, e.g. 127.0.0.1:9400 or 0.0.0.0:9400", listen));
  }
  std::string h = listen.substr(0, colon);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  int p = -1;
  const char* first = listen.data() + colon + 1;
  const char* last = listen.data() + listen.size();
  auto [ptr, ec] = std::from_chars(first, last, p);
  if (ec != std::errc() || ptr != last || p < 0 || p > 65535) {
    return Status::InvalidInput(
        fmt::format("--listen '{}': port must be a number from 0 to 65535", listen));
  }
  *host = h;
  *port = p;
  return Status::Ok();
}

bool IsLoopbackHost(const std::string& host) {
  const std::string h = AsciiLower(host);
  if (h == "localhost" || h == "ip6-localhost" || h == "ip6-loopback") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, h.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, h.c_str(), &v6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
  }
  return false;
}

bool ConstantTimeEquals(const std::string& a, const std::string& b) {
  // Every byte of the longer string is looked at, whatever matched before.
  const size_t n = std::max(a.size(), b.size());
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  for (size_t i = 0; i < n; ++i) {
    const auto x = static_cast<unsigned char>(i < a.size() ? a[i] : 0);
    const auto y = static_cast<unsigned char>(i < b.size() ? b[i] : 0);
    diff |= static_cast<unsigned>(x ^ y);
  }
  return diff == 0;
}

namespace {

// Socket deadlines are real time by nature (poll() waits in real time), so they are not on the
// watcher's Clock: a replay at --speed 100 does not make a client's request timeout 100 times
// shorter.
using SteadyClock = std::chrono::steady_clock;

std::string ErrnoText(int err) { return std::error_code(err, std::generic_category()).message(); }

// cpp-httplib's parser, router and response writer, without its sockets: process_request is
// protected, and takes any Stream.
class Router final : public httplib::Server {
 public:
  // Parses one whole request from `in` and writes its answer to `in`'s output. `close`: say
  // "Connection: close" (the connection's last request). *closed: the client asked to close.
  bool Handle(httplib::Stream& strm, bool close, bool* closed) {
    return process_request(strm, close, *closed, nullptr);
  }
};

// A whole request in memory in, the answer in memory out.
class MemoryStream final : public httplib::Stream {
 public:
  MemoryStream(std::string_view request, const std::string& remote_ip, int remote_port,
               const std::string& local_ip, int local_port)
      : in_(request),
        remote_ip_(remote_ip),
        remote_port_(remote_port),
        local_ip_(local_ip),
        local_port_(local_port) {}

  bool is_readable() const override { return pos_ < in_.size(); }
  bool is_writable() const override { return true; }
  ssize_t read(char* ptr, size_t size) override {
    const size_t n = std::min(size, in_.size() - pos_);
    std::copy_n(in_.data() + pos_, n, ptr);
    pos_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    out_.append(ptr, size);
    return static_cast<ssize_t>(size);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = remote_ip_;
    port = remote_port_;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = local_ip_;
    port = local_port_;
  }
  // No socket: httplib only compares it with FD_SETSIZE.
  socket_t socket() const override { return INVALID_SOCKET; }

  std::string TakeOutput() { return std::move(out_); }

 private:
  std::string_view in_;
  size_t pos_ = 0;
  std::string out_;
  std::string remote_ip_;
  int remote_port_;
  std::string local_ip_;
  int local_port_;
};

std::string CannedResponse(int status, const char* reason, const std::string& body) {
  return fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: "
      "close\r\n\r\n{}",
      status, reason, body.size(), body);
}

void AddressOf(const sockaddr_storage& a, std::string* ip, int* port) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&a);
    inet_ntop(AF_INET, &v4->sin_addr, buf, sizeof buf);
    *port = ntohs(v4->sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&a);
    inet_ntop(AF_INET6, &v6->sin6_addr, buf, sizeof buf);
    *port = ntohs(v6->sin6_port);
  }
  *ip = buf;
}

// Where a request's body ends: the head's Content-Length. false: a body this server cannot
// delimit (Transfer-Encoding) or a malformed length; *status and *why say which.
bool BodyLength(std::string_view head, size_t* length, int* status, std::string* why) {
  *length = 0;
  bool seen = false;
  size_t pos = head.find("\r\n");
  while (pos != std::string_view::npos && pos + 2 < head.size()) {
    const size_t start = pos + 2;
    const size_t end = head.find("\r\n", start);
    const std::string_view line =
        head.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    pos = end;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string name = AsciiLower(TrimSpace(line.substr(0, colon)));
    const std::string_view value = TrimSpace(line.substr(colon + 1));
    if (name == "transfer-encoding") {
      *status = 411;
      *why = "a request body needs Content-Length here\n";
      return false;
    }
    if (name == "content-length") {
      size_t n = 0;
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc() || p != value.data() + value.size() || (seen && n != *length)) {
        *status = 400;
        *why = "bad Content-Length\n";
        return false;
      }
      seen = true;
      *length = n;
    }
  }
  return true;
}

}  // namespace

// The event loop. Every socket is non-blocking and touched by the loop's thread only.
class MetricsServer::Loop {
 public:
  Loop(const MetricsSnapshot* snapshot, const ServerOptions& options, int listen_fd, int wake_fd,
       Counters* counters)
      : options_(options), listen_fd_(listen_fd), wake_fd_(wake_fd), counters_(counters) {
    // Headers and body go out as one buffer; without TCP_NODELAY a keep-alive client's delayed
    // ACK could still hold a second segment ~40 ms.
    router_.set_keep_alive_timeout(std::max<int64_t>(1, options_.idle_timeout_ms / 1000));
    router_.set_keep_alive_max_count(static_cast<size_t>(options_.max_requests_per_connection));
    router_.Get("/metrics", [snapshot](const httplib::Request&, httplib::Response& res) {
      auto text = snapshot->metrics();
      res.set_content(*text, "text/plain; version=0.0.4; charset=utf-8");
    });
    router_.Get("/healthz", [snapshot](const httplib::Request&, httplib::Response& res) {
      const bool ok = snapshot->healthy();
      res.status = ok ? 200 : 503;
      res.set_content(ok ? "ok\n" : "stale: no fresh sample\n", "text/plain");
    });
    // The JSON document: /state for watch, /jobs for fleet (ServerOptions::state_path).
    const std::string& doc = options_.state_path;
    router_.Get(doc, [this, snapshot](const httplib::Request& req, httplib::Response& res) {
      if (!options_.state_token.empty() && !Authorized(req)) {
        ++counters_->unauthorized;
        res.status = 401;
        res.set_header("WWW-Authenticate", "Bearer realm=\"wattwatch\"");
        res.set_content(
            "/state needs \"Authorization: Bearer TOKEN\", TOKEN as in the watcher's "
            "--state-token-file\n",
            "text/plain");
        return;
      }
      auto text = snapshot->state();
      res.set_content(*text, "application/json");
    });
    router_.Get("/", [doc](const httplib::Request&, httplib::Response& res) {
      res.set_content("wattwatch: /metrics (Prometheus), " + doc + " (JSON), /healthz\n",
                      "text/plain");
    });
  }

  ~Loop() {
    for (auto& [fd, c] : conns_) ::close(fd);
    if (listen_fd_ >= 0) ::close(listen_fd_);
    if (wake_fd_ >= 0) ::close(wake_fd_);
  }

  void RequestStop() {
    stop_.store(true);
    const uint64_t one = 1;
    // A full counter still wakes the loop; nothing to do on failure.
    [[maybe_unused]] const ssize_t n = ::write(wake_fd_, &one, sizeof one);
  }

  void Run() {
    std::vector<pollfd> fds;
    std::vector<int> order;  // fds[2 + i] is conns_[order[i]]
    while (!stop_.load()) {
      const auto now = SteadyClock::now();
      fds.clear();
      order.clear();
      fds.push_back({wake_fd_, POLLIN, 0});
      const bool accepting = now >= accept_paused_until_;
      fds.push_back({accepting ? listen_fd_ : -1, POLLIN, 0});
      auto next = SteadyClock::time_point::max();
      if (!accepting) next = accept_paused_until_;
      for (auto& [fd, c] : conns_) {
        short events = 0;
        if (c.phase == Phase::kWrite) {
          events = POLLOUT;
        } else if (c.phase == Phase::kDrain || c.in.size() <= options_.max_request_bytes) {
          events = POLLIN;
        }
        fds.push_back({fd, events, 0});
        order.push_back(fd);
        next = std::min(next, c.deadline);
      }
      int timeout_ms = -1;
      if (next != SteadyClock::time_point::max()) {
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(next - now).count();
        timeout_ms = static_cast<int>(std::clamp<int64_t>(left, 0, 60'000));
      }
      const int ready = ::poll(fds.data(), fds.size(), timeout_ms);
      if (ready < 0) {
        // EINTR, or ENOMEM for the moment: serving must not end over it.
        if (errno != EINTR) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        continue;
      }
      if (stop_.load()) break;
      if (ready > 0) {
        if (fds[0].revents != 0) {
          uint64_t v = 0;
          [[maybe_unused]] const ssize_t n = ::read(wake_fd_, &v, sizeof v);
        }
        if (fds[1].revents != 0) Accept();
        for (size_t i = 0; i < order.size(); ++i) {
          if (fds[2 + i].revents == 0) continue;
          auto it = conns_.find(order[i]);
          if (it == conns_.end()) continue;
          if (!Service(it->second, fds[2 + i].revents)) Close(it);
        }
      }
      Expire();
    }
  }

 private:
  // kIdle: waiting for a request; kRequest: one is arriving; kWrite: answering; kDrain: the
  // answer is out and the connection closing, the client's last bytes dropped.
  enum class Phase { kIdle, kRequest, kWrite, kDrain };
  static constexpr int64_t kDrainMs = 1000;
  struct Conn {
    int fd = -1;
    std::string ip;
    int port = 0;
    std::string local_ip;
    int local_port = 0;
    Phase phase = Phase::kIdle;
    SteadyClock::time_point deadline;
    std::string in;   // received, not yet answered
    std::string out;  // the answer being sent
    size_t out_pos = 0;
    int requests = 0;
    bool close_after_write = false;
  };
  using ConnMap = std::map<int, Conn>;

  static SteadyClock::time_point After(int64_t ms) {
    return SteadyClock::now() + std::chrono::milliseconds(ms);
  }

  bool Authorized(const httplib::Request& req) const {
    const std::string auth = req.get_header_value("Authorization");
    constexpr std::string_view kScheme = "bearer ";
    if (auth.size() < kScheme.size() || AsciiLower(auth.substr(0, kScheme.size())) != kScheme) {
      return false;
    }
    return ConstantTimeEquals(std::string(TrimSpace(auth.substr(kScheme.size()))),
                              options_.state_token);
  }

  void Accept() {
    for (;;) {
      sockaddr_storage addr{};
      socklen_t len = sizeof addr;
      const int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len,
                               SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR) continue;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          // Out of descriptors: the backlog keeps the client until one is free. Without a pause
          // the listening socket, still readable, would spin the loop.
          accept_paused_until_ = After(100);
        }
        return;  // EAGAIN: nothing more waits; ECONNABORTED and the like: the client left
      }
      Conn c;
      c.fd = fd;
      AddressOf(addr, &c.ip, &c.port);
      sockaddr_storage local{};
      socklen_t local_len = sizeof local;
      if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) == 0) {
        AddressOf(local, &c.local_ip, &c.local_port);
      }
      const int per_ip = per_ip_[c.ip];
      if (static_cast<int>(conns_.size()) >= options_.max_connections ||
          per_ip >= options_.max_connections_per_ip) {
        ++counters_->refused_busy;
        if (per_ip == 0) per_ip_.erase(c.ip);
        const std::string busy =
            CannedResponse(503, "Service Unavailable",
                           static_cast<int>(conns_.size()) >= options_.max_connections
                               ? fmt::format("too many connections ({})\n", conns_.size())
                               : fmt::format("too many connections from {} ({})\n", c.ip, per_ip));
        [[maybe_unused]] const ssize_t n =
            ::send(fd, busy.data(), busy.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        ::close(fd);
        continue;
      }
      ++counters_->accepted;
      const int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      ++per_ip_[c.ip];
      c.deadline = After(options_.idle_timeout_ms);
      conns_.emplace(fd, std::move(c));
    }
  }

  // Reads or writes what the socket allows; false when the connection is to be closed.
  bool Service(Conn& c, short revents) {
    const int fd = c.fd;
    if (c.phase == Phase::kWrite) {
      if (revents & (POLLERR | POLLNVAL)) return false;
      return Flush(fd, c);
    }
    if (revents & (POLLERR | POLLNVAL)) return false;
    char buf[16384];
    if (c.phase == Phase::kDrain) {
      for (;;) {
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n == 0) return false;
        if (n < 0) return errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK;
      }
    }
    while (c.in.size() <= options_.max_request_bytes) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n == 0) return false;  // the client closed
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        return false;
      }
      if (c.phase == Phase::kIdle) {
        c.phase = Phase::kRequest;
        c.deadline = After(options_.request_timeout_ms);
      }
      c.in.append(buf, static_cast<size_t>(n));
    }
    return Answer(fd, c);
  }

  // Answers the request at the front of c.in once it is whole.
  bool Answer(int fd, Conn& c) {
    if (c.phase != Phase::kRequest) return true;
    const size_t head_end = c.in.find("\r\n\r\n");
    if (head_end == std::string::npos) {
      if (c.in.size() > options_.max_request_bytes) {
        return Refuse(fd, c, 431, "Request Header Fields Too Large",
                      fmt::format("request head over {} bytes\n", options_.max_request_bytes));
      }
      return true;  // more to come, before the deadline
    }
    const size_t head_len = head_end + 4;
    if (head_len > options_.max_request_bytes) {
      return Refuse(fd, c, 431, "Request Header Fields Too Large",
                    fmt::format("request head over {} bytes\n", options_.max_request_bytes));
    }
    size_t body_len = 0;
    int status = 0;
    std::string why;
    if (!BodyLength(std::string_view(c.in).substr(0, head_len), &body_len, &status, &why)) {
      return Refuse(fd, c, status, status == 411 ? "Length Required" : "Bad Request", why);
    }
    if (body_len > options_.max_request_bytes - head_len) {
      return Refuse(fd, c, 413, "Payload Too Large",
                    fmt::format("request over {} bytes\n", options_.max_request_bytes));
    }
    if (c.in.size() < head_len + body_len) return true;
    const size_t total = head_len + body_len;
    ++c.requests;
    const bool last = c.requests >= options_.max_requests_per_connection;
    bool closed = false;
    MemoryStream strm(std::string_view(c.in).substr(0, total), c.ip, c.port, c.local_ip,
                      c.local_port);
    const bool ok = router_.Handle(strm, last, &closed);
    c.in.erase(0, total);
    c.out = strm.TakeOutput();
    c.out_pos = 0;
    // After a request httplib could not parse, where the next one starts is anyone's guess.
    const bool malformed =
        c.out.rfind("HTTP/1.1 400 ", 0) == 0 || c.out.rfind("HTTP/1.1 414 ", 0) == 0;
    c.close_after_write = last || closed || !ok || malformed;
    c.phase = Phase::kWrite;
    c.deadline = After(options_.write_timeout_ms);
    return Flush(fd, c);
  }

  bool Refuse(int fd, Conn& c, int status, const char* reason, const std::string& body) {
    c.in.clear();
    c.out = CannedResponse(status, reason, body);
    c.out_pos = 0;
    c.close_after_write = true;
    c.phase = Phase::kWrite;
    c.deadline = After(options_.write_timeout_ms);
    return Flush(fd, c);
  }

  // Sends what the socket takes; after a whole answer, waits for the next request (or closes).
  bool Flush(int fd, Conn& c) {
    while (c.out_pos < c.out.size()) {
      const ssize_t n = ::send(fd, c.out.data() + c.out_pos, c.out.size() - c.out_pos,
                               MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0) {
        if (errno == EINTR) continue;
        return errno == EAGAIN || errno == EWOULDBLOCK;  // the rest when POLLOUT says so
      }
      c.out_pos += static_cast<size_t>(n);
    }
    if (c.close_after_write) {
      // Lingering close: a close() with request bytes unread sends a reset, which can destroy
      // the answer before the client reads it. Half-close, and drop what still comes.
      ::shutdown(fd, SHUT_WR);
      c.out.clear();
      c.in.clear();
      c.phase = Phase::kDrain;
      c.deadline = After(kDrainMs);
      return true;
    }
    c.out.clear();
    c.out_pos = 0;
    if (c.in.empty()) {
      c.phase = Phase::kIdle;
      c.deadline = After(options_.idle_timeout_ms);
      return true;
    }
    // A pipelined request already waits.
    c.phase = Phase::kRequest;
    c.deadline = After(options_.request_timeout_ms);
    return Answer(fd, c);
  }

  void Expire() {
    const auto now = SteadyClock::now();
    for (auto it = conns_.begin(); it != conns_.end();) {
      Conn& c = it->second;
      if (c.deadline > now) {
        ++it;
        continue;
      }
      if (c.phase == Phase::kRequest) {
        ++counters_->request_timeouts;
        const std::string timeout = CannedResponse(
            408, "Request Timeout",
            fmt::format("request not complete within {} ms\n", options_.request_timeout_ms));
        [[maybe_unused]] const ssize_t n =
            ::send(it->first, timeout.data(), timeout.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      } else if (c.phase == Phase::kWrite) {
        ++counters_->write_timeouts;
      } else if (c.phase == Phase::kDrain) {
        // done closing
      } else {
        ++counters_->idle_closed;
      }
      it = Close(it);
    }
  }

  ConnMap::iterator Close(ConnMap::iterator it) {
    ::close(it->first);
    if (--per_ip_[it->second.ip] <= 0) per_ip_.erase(it->second.ip);
    return conns_.erase(it);
  }

  const ServerOptions options_;
  Router router_;
  const int listen_fd_;
  const int wake_fd_;
  std::atomic<bool> stop_{false};
  ConnMap conns_;
  std::map<std::string, int> per_ip_;
  SteadyClock::time_point accept_paused_until_{};
  Counters* counters_;
};

MetricsServer::MetricsServer(const MetricsSnapshot* snapshot, ServerOptions options)
    : snapshot_(snapshot), options_(std::move(options)), counters_(std::make_unique<Counters>()) {}

MetricsServer::~MetricsServer() { Stop(); }

Result<std::string> MetricsServer::Start(const std::string& listen) {
  std::string host;
  int port = 0;
  if (Status st = ParseListenAddress(listen, &host, &port); !st.ok()) return st;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    return Status::InvalidInput(
        fmt::format("--listen {}: cannot resolve '{}': {}", listen, host, gai_strerror(rc)));
  }
  int fd = -1;
  int bind_errno = 0;
  for (addrinfo* ai = found; ai != nullptr && fd < 0; ai = ai->ai_next) {
    fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      bind_errno = errno;
      continue;
    }
    // SO_REUSEADDR allows a restart while old connections sit in TIME_WAIT. Not SO_REUSEPORT
    // (cpp-httplib's default): it lets a second watcher bind the same port and the kernel split
    // scrapes between the two, so a port in use must be an error (docs/watch.md).
    const int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd, 128) != 0) {
      bind_errno = errno;
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  if (fd < 0) {
    std::string why;
    switch (bind_errno) {
      case EADDRINUSE:
        why = fmt::format(
            "port {} is in use (another wattwatch or another server; pick a free "
            "port, or 0 for any)",
            port);
        break;
      case EADDRNOTAVAIL:
        why = fmt::format("{} is not an address of this host", host);
        break;
      case EACCES:
        why = fmt::format("port {} needs privileges (ports below 1024)", port);
        break;
      default:
        why = fmt::format("cannot bind: {}", ErrnoText(bind_errno));
    }
    return Status::Unavailable(fmt::format("--listen {}: {}", listen, why));
  }
  sockaddr_storage bound{};
  socklen_t bound_len = sizeof bound;
  std::string bound_ip;
  int bound_port = port;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &bound_len) == 0) {
    AddressOf(bound, &bound_ip, &bound_port);
  }
  const int wake = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake < 0) {
    const int err = errno;
    ::close(fd);
    return Status::Unavailable(fmt::format("--listen {}: eventfd: {}", listen, ErrnoText(err)));
  }
  loop_ = std::make_unique<Loop>(snapshot_, options_, fd, wake, counters_.get());
  Loop* loop = loop_.get();
  thread_ = std::thread([loop] { loop->Run(); });
  const bool v6 = host.find(':') != std::string::npos;
  return v6 ? fmt::format("[{}]:{}", host, bound_port) : fmt::format("{}:{}", host, bound_port);
}

void MetricsServer::Stop() {
  if (loop_) loop_->RequestStop();
  if (thread_.joinable()) thread_.join();
  loop_.reset();  // closes the port and every connection
}

ServerStats MetricsServer::stats() const {
  ServerStats s;
  s.accepted = counters_->accepted.load();
  s.refused_busy = counters_->refused_busy.load();
  s.request_timeouts = counters_->request_timeouts.load();
  s.idle_closed = counters_->idle_closed.load();
  s.write_timeouts = counters_->write_timeouts.load();
  s.unauthorized = counters_->unauthorized.load();
  return s;
}

}  // namespace ww::exporter
