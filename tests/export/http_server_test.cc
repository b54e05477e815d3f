// The /metrics server (src/export/http_server.h) started for real on 127.0.0.1:0 and spoken to
// with an HTTP client: the three endpoints and their content types, 404s, snapshots swapped under
// concurrent clients (every answer is one whole published rendering), a clean stop (the port is
// closed and free again, also with keep-alive, slow and idle clients connected), the address
// errors, and what a hostile client may hold (issue 19): a request that trickles in is cut off,
// idle connections are closed, connections per client address and in all are capped, an answer
// nobody reads is dropped, and /state can require a bearer token.
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

#include "export/slow_clients.h"
#include "export/watch_metrics.h"

namespace ww::exporter {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using ww::testing::ClosedByServer;
using ww::testing::ConnectLoopback;
using ww::testing::SlowClients;

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Sends all of `bytes` on a blocking socket.
bool SendAll(int fd, const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

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
  void StartServer() { StartServer(&server_); }
  void StartServer(MetricsServer* server) {
    auto addr = server->Start("127.0.0.1:0");
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

TEST_F(HttpServerTest, StopReturnsAtOnceWithKeepAliveSlowAndIdleClientsConnected) {
  StartServer();
  client_->set_keep_alive(true);
  ASSERT_TRUE(client_->Get("/metrics"));  // the connection stays open
  SlowClients attack(port_, /*slow=*/8, /*idle=*/8, /*byte_interval_ms=*/100);
  attack.Start();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_EQ(attack.held(), 16);
  const auto t0 = std::chrono::steady_clock::now();
  server_.Stop();
  const double stop_s = SecondsSince(t0);
  EXPECT_FALSE(Connectable(port_));
  // Nothing waits for a client: before, a keep-alive client held Stop() for its timeout (5 s by
  // default) and a trickling one for as long as it trickled. 1 s is slack for a loaded machine.
  EXPECT_LT(stop_s, 1.0);
  attack.Stop();
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
  EXPECT_EQ(addr.status().message(), "--listen " + address_ + ": port " + std::to_string(port_) +
                                         " is in use (another wattwatch or another server; pick a "
                                         "free port, or 0 for any)");
  // The first server is unaffected.
  auto r = client_->Get("/healthz");
  ASSERT_TRUE(r);
}

TEST_F(HttpServerTest, ABindErrorSaysWhyInWords) {
  MetricsServer server(&snapshot_);
  // 192.0.2.0/24 is TEST-NET-1: never an address of this host.
  auto addr = server.Start("192.0.2.1:0");
  ASSERT_FALSE(addr.ok());
  EXPECT_EQ(addr.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(addr.status().message(),
            "--listen 192.0.2.1:0: 192.0.2.1 is not an address of this host");
  auto bad = server.Start("no-such-host.invalid:9400");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(
      bad.status().message(),
      HasSubstr("--listen no-such-host.invalid:9400: cannot resolve 'no-such-host.invalid'"));
}

// Scrapes the server `rounds` times on fresh connections; the slowest answer's seconds, or a
// large number when one got no answer or not a 200.
double SlowestScrape(int port, int rounds) {
  double slowest = 0;
  for (int i = 0; i < rounds; ++i) {
    httplib::Client c("127.0.0.1", port);
    c.set_connection_timeout(2);
    c.set_read_timeout(2);
    const auto t0 = std::chrono::steady_clock::now();
    auto r = c.Get("/metrics");
    if (!r || r->status != 200) return 1e9;
    slowest = std::max(slowest, SecondsSince(t0));
  }
  return slowest;
}

TEST_F(HttpServerTest, SlowAndIdleClientsDoNotDelayScrapes) {
  snapshot_.Publish("wattwatch_up 1\n", "{}", true);
  StartServer();
  // Eight times the old server's worker threads, each trickling a byte every 100 ms, from eight
  // addresses other than the scraper's (each within the per-address cap).
  SlowClients attack(port_, /*slow=*/64, /*idle=*/64, /*byte_interval_ms=*/100,
                     {"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5", "127.0.0.6", "127.0.0.7",
                      "127.0.0.8", "127.0.0.9"});
  attack.Start();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(attack.held(), 128);
  EXPECT_LT(SlowestScrape(port_, 20), 1.0);
  // A keep-alive client too.
  client_->set_keep_alive(true);
  for (int i = 0; i < 20; ++i) {
    auto r = client_->Get("/metrics");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, "wattwatch_up 1\n");
  }
  EXPECT_GT(attack.slow_bytes_sent(), 64);
}

TEST_F(HttpServerTest, ARequestThatTricklesInIsCutOffAtTheRequestTimeout) {
  ServerOptions o;
  o.request_timeout_ms = 600;
  MetricsServer server(&snapshot_, o);
  StartServer(&server);
  const int fd = ConnectLoopback(port_);
  ASSERT_GE(fd, 0);
  const auto t0 = std::chrono::steady_clock::now();
  // One byte every 50 ms: each recv sees data long before any per-read timeout.
  const std::string head = "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ";
  bool closed = false;
  std::string got;
  for (size_t i = 0; !closed && SecondsSince(t0) < 5; ++i) {
    const char byte = i < head.size() ? head[i] : 'a';
    if (send(fd, &byte, 1, MSG_NOSIGNAL) != 1) break;
    closed = ClosedByServer(fd, 50, &got);
  }
  if (!closed) closed = ClosedByServer(fd, 100, &got);
  const double cut_s = SecondsSince(t0);
  close(fd);
  EXPECT_TRUE(closed);
  EXPECT_GE(cut_s, 0.55);
  EXPECT_LT(cut_s, 2.5) << "cut off near request_timeout_ms, not left to trickle";
  EXPECT_THAT(got, StartsWith("HTTP/1.1 408 Request Timeout\r\n"));
  EXPECT_EQ(server.stats().request_timeouts, 1u);
}

TEST_F(HttpServerTest, AnIdleConnectionIsClosedAfterTheIdleTimeout) {
  ServerOptions o;
  o.idle_timeout_ms = 400;
  MetricsServer server(&snapshot_, o);
  StartServer(&server);
  const int fd = ConnectLoopback(port_);
  ASSERT_GE(fd, 0);
  const auto t0 = std::chrono::steady_clock::now();
  std::string got;
  EXPECT_TRUE(ClosedByServer(fd, 3000, &got));
  const double idle_s = SecondsSince(t0);
  close(fd);
  EXPECT_GE(idle_s, 0.35);
  EXPECT_LT(idle_s, 2.0);
  EXPECT_EQ(got, "") << "an idle connection is closed without an answer";
  EXPECT_EQ(server.stats().idle_closed, 1u);
}

TEST_F(HttpServerTest, ConnectionsFromOneAddressAreCappedOthersStillServed) {
  ServerOptions o;
  o.max_connections_per_ip = 4;
  MetricsServer server(&snapshot_, o);
  StartServer(&server);
  std::vector<int> held;
  for (int i = 0; i < 4; ++i) held.push_back(ConnectLoopback(port_, "127.0.0.2"));
  for (int fd : held) ASSERT_GE(fd, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // all four accepted
  // The fifth from 127.0.0.2 is answered 503 and closed at once.
  const int fifth = ConnectLoopback(port_, "127.0.0.2");
  ASSERT_GE(fifth, 0);
  std::string got;
  EXPECT_TRUE(ClosedByServer(fifth, 2000, &got));
  close(fifth);
  EXPECT_THAT(got, StartsWith("HTTP/1.1 503 Service Unavailable\r\n"));
  EXPECT_THAT(got, HasSubstr("too many connections from 127.0.0.2 (4)"));
  EXPECT_EQ(server.stats().refused_busy, 1u);
  // Another client (127.0.0.1) is served meanwhile.
  EXPECT_TRUE(client_->Get("/healthz"));
  // One of the four leaves: 127.0.0.2 may connect again.
  close(held.back());
  held.pop_back();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const int again = ConnectLoopback(port_, "127.0.0.2");
  ASSERT_GE(again, 0);
  ASSERT_TRUE(SendAll(again, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  std::string answer;
  EXPECT_TRUE(ClosedByServer(again, 2000, &answer));
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 503 Service Unavailable\r\n"))
      << "/healthz: no sample published yet";
  EXPECT_THAT(answer, HasSubstr("stale"));
  close(again);
  for (int fd : held) close(fd);
}

TEST_F(HttpServerTest, ConnectionsInAllAreCapped) {
  ServerOptions o;
  o.max_connections = 3;
  MetricsServer server(&snapshot_, o);
  StartServer(&server);
  const int a = ConnectLoopback(port_, "127.0.0.2"), b = ConnectLoopback(port_, "127.0.0.3"),
            c = ConnectLoopback(port_, "127.0.0.4");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const int d = ConnectLoopback(port_, "127.0.0.5");
  std::string got;
  EXPECT_TRUE(ClosedByServer(d, 2000, &got));
  EXPECT_THAT(got, HasSubstr("too many connections (3)"));
  for (int fd : {a, b, c, d}) close(fd);
}

TEST_F(HttpServerTest, AnAnswerNobodyReadsIsDroppedAfterTheWriteTimeout) {
  // Far more than the socket buffers take: the server must give up on it, not block on it.
  snapshot_.Publish(std::string(64 << 20, 'x'), "{}", true);
  ServerOptions o;
  o.write_timeout_ms = 500;
  MetricsServer server(&snapshot_, o);
  StartServer(&server);
  const int fd = ConnectLoopback(port_);
  ASSERT_GE(fd, 0);
  const int small = 4096;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  ASSERT_TRUE(SendAll(fd, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  // While that answer is stuck, another client is answered.
  auto h = client_->Get("/healthz");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  for (int i = 0; i < 100 && server.stats().write_timeouts == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(server.stats().write_timeouts, 1u);
  close(fd);
}

TEST_F(HttpServerTest, PipelinedRequestsAreAnsweredInOrder) {
  snapshot_.Publish("m 1\n", R"({"s":1})", true);
  StartServer();
  const int fd = ConnectLoopback(port_);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(SendAll(fd,
                      "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
                      "GET /state HTTP/1.1\r\nHost: x\r\n\r\n"
                      "GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  std::string got;
  EXPECT_TRUE(ClosedByServer(fd, 3000, &got)) << "Connection: close is honoured";
  close(fd);
  const size_t m = got.find("\r\n\r\nm 1\n"), st = got.find(R"({"s":1})"),
               nope = got.find("HTTP/1.1 404");
  ASSERT_NE(m, std::string::npos) << got;
  ASSERT_NE(st, std::string::npos) << got;
  ASSERT_NE(nope, std::string::npos) << got;
  EXPECT_LT(m, st);
  EXPECT_LT(st, nope);
}

TEST_F(HttpServerTest, OversizedOrUndelimitedRequestsAreRefused) {
  StartServer();
  struct Case {
    std::string request;
    const char* status_line;
  };
  const std::vector<Case> cases = {
      {"GET /metrics HTTP/1.1\r\nX-Big: " + std::string(20000, 'a') + "\r\n\r\n", "HTTP/1.1 431 "},
      {"GET /" + std::string(20000, 'a') + " HTTP/1.1\r\n", "HTTP/1.1 431 "},
      {"POST /metrics HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", "HTTP/1.1 411 "},
      {"POST /metrics HTTP/1.1\r\nContent-Length: 1000000\r\n\r\n", "HTTP/1.1 413 "},
      {"POST /metrics HTTP/1.1\r\nContent-Length: 12x\r\n\r\n", "HTTP/1.1 400 "},
      {"NOT-HTTP\r\n\r\n", "HTTP/1.1 400 "},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.request.substr(0, 60));
    const int fd = ConnectLoopback(port_);
    ASSERT_GE(fd, 0);
    SendAll(fd, c.request);
    std::string got;
    EXPECT_TRUE(ClosedByServer(fd, 3000, &got));
    close(fd);
    EXPECT_THAT(got, StartsWith(c.status_line));
  }
  EXPECT_TRUE(client_->Get("/healthz")) << "still serving";
}

TEST_F(HttpServerTest, StateNeedsTheBearerTokenWhenOneIsSet) {
  snapshot_.Publish("m 1\n", R"({"host":"node0"})", true);
  ServerOptions o;
  o.state_token = "s3cret-token";
  MetricsServer server(&snapshot_, o);
  StartServer(&server);
  auto none = client_->Get("/state");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  EXPECT_EQ(none->get_header_value("WWW-Authenticate"), "Bearer realm=\"wattwatch\"");
  EXPECT_THAT(none->body, HasSubstr("--state-token-file"));
  EXPECT_THAT(none->body, ::testing::Not(HasSubstr("node0")));
  for (const char* wrong : {"Bearer s3cret-toke", "Bearer s3cret-token2", "Basic s3cret-token",
                            "Bearer S3CRET-TOKEN", "s3cret-token", "Bearer "}) {
    auto r = client_->Get("/state", {{"Authorization", wrong}});
    ASSERT_TRUE(r) << wrong;
    EXPECT_EQ(r->status, 401) << wrong;
  }
  for (const char* right : {"Bearer s3cret-token", "bearer s3cret-token"}) {
    auto r = client_->Get("/state", {{"Authorization", right}});
    ASSERT_TRUE(r) << right;
    EXPECT_EQ(r->status, 200) << right;
    EXPECT_EQ(r->body, R"({"host":"node0"})");
  }
  httplib::Client with_token("127.0.0.1", port_);
  with_token.set_bearer_token_auth("s3cret-token");
  auto r = with_token.Get("/state");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << "what --peer sends";
  // /metrics and /healthz stay open for Prometheus and liveness probes.
  auto m = client_->Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->status, 200);
  EXPECT_EQ(server.stats().unauthorized, 7u);
}

TEST(ConstantTimeEqualsTest, ComparesWholeStrings) {
  EXPECT_TRUE(ConstantTimeEquals("", ""));
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "ab"));
  EXPECT_FALSE(ConstantTimeEquals("ab", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("", "a"));
  EXPECT_FALSE(ConstantTimeEquals(std::string("a\0", 2), "a"));
}

TEST(IsLoopbackHostTest, OnlyThisMachinesAddresses) {
  for (const char* h :
       {"127.0.0.1", "127.1.2.3", "::1", "localhost", "LOCALHOST", "::ffff:127.0.0.1"}) {
    EXPECT_TRUE(IsLoopbackHost(h)) << h;
  }
  for (const char* h : {"0.0.0.0", "::", "10.0.0.5", "node0", "128.0.0.1", "::ffff:10.0.0.1", ""}) {
    EXPECT_FALSE(IsLoopbackHost(h)) << h;
  }
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
