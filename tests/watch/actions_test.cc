// The hang actions directly: a webhook to a real HTTP server on 127.0.0.1:0, a hook run with its
// WATTWATCH_* environment, and the time limits that keep a stuck action from outliving its turn.
#include "watch/actions.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>

#include "support/support.h"
#include "watch/process_util.h"

namespace ww::watch {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

json HangEvent() {
  return {{"event", "hang_confirmed"},
          {"host", "node0"},
          {"job_id", "j7"},
          {"since", "2025-11-18T11:30:41.000"},
          {"gpus", {"node0/GPU0", "node0/GPU1"}},
          {"culprits", {"node0/GPU1"}},
          {"reasons", {"util 100 %", "no progress for 60 s"}}};
}

// Collects the outcomes an ActionRunner reports, and waits for them.
class Outcomes {
 public:
  ActionRunner::Report Sink() {
    return [this](const json& o) {
      std::lock_guard<std::mutex> lock(mu_);
      got_.push_back(o);
      cv_.notify_all();
    };
  }
  std::vector<json> WaitFor(size_t n, double timeout_s = 30) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000)),
                 [&] { return got_.size() >= n; });
    return got_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<json> got_;
};

// A webhook receiver on 127.0.0.1, any free port; answers `status`.
class Receiver {
 public:
  explicit Receiver(int status) {
    server_.Post("/hook", [this, status](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      body_ = req.body;
      content_type_ = req.get_header_value("Content-Type");
      res.status = status;
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~Receiver() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/hook"; }
  std::string body() {
    std::lock_guard<std::mutex> lock(mu_);
    return body_;
  }
  std::string content_type() {
    std::lock_guard<std::mutex> lock(mu_);
    return content_type_;
  }

 private:
  httplib::Server server_;
  int port_ = -1;
  std::thread thread_;
  std::mutex mu_;
  std::string body_, content_type_;
};

TEST(Actions, WebhookPostsTheEventAsJson) {
  Receiver r(204);
  Outcomes out;
  {
    ActionConfig c;
    c.webhook_url = r.url();
    ActionRunner runner(c, out.Sink());
    runner.Submit(HangEvent());
    const auto got = out.WaitFor(1);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0]["action"], "webhook");
    EXPECT_EQ(got[0]["status"], 204);
    EXPECT_FALSE(got[0].contains("error"));
  }
  EXPECT_EQ(json::parse(r.body()), HangEvent());
  EXPECT_EQ(r.content_type(), "application/json");
}

TEST(Actions, WebhookErrorsAreReportedNotThrown) {
  Receiver r(500);
  Outcomes out;
  ActionConfig c;
  c.webhook_url = r.url();
  c.webhook_timeout_s = 2;
  {
    ActionRunner runner(c, out.Sink());
    runner.Submit(HangEvent());
    out.WaitFor(1);
  }
  // Nothing listens on a port that was just bound and released. (Not via httplib::Server, whose
  // destructor leaves its listening socket open: a port that accepts and never answers.)
  const int closed_port = ww::testing::FreePort();
  ASSERT_GT(closed_port, 0);
  ActionConfig down;
  down.webhook_url = "http://127.0.0.1:" + std::to_string(closed_port) + "/hook";
  down.webhook_timeout_s = 2;
  {
    ActionRunner runner(down, out.Sink());
    runner.Submit(HangEvent());
    out.WaitFor(2);
  }
  const auto got = out.WaitFor(2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0]["error"], "POST " + r.url() + ": HTTP 500");
  ASSERT_TRUE(got[1].contains("error"));
  // Issue 19: the error names the target and says what went wrong in words, not only
  // httplib's "Connection".
  const std::string why = got[1]["error"].get<std::string>();
  EXPECT_THAT(why, HasSubstr("POST " + down.webhook_url + ": cannot connect"));
  EXPECT_THAT(why, HasSubstr("[Connection]"));
}

TEST(Actions, WebhookUrlIsCheckedUpFront) {
  EXPECT_TRUE(ValidateWebhookUrl("http://hooks.example.com/x").ok());
  EXPECT_TRUE(ValidateWebhookUrl("https://hooks.example.com:8443").ok());
  EXPECT_THAT(ValidateWebhookUrl("ftp://x").message(), HasSubstr("scheme must be http or https"));
  EXPECT_THAT(ValidateWebhookUrl("hooks.example.com").message(), HasSubstr("expected http://"));
  EXPECT_THAT(ValidateWebhookUrl("http:///path").message(), HasSubstr("no host"));
}

TEST(Actions, HookRunsWithTheHangInItsEnvironment) {
  ww::testing::TempDir dir;
  const std::string env_file = dir / "hook.env";
  Outcomes out;
  {
    ActionConfig c;
    c.hook_argv = {"sh", "-c", "env | grep ^WATTWATCH_ | sort > " + env_file + "; exit 4"};
    ActionRunner runner(c, out.Sink());
    runner.Submit(HangEvent());
    out.WaitFor(1);
  }
  const auto got = out.WaitFor(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["action"], "hook");
  EXPECT_EQ(got[0]["exit_code"], 4) << "the hook's exit code is reported";
  const std::string env = ww::testing::ReadFile(env_file);
  EXPECT_THAT(env, HasSubstr("WATTWATCH_EVENT=hang_confirmed\n"));
  EXPECT_THAT(env, HasSubstr("WATTWATCH_HOST=node0\n"));
  EXPECT_THAT(env, HasSubstr("WATTWATCH_JOB_ID=j7\n"));
  EXPECT_THAT(env, HasSubstr("WATTWATCH_GPUS=node0/GPU0,node0/GPU1\n"));
  EXPECT_THAT(env, HasSubstr("WATTWATCH_CULPRITS=node0/GPU1\n"));
  EXPECT_THAT(env, HasSubstr("WATTWATCH_SINCE=2025-11-18T11:30:41.000\n"));
  EXPECT_THAT(env, HasSubstr("WATTWATCH_REASONS=util 100 %; no progress for 60 s\n"));
  const size_t payload = env.find("WATTWATCH_PAYLOAD=");
  ASSERT_NE(payload, std::string::npos);
  const std::string json_text = env.substr(payload + 18, env.find('\n', payload) - payload - 18);
  EXPECT_EQ(json::parse(json_text), HangEvent());
}

// Issue 19 item 11: a hook that times out is killed with everything it started.
TEST(Actions, TimedOutHookIsKilledWithItsChildren) {
  ww::testing::TempDir dir;
  const std::string pid_file = dir / "grandchild.pid";
  const auto start = std::chrono::steady_clock::now();
  auto rc = RunCommand({"sh", "-c", "sleep 60 & echo $! > " + pid_file + "; wait"}, {}, 1.0);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  ASSERT_FALSE(rc.ok());
  EXPECT_THAT(rc.status().message(), HasSubstr("did not finish within 1 s; killed"));
  pid_t grandchild = 0;
  std::ifstream(pid_file) >> grandchild;
  ASSERT_GT(grandchild, 0);
  for (int i = 0; i < 200 && ww::testing::ProcessRunning(grandchild); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_FALSE(ww::testing::ProcessRunning(grandchild)) << "the hook's sleep outlived the hook";
  if (ww::testing::ProcessRunning(grandchild)) kill(grandchild, SIGKILL);
}

TEST(Actions, RunCommandPassesExitCodesAndSignalsOn) {
  EXPECT_EQ(*RunCommand({"sh", "-c", "exit 9"}, {}, 10), 9);
  EXPECT_EQ(*RunCommand({"sh", "-c", "kill -TERM $$"}, {}, 10), 128 + SIGTERM);
  auto missing = RunCommand({"/nonexistent/hook"}, {}, 10);
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("cannot start '/nonexistent/hook'"));
  EXPECT_EQ(FindOnPath("sh").empty(), false);
  EXPECT_EQ(FindOnPath("no-such-program-wattwatch"), "");
}

}  // namespace
}  // namespace ww::watch
