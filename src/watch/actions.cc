#include "watch/actions.h"

#include <fmt/format.h>
#include <httplib.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <vector>

#include "evidence/evidence.h"
#include "watch/child.h"
#include "watch/http_error.h"

namespace ww::watch {
namespace {

struct UrlParts {
  std::string scheme_host_port;  // "http://host:port"
  std::string path;              // "/hook?x=1"
};

Result<UrlParts> SplitUrl(const std::string& url) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) {
    return Status::InvalidInput(
        fmt::format("--webhook '{}': expected http://HOST[:PORT]/PATH", url));
  }
  const std::string scheme = url.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https") {
    return Status::InvalidInput(
        fmt::format("--webhook '{}': scheme must be http or https, not '{}'", url, scheme));
  }
  const size_t host_start = scheme_end + 3;
  const size_t path_start = url.find('/', host_start);
  UrlParts p;
  p.scheme_host_port = url.substr(0, path_start);
  p.path = path_start == std::string::npos ? "/" : url.substr(path_start);
  if (p.scheme_host_port.size() <= host_start) {
    return Status::InvalidInput(fmt::format("--webhook '{}': no host", url));
  }
  return p;
}

}  // namespace

Status ValidateWebhookUrl(const std::string& url) { return SplitUrl(url).status(); }

std::string FindOnPath(const std::string& name) {
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  std::string_view rest = path ? path : "/usr/local/bin:/usr/bin:/bin";
  while (!rest.empty()) {
    const size_t colon = rest.find(':');
    const std::string dir(rest.substr(0, colon));
    rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
    if (dir.empty()) continue;
    std::string full = fmt::format("{}/{}", dir, name);
    struct stat st {};
    if (::stat(full.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(full.c_str(), X_OK) == 0) {
      return full;
    }
  }
  return "";
}

Result<int> RunCommand(const std::vector<std::string>& argv,
                       const std::vector<std::string>& extra_env, double timeout_s,
                       const std::string& output_path) {
  SpawnOptions options;
  // Its own group, so a timeout kills what it started too (a hook script's curl, a sleep).
  options.own_process_group = true;
  options.extra_env = extra_env;
  options.output_path = output_path;
  options.stdin_null = true;
  auto child = ChildProcess::Spawn(argv, options);
  if (!child.ok()) return child.status();
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  for (;;) {
    if (auto rc = (*child)->Poll()) return *rc;
    if (std::chrono::steady_clock::now() >= deadline) {
      (*child)->SignalGroup(SIGKILL);
      while (!(*child)->Poll()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      return Status::DeadlineExceeded(
          fmt::format("'{}' did not finish within {:.0f} s; killed", argv[0], timeout_s));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

ActionRunner::ActionRunner(ActionConfig config, Report report)
    : config_(std::move(config)), report_(std::move(report)) {
  if (!empty()) thread_ = std::thread([this] { Loop(); });
}

ActionRunner::~ActionRunner() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ActionRunner::Submit(const nlohmann::json& event) {
  if (empty()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(event);
  }
  cv_.notify_all();
}

void ActionRunner::Loop() {
  for (;;) {
    nlohmann::json event;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      // Work already queued still runs at shutdown: a hang found just before
      // exit is reported.
      if (queue_.empty()) return;
      event = std::move(queue_.front());
      queue_.pop_front();
    }
    if (!config_.webhook_url.empty()) RunWebhook(event);
    if (!config_.hook_argv.empty()) RunHook(event);
  }
}

void ActionRunner::RunWebhook(const nlohmann::json& event) {
  nlohmann::json outcome = {
      {"event", "action"}, {"action", "webhook"}, {"url", config_.webhook_url}};
  auto parts = SplitUrl(config_.webhook_url);
  if (!parts.ok()) {
    outcome["error"] = parts.status().message();
    report_(outcome);
    return;
  }
  httplib::Client client(parts->scheme_host_port);
  const auto timeout =
      std::chrono::milliseconds(static_cast<int64_t>(config_.webhook_timeout_s * 1000));
  client.set_connection_timeout(timeout);
  client.set_read_timeout(timeout);
  client.set_write_timeout(timeout);
  const std::string body = event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  auto res = client.Post(parts->path, body, "application/json");
  if (!res) {
    outcome["error"] = fmt::format("POST {}: {}", config_.webhook_url,
                                   DescribeHttpError(res.error(), config_.webhook_timeout_s));
  } else {
    outcome["status"] = res->status;
    if (res->status >= 300) {
      outcome["error"] = fmt::format("POST {}: HTTP {}", config_.webhook_url, res->status);
    }
  }
  report_(outcome);
}

void ActionRunner::RunHook(const nlohmann::json& event) {
  std::vector<std::string> env;
  auto add = [&](const char* name, const nlohmann::json& v) {
    std::string s;
    if (v.is_string()) {
      s = v.get<std::string>();
    } else if (v.is_array()) {
      for (const auto& x : v) {
        if (!s.empty()) s += x.is_string() && std::string(name) == "WATTWATCH_REASONS" ? "; " : ",";
        s += x.is_string() ? x.get<std::string>() : x.dump();
      }
    } else if (!v.is_null()) {
      s = v.dump();
    }
    env.push_back(std::string(name) + "=" + s);
  };
  add("WATTWATCH_EVENT", event.value("event", nlohmann::json()));
  add("WATTWATCH_HOST", event.value("host", nlohmann::json()));
  add("WATTWATCH_JOB_ID", event.value("job_id", nlohmann::json()));
  add("WATTWATCH_GPUS", event.value("gpus", nlohmann::json()));
  add("WATTWATCH_CULPRITS", event.value("culprits", nlohmann::json()));
  add("WATTWATCH_SINCE", event.value("since", nlohmann::json()));
  add("WATTWATCH_REASONS", event.value("reasons", nlohmann::json()));
  // The hang evidence (NCCL RAS, Flight Recorder): the incident folder and the ranks it names.
  if (const auto ev = event.find("evidence"); ev != event.end() && ev->is_object()) {
    for (const auto& [name, value] : evidence::HookEnvFromEventFields(*ev)) {
      env.push_back(fmt::format("{}={}", name, value));
    }
  }
  env.push_back("WATTWATCH_PAYLOAD=" +
                event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  nlohmann::json outcome = {{"event", "action"}, {"action", "hook"}, {"argv", config_.hook_argv}};
  auto rc = RunCommand(config_.hook_argv, env, config_.hook_timeout_s);
  if (rc.ok()) {
    outcome["exit_code"] = *rc;
  } else {
    outcome["error"] = rc.status().message();
  }
  report_(outcome);
}

void LogActionOutcome(const nlohmann::json& outcome) {
  if (outcome.contains("error")) {
    spdlog::error("{} failed: {}", outcome.value("action", "action"),
                  outcome["error"].is_string() ? outcome["error"].get<std::string>()
                                               : outcome["error"].dump());
  } else {
    spdlog::info("{} done: {}", outcome.value("action", "action"), outcome.dump());
  }
}

}  // namespace ww::watch
