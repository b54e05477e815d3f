// MetricsServer: serves /metrics, /healthz and /state from a MetricsSnapshot with cpp-httplib, on
// its own threads. Handlers only copy a shared_ptr to the last rendering, so a flood of scrapes
// costs the sampling thread nothing but CPU time; every answer is one whole rendering. Any other
// path or method is 404.
// Ownership: borrows the snapshot, which must outlive the server. Thread-safety: Start and Stop
// from one thread; Publish on the snapshot from any.
#pragma once

#include <memory>
#include <string>
#include <thread>

#include "core/status.h"
#include "export/watch_metrics.h"

namespace httplib {
class Server;
}

namespace ww::exporter {

class MetricsServer {
 public:
  explicit MetricsServer(const MetricsSnapshot* snapshot);
  ~MetricsServer();

  // Binds `listen` ("HOST:PORT"; port 0 picks a free port) and starts serving. Returns the bound
  // "HOST:PORT". kInvalidInput for a malformed address, kUnavailable when the bind fails (a port
  // another server listens on is in use, even one of this user's).
  Result<std::string> Start(const std::string& listen);
  // Stops accepting, closes the port and joins the server thread (open keep-alive connections
  // included). Idempotent; the destructor calls it.
  void Stop();

 private:
  const MetricsSnapshot* snapshot_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
};

// Splits "HOST:PORT" ("[::1]:9400" for IPv6); kInvalidInput names what is wrong.
Status ParseListenAddress(const std::string& listen, std::string* host, int* port);

}  // namespace ww::exporter
