// The evidence step end to end, with the stand-ins really started: the RAS responder
// (ras_responder.py, NCCL's protocol) and four fake ranks (fake_rank.py, ProcessGroupNCCL's FIFO
// and a CPython pickle dump), one of them a collective behind.
#include "evidence/evidence.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "evidence/incident.h"
#include "stand_ins.h"
#include "support/support.h"

namespace ww::evidence {
namespace {

using ww::evidence::testing::FakeRanks;
using ww::evidence::testing::FreePort;
using ww::evidence::testing::RasResponder;
using ww::testing::ReadFile;
using ww::testing::TempDir;

HangContext Context() {
  HangContext c;
  c.confirmed_unix_ms = 1764634500000;  // 2025-12-02T00:15:00Z
  c.job = "torchrun --nproc-per-node 4 train.py (pid 4242)";
  c.hang_reason =
      "all 4 GPUs at util 100 %, power 0.11 of range, flat 45 s, 0 B/s NVLink for 120 s";
  c.triage_json = "{\"state\": \"hang\", \"gpus\": 4}\n";
  c.telemetry_csv = "timestamp, index, power.draw [W], utilization.gpu [%]\n";
  c.events_jsonl = "{\"event\": \"hang_confirmed\"}\n";
  c.actions = "SIGTERM to the job's process group, SIGKILL 30 s later.";
  c.telemetry_culprits = {"unknown: all ranks entered the wait together"};
  return c;
}

EvidenceOptions Options(const TempDir& dir, int ras_port) {
  EvidenceOptions o;
  o.ras_host = "127.0.0.1";
  o.ras_port = ras_port;
  o.ras_interval_ms = 500;
  o.ras_query_timeout_ms = 3000;
  o.fr_wait_ms = 8000;
  o.incident_root = dir / "incidents";
  return o;
}

int CountFiles(const std::string& dir) {
  int n = 0;
  if (!std::filesystem::exists(dir)) return 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) n += e.is_regular_file() ? 1 : 0;
  return n;
}

TEST(HangEvidence, NamesTheRankBehindFromBothSourcesAndWritesTheIncidentFolder) {
  TempDir dir;
  RasResponder ras(dir.path(), {"--ranks", "4", "--behind", "2", "--mode", "stuck"});
  ASSERT_GT(ras.port(), 0);
  FakeRanks ranks(dir.path(), 4, /*behind_rank=*/2);
  ASSERT_TRUE(ranks.WaitReady());
  EvidenceOptions o = Options(dir, ras.port());
  o.fr_pipe_prefix = ranks.pipe_prefix();
  o.fr_dump_prefix = ranks.dump_prefix();
  const EvidenceReport r = CollectHangEvidence(o, Context(), SystemClock());
  std::printf("evidence step with RAS responder and 4 fake ranks: %.3f s\n", r.elapsed_s);

  ASSERT_EQ(r.ras_replies.size(), 2u);
  EXPECT_EQ(r.ras_replies[0].format, "json");
  int from_ras = 0, from_fr = 0;
  for (const Culprit& c : r.culprits) {
    EXPECT_EQ(c.rank, 2) << c.reason;
    from_ras += c.source == "nccl-ras";
    from_fr += c.source == "flight-recorder";
  }
  EXPECT_EQ(from_ras, 1);
  EXPECT_EQ(from_fr, 1);
  ASSERT_FALSE(r.culprits.empty());
  EXPECT_EQ(r.culprits[0].reason,
            "rank 2 (node0 GPU2, pid 4702) is at AllReduce #10234; the other 3 are at #10235");
  EXPECT_NE(r.culprits[1].reason.find("its last collective is all_reduce #10234 (completed); "
                                      "the others reached all_reduce #10235 (started)"),
            std::string::npos)
      << r.culprits[1].reason;
  EXPECT_NE(r.culprits[1].reason.find("/job/train.py:57 in log_metrics"), std::string::npos);
  // The FR culprit carries RAS's host/pid/GPU for the same rank.
  EXPECT_EQ(r.culprits[1].pid, 4702);
  EXPECT_NE(r.summary.find("rank 2 (node0 GPU2, pid 4702) [flight-recorder, nccl-ras]"),
            std::string::npos)
      << r.summary;

  const nlohmann::json fields = r.EventFields();
  EXPECT_EQ(fields["culprits"][0]["rank"], 2);
  EXPECT_EQ(fields["incident_dir"], r.incident_dir);
  const auto env = r.HookEnv();
  ASSERT_EQ(env.size(), 3u);
  EXPECT_EQ(env[1], (std::pair<std::string, std::string>{"WATTWATCH_CULPRIT_RANKS", "2"}));

  ASSERT_FALSE(r.incident_dir.empty());
  EXPECT_EQ(CountFiles(r.incident_dir + "/fr"), 5);  // four dumps and reading.txt
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_TRUE(std::filesystem::exists(r.incident_dir + "/fr/fr_dump_" + std::to_string(rank)));
  }
  EXPECT_TRUE(std::filesystem::exists(r.incident_dir + "/ras/query1.json"));
  EXPECT_TRUE(std::filesystem::exists(r.incident_dir + "/ras/query2.json"));
  const std::string md = ReadFile(r.incident_dir + "/INCIDENT.md");
  EXPECT_NE(md.find("rank 2 (node0 GPU2, pid 4702) is at AllReduce #10234"), std::string::npos);
  EXPECT_NE(md.find("SIGTERM to the job's process group"), std::string::npos);
  EXPECT_EQ(ReadFile(r.incident_dir + "/triage.json"), Context().triage_json);
  EXPECT_TRUE(std::filesystem::exists(r.incident_dir + "/telemetry-10min.csv"));
  EXPECT_NE(md.find("`pyspy/`: not provided"), std::string::npos);
  // Kept for docs/watch.md: the INCIDENT.md this test produced.
  if (const char* keep = std::getenv("WW_KEEP_INCIDENT_MD")) {
    ww::testing::WriteFile(keep, md);
  }

  // `wattwatch incident DIR` prints the summary again, and --json the evidence.
  const auto text = ww::testing::RunWattwatch("incident " + r.incident_dir);
  EXPECT_EQ(text.exit_code, 0) << text.output;
  EXPECT_NE(text.output.find("rank 2 (node0 GPU2, pid 4702) is at AllReduce #10234"),
            std::string::npos)
      << text.output;
  const auto js = ww::testing::RunWattwatch("incident " + r.incident_dir + " --json", false);
  ASSERT_EQ(js.exit_code, 0);
  const nlohmann::json j = nlohmann::json::parse(js.output);
  EXPECT_EQ(j["culprits"].size(), 2u);
  EXPECT_EQ(j["context"]["confirmed_utc"], "2025-12-02T00:15:00.000Z");
  const auto bad = ww::testing::RunWattwatch("incident " + dir.path());
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("no evidence.json"), std::string::npos);
}

TEST(HangEvidence, SixteenRanksNameRankElevenWithHostGpuAndPid) {
  TempDir dir;
  RasResponder ras(dir.path(), {"--ranks", "16", "--behind", "11", "--mode", "stuck"});
  ASSERT_GT(ras.port(), 0);
  EvidenceOptions o = Options(dir, ras.port());
  o.incident_root.clear();
  const EvidenceReport r = CollectHangEvidence(o, Context(), SystemClock());
  ASSERT_EQ(r.culprits.size(), 1u);
  EXPECT_EQ(r.culprits[0].reason,
            "rank 11 (node1 GPU3, pid 4711) is at AllReduce #10234; the other 15 are at #10235");
}

TEST(HangEvidence, TextReportsOfOlderNcclNameTheSameRank) {
  TempDir dir;
  RasResponder ras(dir.path(),
                   {"--ranks", "16", "--behind", "11", "--mode", "stuck", "--text-only"});
  ASSERT_GT(ras.port(), 0);
  EvidenceOptions o = Options(dir, ras.port());
  o.incident_root.clear();
  const EvidenceReport r = CollectHangEvidence(o, Context(), SystemClock());
  ASSERT_EQ(r.ras_replies.size(), 2u);
  EXPECT_EQ(r.ras_replies[0].format, "text");
  EXPECT_NE(r.ras_replies[0].transcript.find("< ERROR: Unknown command SET FORMAT json"),
            std::string::npos);
  ASSERT_EQ(r.culprits.size(), 1u);
  EXPECT_EQ(r.culprits[0].reason,
            "rank 11 (node1 GPU3, pid 4711) is at AllReduce #10234; the other 15 are at #10235");

  // Two ranks: NCCL lists each lone rank with its own count, the one ahead too.
  TempDir two;
  RasResponder pair(two.path(),
                    {"--ranks", "2", "--behind", "1", "--mode", "stuck", "--text-only"});
  ASSERT_GT(pair.port(), 0);
  EvidenceOptions o2 = Options(two, pair.port());
  o2.incident_root.clear();
  const EvidenceReport r2 = CollectHangEvidence(o2, Context(), SystemClock());
  ASSERT_EQ(r2.ras_replies.size(), 2u);
  EXPECT_NE(r2.ras_replies[0].body.find("Rank 0 has launched up to operation 10235"),
            std::string::npos)
      << r2.ras_replies[0].body;
  ASSERT_EQ(r2.culprits.size(), 1u);
  EXPECT_EQ(r2.culprits[0].rank, 1) << r2.culprits[0].reason;
}

TEST(HangEvidence, CountsThatMoveBetweenTheQueriesNameNobody) {
  for (const char* format : {"json", "text"}) {
    SCOPED_TRACE(format);
    TempDir dir;
    std::vector<std::string> flags = {"--ranks", "16", "--behind", "11", "--mode", "moving"};
    if (std::string(format) == "text") flags.push_back("--text-only");
    RasResponder ras(dir.path(), flags);
    ASSERT_GT(ras.port(), 0);
    EvidenceOptions o = Options(dir, ras.port());
    const EvidenceReport r = CollectHangEvidence(o, Context(), SystemClock());
    ASSERT_EQ(r.ras_replies.size(), 2u);
    EXPECT_TRUE(r.culprits.empty());
    ASSERT_TRUE(r.ras_verdict.has_value());
    EXPECT_TRUE(r.ras_verdict->stuck_communicators.empty());
    EXPECT_NE(r.ras_verdict->lines.back().find("moved between the two queries"), std::string::npos);
    EXPECT_NE(r.summary.find("none named"), std::string::npos);
  }
}

// A job that set no dump prefix writes where its PyTorch release puts dumps by default; the
// first default location whose dump changes after the poke is the one read.
TEST(HangEvidence, DumpsAtPyTorchsDefaultLocationAreFound) {
  TempDir dir;
  const std::string cache_prefix = dir / "home/.cache/torch/comm_lib_trace_rank_";
  FakeRanks ranks(dir.path(), 4, /*behind_rank=*/2, 10235, cache_prefix);
  ASSERT_TRUE(ranks.WaitReady());
  EvidenceOptions o = Options(dir, FreePort());
  o.fr_pipe_prefix = ranks.pipe_prefix();
  o.fr_default_dump_prefixes = {dir / "elsewhere/nccl_trace_rank_", cache_prefix};
  const EvidenceReport r = CollectHangEvidence(o, Context(), SystemClock());
  ASSERT_EQ(r.fr_dumps.size(), 4u);
  for (const FrDumpFile& f : r.fr_dumps) {
    EXPECT_TRUE(f.dump.has_value()) << f.error;
    EXPECT_EQ(f.path.rfind(cache_prefix, 0), 0u) << f.path;
  }
  ASSERT_EQ(r.culprits.size(), 1u);
  EXPECT_EQ(r.culprits[0].rank, 2);
  EXPECT_EQ(r.culprits[0].source, "flight-recorder");

  // None of the defaults gets a dump: said, with where it looked, after --fr-wait-s.
  TempDir quiet;
  FakeRanks silent(quiet.path(), 2, -1, 10235, quiet / "home/.cache/torch/comm_lib_trace_rank_");
  ASSERT_TRUE(silent.WaitReady());
  EvidenceOptions q = Options(quiet, FreePort());
  q.fr_pipe_prefix = silent.pipe_prefix();
  q.fr_wait_ms = 1000;
  q.fr_default_dump_prefixes = {quiet / "a/comm_lib_trace_rank_", quiet / "b/nccl_trace_rank_"};
  const EvidenceReport rq = CollectHangEvidence(q, Context(), SystemClock());
  EXPECT_TRUE(rq.culprits.empty());
  std::string notes;
  for (const std::string& n : rq.notes) notes += n + "\n";
  EXPECT_NE(notes.find("no dump appeared under PyTorch's default locations"), std::string::npos)
      << notes;
  EXPECT_NE(notes.find(quiet / "b/nccl_trace_rank_<rank>"), std::string::npos) << notes;
}

TEST(HangEvidence, NoRasAndNoFifosCostsUnderTwoSecondsAndSaysSo) {
  TempDir dir;
  EvidenceOptions o = Options(dir, FreePort());
  o.fr_pipe_prefix = dir / "nobody_pipe_";
  o.fr_dump_prefix = dir / "nobody_dump_";
  const auto start = std::chrono::steady_clock::now();
  const EvidenceReport r = CollectHangEvidence(o, Context(), SystemClock());
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("evidence step with nothing listening and no FIFOs: %.3f s (wall %.3f s)\n",
              r.elapsed_s, wall_s);
  EXPECT_LT(wall_s, 2.0);
  EXPECT_TRUE(r.culprits.empty());
  EXPECT_TRUE(r.ras_replies.empty());
  EXPECT_EQ(r.summary, "culprit: none named (no RAS listening; no FIFOs)");
  const std::string md = ReadFile(r.incident_dir + "/INCIDENT.md");
  EXPECT_NE(md.find("nothing listening on 127.0.0.1:"), std::string::npos) << md;
  EXPECT_NE(md.find("no Flight Recorder FIFOs"), std::string::npos);
  EXPECT_NE(md.find("Telemetry alone said: unknown"), std::string::npos);
}

TEST(HangEvidence, AFifoWithNoReaderIsSkippedNotWaitedOn) {
  TempDir dir;
  const std::string prefix = dir / "pipe_";
  ASSERT_EQ(mkfifo((prefix + "0.pipe").c_str(), 0666), 0);
  ww::testing::WriteFile(prefix + "1.pipe", "a regular file, not a FIFO");
  const auto start = std::chrono::steady_clock::now();
  const std::vector<FifoPoke> pokes = PokeFifos(prefix);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(pokes.size(), 2u);
  EXPECT_EQ(pokes[0].outcome, FifoPoke::Outcome::kNoReader);
  EXPECT_EQ(pokes[1].outcome, FifoPoke::Outcome::kNotFifo);
  EXPECT_EQ(ReadFile(prefix + "1.pipe"), "a regular file, not a FIFO");
  EXPECT_LT(s, 0.5);

  EvidenceOptions o = Options(dir, FreePort());
  o.fr_pipe_prefix = prefix;
  o.fr_dump_prefix = dir / "dump_";
  const EvidenceReport r = CollectHangEvidence(o, Context(), SystemClock());
  EXPECT_LT(r.elapsed_s, 2.0);
  bool said = false;
  for (const std::string& n : r.notes)
    said |= n.find("no process is reading it") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(HangEvidence, AnUnreadableDumpIsAClearLineNotACrash) {
  TempDir dir;
  FakeRanks ranks(dir.path(), 2, -1);
  ASSERT_TRUE(ranks.WaitReady());
  // A third "rank" whose FIFO has a reader (this test) that never dumps: its slot must say so
  // plainly after --fr-wait-s, and the other two dumps must still be read.
  ASSERT_EQ(mkfifo((ranks.pipe_prefix() + "7.pipe").c_str(), 0666), 0);
  const int fd = open((ranks.pipe_prefix() + "7.pipe").c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(fd, 0);
  EvidenceOptions o = Options(dir, FreePort());
  o.fr_pipe_prefix = ranks.pipe_prefix();
  o.fr_dump_prefix = ranks.dump_prefix();
  o.fr_wait_ms = 1500;
  const EvidenceReport r = CollectHangEvidence(o, Context(), SystemClock());
  close(fd);
  ASSERT_EQ(r.fr_dumps.size(), 3u);
  EXPECT_TRUE(r.fr_dumps[0].dump.has_value());
  EXPECT_TRUE(r.fr_dumps[1].dump.has_value());
  EXPECT_FALSE(r.fr_dumps[2].dump.has_value());
  EXPECT_NE(r.fr_dumps[2].error.find("rank 7: no new dump"), std::string::npos);
  EXPECT_LT(r.elapsed_s, 3.0);
}

TEST(HangEvidence, HugeGarbageAndStaleDumpsGetAClearLine) {
  TempDir dir;
  const std::string prefix = dir / "dump_";
  // Rank 0: over the 64 MB cap (a sparse file: the size is what counts). Rank 1: not a pickle.
  // Rank 2: a code-importing pickle. Rank 3: present before the poke and unchanged since.
  ww::testing::WriteFile(prefix + "3", "old dump");
  std::map<int, FileStamp> before = {{3, StampFile(prefix + "3")}};
  ASSERT_EQ(truncate((ww::testing::WriteFile(prefix + "0", ""), prefix + "0").c_str(), 65LL << 20),
            0);
  ww::testing::WriteFile(prefix + "1", "this is not a pickle");
  ww::testing::WriteFile(prefix + "2", std::string("\x80\x02"
                                                   "cos\nsystem\n",
                                                   13));
  const std::vector<FrDumpFile> files =
      WaitForDumps(prefix, {0, 1, 2, 3}, before, SystemClock()->NowMonotonicNs(), SystemClock());
  ASSERT_EQ(files.size(), 4u);
  EXPECT_NE(files[0].error.find("is over 67108864 bytes; not read"), std::string::npos)
      << files[0].error;
  EXPECT_NE(files[1].error.find("rank 1: " + prefix +
                                "1: not a pickle of protocol 2 or later (no PROTO opcode at "
                                "offset 0; starts \"this is not a pi\")"),
            std::string::npos)
      << files[1].error;
  EXPECT_NE(files[2].error.find("opcode GLOBAL (0x63) at offset 2: refused"), std::string::npos)
      << files[2].error;
  EXPECT_EQ(files[3].error, "rank 3: no new dump at " + prefix + "3");
  for (const FrDumpFile& f : files) EXPECT_FALSE(f.dump.has_value());
}

TEST(HangEvidence, ARasThatNeverAnswersCostsItsDeadlineOnly) {
  // Listening but never accepting: connect() succeeds through the backlog, the handshake never
  // gets a reply.
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(s, 4), 0);
  ASSERT_EQ(getsockname(s, reinterpret_cast<sockaddr*>(&a), &len), 0);
  RasQueryOptions q;
  q.host = "127.0.0.1";
  q.port = ntohs(a.sin_port);
  q.timeout_ms = 700;
  const auto start = std::chrono::steady_clock::now();
  Result<RasReply> r = QueryRas(q);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  close(s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded) << r.status().message();
  EXPECT_NE(r.status().message().find("RAS did not answer to CLIENT PROTOCOL 2"), std::string::npos)
      << r.status().message();
  EXPECT_GE(took, 0.6);
  EXPECT_LT(took, 1.5);
}

TEST(HangEvidence, ARankMissingFromBothRepliesIsNamed) {
  for (const char* format : {"json", "text"}) {
    SCOPED_TRACE(format);
    TempDir dir;
    std::vector<std::string> flags = {"--ranks", "8", "--missing", "5", "--mode", "stuck"};
    if (std::string(format) == "text") flags.push_back("--text-only");
    RasResponder ras(dir.path(), flags);
    ASSERT_GT(ras.port(), 0);
    EvidenceOptions o = Options(dir, ras.port());
    o.incident_root.clear();
    const EvidenceReport r = CollectHangEvidence(o, Context(), SystemClock());
    ASSERT_EQ(r.culprits.size(), 1u);
    EXPECT_EQ(r.culprits[0].reason,
              "rank 5 (node0 GPU5, pid 4705) is missing in communicator 0x27a079b828ff1a75 (RAS "
              "could not reach it)");
  }
}

TEST(HangEvidence, EvidenceTaskRunsOffTheCallersThread) {
  TempDir dir;
  EvidenceOptions o = Options(dir, FreePort());
  o.incident_root.clear();
  EvidenceTask task(o, Context(), SystemClock());
  std::optional<EvidenceReport> r = task.Take(5000);
  ASSERT_TRUE(r.has_value());
  EXPECT_NE(r->summary.find("no RAS listening"), std::string::npos);
}

// The hook runner has only the event's JSON (possibly read back, possibly from an older build):
// ranks once each and in order, wrong types and missing members give empty values, not a throw.
TEST(HookEnvFromEventFields, RanksOnceInOrderAndWrongTypesGiveEmptyValues) {
  using Env = std::vector<std::pair<std::string, std::string>>;
  const nlohmann::json ev = {
      {"incident_dir", "/var/lib/ww/incident-1"},
      {"summary", "rank 11 is behind"},
      {"culprits",
       {{{"rank", 11}}, {{"rank", 2}}, {{"rank", 11}}, {{"rank", "3"}}, nlohmann::json(7)}}};
  EXPECT_EQ(HookEnvFromEventFields(ev), (Env{{"WATTWATCH_INCIDENT_DIR", "/var/lib/ww/incident-1"},
                                             {"WATTWATCH_CULPRIT_RANKS", "2,11"},
                                             {"WATTWATCH_CULPRIT_REASON", "rank 11 is behind"}}));
  const Env empty = {{"WATTWATCH_INCIDENT_DIR", ""},
                     {"WATTWATCH_CULPRIT_RANKS", ""},
                     {"WATTWATCH_CULPRIT_REASON", ""}};
  EXPECT_EQ(HookEnvFromEventFields(nlohmann::json::array()), empty);
  EXPECT_EQ(HookEnvFromEventFields({{"incident_dir", 5}, {"summary", nullptr}, {"culprits", "x"}}),
            empty);
}

}  // namespace
}  // namespace ww::evidence
