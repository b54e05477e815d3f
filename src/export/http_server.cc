#include "export/http_server.h"

#include <fmt/format.h>
#include <httplib.h>
#include <sys/socket.h>

#include <charconv>

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

MetricsServer::MetricsServer(const MetricsSnapshot* snapshot) : snapshot_(snapshot) {}

MetricsServer::~MetricsServer() { Stop(); }

Result<std::string> MetricsServer::Start(const std::string& listen) {
  std::string host;
  int port = 0;
  if (Status st = ParseListenAddress(listen, &host, &port); !st.ok()) return st;
  server_ = std::make_unique<httplib::Server>();
  // Headers and body go out as separate writes; with Nagle's algorithm and the client's delayed
  // ACK each scrape would wait ~40 ms for nothing.
  server_->set_tcp_nodelay(true);
  // cpp-httplib's default sets SO_REUSEPORT, which lets a second watcher bind the same port and
  // the kernel split scrapes between the two: a port in use must be an error (docs/watch.md).
  // SO_REUSEADDR alone still allows a restart while old connections sit in TIME_WAIT.
  // An idle keep-alive connection (Prometheus keeps one per target) holds Stop() until it times
  // out: 5 s by default, measured in tests/export/http_server_test.cc. Scrapes come every 15 s
  // or so, so 1 s of idle keep-alive costs them nothing and bounds a watcher's shutdown.
  server_->set_keep_alive_timeout(1);
  server_->set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  const MetricsSnapshot* snap = snapshot_;
  server_->Get("/metrics", [snap](const httplib::Request&, httplib::Response& res) {
    auto text = snap->metrics();
    res.set_content(*text, "text/plain; version=0.0.4; charset=utf-8");
  });
  server_->Get("/healthz", [snap](const httplib::Request&, httplib::Response& res) {
    const bool ok = snap->healthy();
    res.status = ok ? 200 : 503;
    res.set_content(ok ? "ok\n" : "stale: no fresh sample\n", "text/plain");
  });
  server_->Get("/state", [snap](const httplib::Request&, httplib::Response& res) {
    auto text = snap->state();
    res.set_content(*text, "application/json");
  });
  server_->Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("wattwatch: /metrics (Prometheus), /state (JSON), /healthz\n", "text/plain");
  });
  int bound = port;
  if (port == 0) {
    bound = server_->bind_to_any_port(host);
  } else if (!server_->bind_to_port(host, port)) {
    bound = -1;
  }
  if (bound <= 0) {
    server_.reset();
    return Status::Unavailable(fmt::format(
        "--listen {}: cannot bind (address in use, or not an address of this host)", listen));
  }
  httplib::Server* srv = server_.get();
  thread_ = std::thread([srv] { srv->listen_after_bind(); });
  // stop() is a no-op until the accept loop runs; wait for it so Stop() right
  // after Start() works.
  while (!srv->is_running()) std::this_thread::yield();
  const bool v6 = host.find(':') != std::string::npos;
  return v6 ? fmt::format("[{}]:{}", host, bound) : fmt::format("{}:{}", host, bound);
}

void MetricsServer::Stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
  server_.reset();
}

}  // namespace ww::exporter
