// What the watcher does on a confirmed hang, off the sampling thread: a webhook POST with a JSON
// payload, and a hook command run with an argv (no shell) and the details in its environment. Each
// outcome (status code, exit code, timeout) comes back through `report` for the event log.
//
// Ownership: owns its worker thread. Thread-safety: Submit from any thread; the destructor waits
// for the work in flight (bounded by the timeouts).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"

namespace ww::watch {

struct ActionConfig {
  std::string webhook_url;  // http:// or https://; empty: none
  double webhook_timeout_s = 5;
  std::vector<std::string> hook_argv;  // program and arguments; empty: none
  double hook_timeout_s = 60;
};

// Checks the URL's form (scheme, host) up front so a typo fails at startup, not at 3 a.m.
Status ValidateWebhookUrl(const std::string& url);

class ActionRunner {
 public:
  using Report = std::function<void(const nlohmann::json& outcome)>;
  ActionRunner(ActionConfig config, Report report);
  ~ActionRunner();

  bool empty() const { return config_.webhook_url.empty() && config_.hook_argv.empty(); }
  // Runs the configured actions for `event` (its JSON is the webhook body; its fields become
  // WATTWATCH_* variables for the hook).
  void Submit(const nlohmann::json& event);

 private:
  void Loop();
  void RunWebhook(const nlohmann::json& event);
  void RunHook(const nlohmann::json& event);

  ActionConfig config_;
  Report report_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<nlohmann::json> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

// Logs what an action did (the outcome a Report receives): an error line when it failed, an info
// line otherwise. For the owners' Report callbacks (watch, fleet), which also record the outcome.
void LogActionOutcome(const nlohmann::json& outcome);

// Runs argv (PATH lookup, no shell) with extra environment variables, in a process group of its
// own, waits at most timeout_s (then SIGKILL to the whole group: what the command started dies with
// it), and returns the exit code (128+signal when killed), or an error Status when it could not
// start or timed out. stdin is /dev/null; stdout/stderr go to `output_path` when non-empty, else
// are inherited.
Result<int> RunCommand(const std::vector<std::string>& argv,
                       const std::vector<std::string>& extra_env, double timeout_s,
                       const std::string& output_path = "");

// Finds an executable on $PATH; empty when absent.
std::string FindOnPath(const std::string& name);

}  // namespace ww::watch
