#include "watch/service_start.h"

#include <spdlog/spdlog.h>

#include "watch/startup_checks.h"

namespace ww::watch {

void ServiceParts::Stop() {
  if (server) server->Stop();
  actions.reset();
  events.reset();
}

Status StartService(const ServiceStartOptions& o, exporter::MetricsSnapshot* snapshot,
                    std::function<void(nlohmann::json)> event, const std::function<void()>& publish,
                    ServiceParts* parts) {
  if (!o.events_path.empty()) {
    auto log = exporter::EventLog::Open(o.events_path);
    if (!log.ok()) return log.status();
    parts->events = std::make_unique<exporter::EventWriter>(std::move(*log));
  }
  if (Status st = CheckActions(o.actions); !st.ok()) return st;
  parts->actions = std::make_unique<ActionRunner>(
      o.actions, [event = std::move(event)](const nlohmann::json& outcome) {
        LogActionOutcome(outcome);
        event(outcome);
      });
  publish();
  if (o.listen.empty() || o.listen == "none") return Status::Ok();
  parts->server = std::make_unique<exporter::MetricsServer>(snapshot, o.server);
  auto addr = parts->server->Start(o.listen);
  if (!addr.ok()) return addr.status();
  parts->listen_address = *addr;
  spdlog::info("serving http://{}/metrics{}", *addr, o.serving);
  std::string host;
  int port = 0;
  if (exporter::ParseListenAddress(o.listen, &host, &port).ok() &&
      !exporter::IsLoopbackHost(host) && o.server.state_token.empty()) {
    // The state document names the job's hosts, GPUs (and a watcher's probes: log paths, pids):
    // say it is open.
    spdlog::warn(
        "--listen {}: {} has no authentication and is reachable from other machines; {} FILE "
        "requires \"Authorization: Bearer\" with the file's token{}",
        o.listen, o.server.state_path, o.token_flag, o.open_note);
  }
  if (!o.ready_file.empty()) return WriteReadyFile(o.ready_file, *addr);
  return Status::Ok();
}

bool DataFresh(int64_t now_ms, std::optional<int64_t> last_read_ms, int64_t interval_ms) {
  return last_read_ms.has_value() && now_ms - *last_read_ms <= 3 * interval_ms + 10'000;
}

}  // namespace ww::watch
