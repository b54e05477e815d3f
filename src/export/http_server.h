// MetricsServer: serves /metrics, /healthz and /state from a MetricsSnapshot. Handlers only copy a
// shared_ptr to the last rendering, so a flood of scrapes costs the sampling thread nothing but
// CPU time; every answer is one whole rendering. Any other path or method is 404.
//
// One thread runs an event loop (poll) that owns every socket, non-blocking. A connection costs a
// file descriptor and a buffer, never a thread: a client that sends its request a byte a second,
// or nothing at all, holds no worker that a scrape would wait for, and Stop() closes everything at
// once. What a client may hold is bounded (ServerOptions): a request must arrive whole within
// request_timeout_ms of its first byte (408 and closed otherwise), an idle connection is closed
// after idle_timeout_ms, an answer the client does not read after write_timeout_ms, and
// connections beyond max_connections, or max_connections_per_ip from one address, are answered
// 503 and closed at once. Only whole requests reach cpp-httplib's parser and router
// (httplib::Server::process_request, on a memory stream), so its per-recv read timeout, which a
// trickle never trips, plays no part.
//
// /state can require a bearer token (ServerOptions::state_token): "Authorization: Bearer TOKEN",
// compared in constant time; 401 otherwise. /metrics and /healthz stay open, as Prometheus and
// liveness probes expect.
//
// Ownership: borrows the snapshot, which must outlive the server. Thread-safety: Start and Stop
// from one thread; stats() and Publish on the snapshot from any.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "core/status.h"
#include "export/watch_metrics.h"

namespace ww::exporter {

struct ServerOptions {
  int max_connections = 256;  // open at once, in all (each is one file descriptor)
  int max_connections_per_ip = 32;
  int64_t request_timeout_ms = 5000;     // from a request's first byte to its last
  int64_t idle_timeout_ms = 10000;       // a connection's wait for its (next) request
  int64_t write_timeout_ms = 5000;       // to hand one answer to a client that reads slowly
  size_t max_request_bytes = 16 * 1024;  // request line, headers and body
  int max_requests_per_connection = 1000;
  std::string state_token;  // non-empty: /state needs "Authorization: Bearer <state_token>"
  // Where the snapshot's JSON document is served (`wattwatch fleet` serves its jobs at /jobs).
  std::string state_path = "/state";
};

// What the server refused or cut off, for its own metrics and for tests.
struct ServerStats {
  uint64_t accepted = 0;
  uint64_t refused_busy = 0;      // over max_connections or max_connections_per_ip: 503
  uint64_t request_timeouts = 0;  // request not whole within request_timeout_ms: 408
  uint64_t idle_closed = 0;       // no request within idle_timeout_ms
  uint64_t write_timeouts = 0;    // answer not taken within write_timeout_ms
  uint64_t unauthorized = 0;      // /state without the token: 401
};

class MetricsServer {
 public:
  explicit MetricsServer(const MetricsSnapshot* snapshot, ServerOptions options = {});
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // Binds `listen` ("HOST:PORT"; port 0 picks a free port) and starts serving. Returns the bound
  // "HOST:PORT". kInvalidInput for a malformed address or a host that does not resolve;
  // kUnavailable when the bind fails, saying why ("port 9400 is in use", "not an address of this
  // host"). A port another server listens on is in use, even one of this user's: no SO_REUSEPORT.
  Result<std::string> Start(const std::string& listen);
  // Stops accepting, closes the port and every open connection, and joins the server thread;
  // returns at once whatever the clients do. Idempotent; the destructor calls it.
  void Stop();

  ServerStats stats() const;

 private:
  class Loop;
  struct Counters {
    std::atomic<uint64_t> accepted{0}, refused_busy{0}, request_timeouts{0}, idle_closed{0},
        write_timeouts{0}, unauthorized{0};
  };
  const MetricsSnapshot* snapshot_;
  ServerOptions options_;
  std::unique_ptr<Counters> counters_;  // outlives each Loop, so stats() holds after Stop()
  std::unique_ptr<Loop> loop_;
  std::thread thread_;
};

// Splits "HOST:PORT" ("[::1]:9400" for IPv6); kInvalidInput names what is wrong.
Status ParseListenAddress(const std::string& listen, std::string* host, int* port);

// Whether `host` (as given to --listen) only accepts connections from this machine: 127.0.0.0/8,
// ::1, localhost. 0.0.0.0, ::, a host name or an interface address do not.
bool IsLoopbackHost(const std::string& host);

// Equality of two secrets in time that depends on their lengths only, not on where they differ.
bool ConstantTimeEquals(const std::string& a, const std::string& b);

}  // namespace ww::exporter
