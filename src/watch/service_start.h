// What `watch`/`run` and `fleet` start before their first cycle, written once: the event log
// (--events), the action runner (--webhook, --hook: checked first), the first publication of
// /metrics, the HTTP server (--listen) and the ready file (--ready-file). A server reachable from
// other machines without a token gets a warning naming the state document it opens (/state,
// /jobs) and the flag that guards it.
//
// Ownership: ServiceParts owns what was started; its owner stops it (Stop) before the things the
// callbacks reach go. Thread-safety: StartService on the owner's thread; the action runner calls
// `event` from its worker thread.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/status.h"
#include "export/event_log.h"
#include "export/event_writer.h"
#include "export/http_server.h"
#include "export/watch_metrics.h"
#include "watch/actions.h"

namespace ww::watch {

struct ServiceStartOptions {
  std::string events_path;  // --events FILE.jsonl; empty: none
  ActionConfig actions;
  std::string listen;  // --listen; empty or "none": no server
  exporter::ServerOptions server;
  std::string ready_file;
  std::string serving;     // what the "serving http://ADDR/metrics" line adds (" and /jobs")
  std::string token_flag;  // the flag that guards the state document ("--state-token-file")
  std::string open_note;   // added to the warning about an open state document
};

struct ServiceParts {
  std::unique_ptr<exporter::EventWriter> events;
  std::unique_ptr<ActionRunner> actions;
  std::unique_ptr<exporter::MetricsServer> server;
  std::string listen_address;  // the bound address; empty without a server
  // Stops the server, then the action runner (waiting for it), then the event log.
  void Stop();
};

// Starts parts in the order above. The runner's outcomes are logged and passed to `event` (which
// may write to parts->events); `publish` fills the snapshot before the server serves it.
Status StartService(const ServiceStartOptions& o, exporter::MetricsSnapshot* snapshot,
                    std::function<void(nlohmann::json)> event, const std::function<void()>& publish,
                    ServiceParts* parts);

// Fresh data (/healthz 200), one rule for watch and fleet: a read has succeeded (a sample from
// the source, an answer from Prometheus) and the last one, at last_read_ms, is no older than three
// read intervals plus 10 s. Three intervals: a read or two may fail or come late without the
// service being down; 10 s: one read may itself take that long (a Prometheus query, a driver call
// running to its deadline), which at fast sampling (100 ms) is most of the allowance.
bool DataFresh(int64_t now_ms, std::optional<int64_t> last_read_ms, int64_t interval_ms);

}  // namespace ww::watch
