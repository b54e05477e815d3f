// The /metrics server (src/export/http_server.h) started for real on 127.0.0.1:0 and spoken to
// with an HTTP client: the three endpoints and their content types, 404s, snapshots swapped under
// concurrent clients (every answer is one whole published rendering), a clean stop (the port is
// closed and free again, also with a keep-alive client connected), and the address errors.
#include "export/http_server.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "export/watch_metrics.h"

namespace ww::exporter {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

int PortOf(const std::string& address) { return std::stoi(address.substr(address.rfind(':') + 1)); }

// Whether a TCP connection to 127.0.0.1:port is accepted.
bool Connectable(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  close(fd);
  return ok;
}

class HttpServerTest : public ::testing::Test {
 protected:
  void StartServer() {
    auto addr = server_.Start("127.0.0.1:0");
    ASSERT_TRUE(addr.ok()) << addr.status().message();
    address_ = *addr;
    port_ = PortOf(address_);
    client_ = std::make_unique<httplib::Client>("127.0.0.1", port_);
    client_->set_connection_timeout(5);
    client_->set_read_timeout(5);
  }

  MetricsSnapshot snapshot_;
  MetricsServer server_{&snapshot_};
  std::string address_;
  int port_ = 0;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(HttpServerTest, PortZeroBindsAFreePortAndReportsIt) {
  StartServer();
  EXPECT_THAT(address_, StartsWith("127.0.0.1:"));
  EXPECT_GT(port_, 0);
  EXPECT_NE(port_, 9400) << "port 0 asks the kernel for any free port";
  EXPECT_TRUE(Connectable(port_));
}

TEST_F(HttpServerTest, MetricsServesTheLastPublishedText) {
  snapshot_.Publish("wattwatch_hang_active{host=\"h\"} 0\n", "{}", true);
  StartServer();
  auto r = client_->Get("/metrics");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(r->body, "wattwatch_hang_active{host=\"h\"} 0\n");
  // The next tick's rendering replaces it.
  snapshot_.Publish("wattwatch_hang_active{host=\"h\"} 1\n", "{}", true);
  r = client_->Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "wattwatch_hang_active{host=\"h\"} 1\n");
}

TEST_F(HttpServerTest, BeforeTheFirstPublishMetricsIsEmptyAndHealthzIs503) {
  StartServer();
  auto m = client_->Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->status, 200);
  EXPECT_EQ(m->body, "");
  auto h = client_->Get("/healthz");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 503);
  EXPECT_THAT(h->body, HasSubstr("stale"));
}

TEST_F(HttpServerTest, HealthzFollowsThePublishedHealth) {
  StartServer();
  snapshot_.Publish("", "{}", true);
  auto ok = client_->Get("/healthz");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->body, "ok\n");
  snapshot_.Publish("", "{}", false);
  auto stale = client_->Get("/healthz");
  ASSERT_TRUE(stale);
  EXPECT_EQ(stale->status, 503);
  EXPECT_EQ(stale->body, "stale: no fresh sample\n");
}

TEST_F(HttpServerTest, StateIsJsonAndTheRootListsTheEndpoints) {
  snapshot_.Publish("", R"({"host":"node0","source_ended":false})", true);
  StartServer();
  auto s = client_->Get("/state");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->status, 200);
  EXPECT_EQ(s->get_header_value("Content-Type"), "application/json");
  EXPECT_EQ(s->body, R"({"host":"node0","source_ended":false})");
  auto root = client_->Get("/");
  ASSERT_TRUE(root);
  EXPECT_EQ(root->status, 200);
  for (const char* path : {"/metrics", "/state", "/healthz"}) {
    EXPECT_THAT(root->body, HasSubstr(path));
  }
}

TEST_F(HttpServerTest, UnknownPathsAndMethodsAre404) {
  snapshot_.Publish("a 1\n", "{}", true);
  StartServer();
  for (const char* path : {"/nope", "/metrics/extra", "/metricsx", "/healthz/", "/state.json"}) {
    auto r = client_->Get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 404) << path;
    EXPECT_THAT(r->body, ::testing::Not(HasSubstr("a 1"))) << path;
  }
  auto post = client_->Post("/metrics", "x", "text/plain");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 404) << "the endpoints are read-only";
  auto del = client_->Delete("/state");
  ASSERT_TRUE(del);
  EXPECT_EQ(del->status, 404);
}

TEST_F(HttpServerTest, ConcurrentClientsEachGetOneWholeRendering) {
  // Each rendering is a generation number repeated on many lines: a torn or mixed answer shows.
  auto rendering = [](int gen) {
    std::string s;
    for (int line = 0; line < 200; ++line)
      s += "wattwatch_gen{line=\"" + std::to_string(line) + "\"} " + std::to_string(gen) + "\n";
    return s;
  };
  std::vector<std::string> published;
  for (int gen = 0; gen < 50; ++gen) published.push_back(rendering(gen));
  const std::set<std::string> valid(published.begin(), published.end());
  snapshot_.Publish(published[0], "{}", true);
  StartServer();

  std::atomic<bool> done{false};
  std::thread publisher([&] {
    for (int i = 1; !done.load(); ++i) {
      snapshot_.Publish(published[static_cast<size_t>(i) % published.size()], "{}", true);
      std::this_thread::yield();
    }
  });
  constexpr int kClients = 8, kRequests = 40;
  std::atomic<int> answered{0}, whole{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&] {
      httplib::Client cli("127.0.0.1", port_);  // one keep-alive connection per client
      cli.set_keep_alive(true);
      cli.set_read_timeout(10);
      for (int i = 0; i < kRequests; ++i) {
        auto r = cli.Get("/metrics");
        if (!r || r->status != 200) continue;
        ++answered;
        if (valid.count(r->body) == 1) ++whole;
      }
    });
  }
  for (auto& t : clients) t.join();
  done = true;
  publisher.join();
  EXPECT_EQ(answered.load(), kClients * kRequests) << "every request answered";
  EXPECT_EQ(whole.load(), answered.load()) << "no answer mixes two renderings";
}

TEST_F(HttpServerTest, StopClosesThePortAndFreesIt) {
  StartServer();
  ASSERT_TRUE(client_->Get("/healthz"));
  server_.Stop();
  EXPECT_FALSE(Connectable(port_)) << "nothing listens after Stop()";
  server_.Stop();  // twice is harmless
  // The port is free again: a new server binds it.
  MetricsServer again(&snapshot_);
  auto addr = again.Start("127.0.0.1:" + std::to_string(port_));
  ASSERT_TRUE(addr.ok()) << addr.status().message();
  EXPECT_EQ(*addr, "127.0.0.1:" + std::to_string(port_));
  again.Stop();
}

TEST_F(HttpServerTest, StopReturnsWithAKeepAliveClientConnected) {
  StartServer();
  client_->set_keep_alive(true);
  ASSERT_TRUE(client_->Get("/metrics"));  // the connection stays open on the server's thread
  const auto t0 = std::chrono::steady_clock::now();
  server_.Stop();
  const auto stop_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_FALSE(Connectable(port_));
  // Bounded by the 1 s keep-alive timeout (httplib's default of 5 s held it 5.0 s), with slack
  // for a loaded machine: a watcher must not linger after SIGTERM while Prometheus is connected.
  EXPECT_LT(stop_s, 4.0);
}

TEST_F(HttpServerTest, StopRightAfterStartAndDestructionWithoutStopAreClean) {
  StartServer();
  server_.Stop();
  {
    MetricsServer scoped(&snapshot_);
    ASSERT_TRUE(scoped.Start("127.0.0.1:0").ok());
  }  // the destructor stops it
  MetricsServer never_started(&snapshot_);
  never_started.Stop();
}

TEST_F(HttpServerTest, APortInUseIsUnavailableAndNamesTheAddress) {
  StartServer();
  MetricsServer second(&snapshot_);
  auto addr = second.Start(address_);
  ASSERT_FALSE(addr.ok());
  EXPECT_EQ(addr.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(addr.status().message(), HasSubstr("--listen " + address_ + ": cannot bind"));
  // The first server is unaffected.
  auto r = client_->Get("/healthz");
  ASSERT_TRUE(r);
}

TEST(ParseListenAddressTest, SplitsHostAndPort) {
  struct Case {
    const char* listen;
    const char* host;
    int port;
  };
  for (const Case& c : std::vector<Case>{{"127.0.0.1:9400", "127.0.0.1", 9400},
                                         {"0.0.0.0:0", "0.0.0.0", 0},
                                         {"localhost:65535", "localhost", 65535},
                                         {"[::1]:9400", "::1", 9400},
                                         {"::1:80", "::1", 80}}) {
    std::string host;
    int port = -1;
    ASSERT_TRUE(ParseListenAddress(c.listen, &host, &port).ok()) << c.listen;
    EXPECT_EQ(host, c.host) << c.listen;
    EXPECT_EQ(port, c.port) << c.listen;
  }
}

TEST(ParseListenAddressTest, BadAddressesNameTheFlagAndWhatIsWrong) {
  struct Case {
    const char* listen;
    const char* why;
  };
  for (const Case& c : std::vector<Case>{{"9400", "expected HOST:PORT"},
                                         {":9400", "expected HOST:PORT"},
                                         {"127.0.0.1:", "expected HOST:PORT"},
                                         {"", "expected HOST:PORT"},
                                         {"127.0.0.1:http", "port must be a number"},
                                         {"127.0.0.1:65536", "port must be a number"},
                                         {"127.0.0.1:-1", "port must be a number"},
                                         {"127.0.0.1:94 00", "port must be a number"}}) {
    std::string host;
    int port = 0;
    const Status st = ParseListenAddress(c.listen, &host, &port);
    ASSERT_FALSE(st.ok()) << c.listen;
    EXPECT_EQ(st.code(), StatusCode::kInvalidInput) << c.listen;
    EXPECT_THAT(st.message(), HasSubstr(std::string("--listen '") + c.listen + "'"));
    EXPECT_THAT(st.message(), HasSubstr(c.why)) << c.listen;
  }
}

TEST(MetricsServerTest, AMalformedAddressIsRejectedBeforeBinding) {
  MetricsSnapshot snapshot;
  MetricsServer server(&snapshot);
  auto addr = server.Start("127.0.0.1:notaport");
  ASSERT_FALSE(addr.ok());
  EXPECT_EQ(addr.status().code(), StatusCode::kInvalidInput);
}

}  // namespace
}  // namespace ww::exporter
