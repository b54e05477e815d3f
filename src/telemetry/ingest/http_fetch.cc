#include "telemetry/ingest/http_fetch.h"

#include <fmt/format.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace ww::ingest {

Result<HttpFetched> BoundedGet(httplib::Client& client, const std::string& path,
                               const httplib::Params& params, const httplib::Headers& headers,
                               const HttpFetchLimits& limits, const std::string& what) {
  using SteadyClock = std::chrono::steady_clock;
  // A socket deadline is a property of this call, not of the job's time: real monotonic time.
  const auto deadline =
      SteadyClock::now() + std::chrono::milliseconds(std::max<int64_t>(1, limits.total_timeout_ms));
  // The content receiver sees only the body; a server trickling its status line or headers is
  // cut by this watchdog, which shuts the client's socket at the deadline.
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  bool stopped = false;
  std::thread watchdog([&] {
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_until(lock, deadline, [&] { return done; })) {
      stopped = true;
      client.stop();
    }
  });
  std::string body;
  bool over_cap = false;
  bool late = false;
  httplib::Result res = client.Get(path, params, headers, [&](const char* data, size_t n) {
    if (body.size() + n > limits.max_body_bytes) {
      over_cap = true;
      return false;
    }
    if (SteadyClock::now() >= deadline) {
      late = true;
      return false;
    }
    body.append(data, n);
    return true;
  });
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
  }
  cv.notify_all();
  watchdog.join();
  if (over_cap) {
    return Status::InvalidInput(
        fmt::format("{}: answer body over {} MiB (counted after decompression); transfer stopped",
                    what, limits.max_body_bytes >> 20));
  }
  if (late || stopped || SteadyClock::now() >= deadline) {
    return Status::DeadlineExceeded(
        fmt::format("{}: no complete answer within {:.1f} s (the total deadline; {} bytes so far)",
                    what, static_cast<double>(limits.total_timeout_ms) / 1000.0, body.size()));
  }
  if (!res)
    return Status::Unavailable(fmt::format("{}: {}", what, httplib::to_string(res.error())));
  return HttpFetched{res->status, std::move(body)};
}

}  // namespace ww::ingest
