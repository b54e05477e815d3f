// The evidence step wired into `wattwatch run`, end to end with real processes: a replayed hang,
// NCCL's RAS answered by the Python responder with rank 2 one collective behind, and the job itself
// four fake PyTorch ranks (rank 2 behind) that create their Flight Recorder FIFOs where the
// variables `run` sets for them say. The hang event names rank 2 from both sources, the hook's
// environment carries it, and the incident folder beside the events file holds four dumps and
// both RAS replies. Without RAS and FIFOs, the hang is acted on as before.
#include <gtest/gtest.h>
#include <httplib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "evidence/stand_ins.h"
#include "support/support.h"

namespace ww::evidence::testing {
namespace {

using ww::testing::Lines;
using ww::testing::ReadFile;
using ww::testing::RunWattwatch;
using ww::testing::TempDir;

// A 4-GPU hang, sampled every second (the replay at x50 reaches the hang in a few seconds).
std::string SimulateHang(const TempDir& dir) {
  const auto sim = RunWattwatch("simulate hang-spin --gpus-per-host 4 --interval-ms 1000 --out " +
                                dir.path() + "/node0.csv");
  EXPECT_EQ(sim.exit_code, 0) << sim.output;
  return dir.path() + "/node0.csv";
}

std::vector<nlohmann::json> Events(const std::string& path, const std::string& kind) {
  std::vector<nlohmann::json> out;
  for (const std::string& line : Lines(ReadFile(path))) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.value("event", "") == kind) out.push_back(j);
  }
  return out;
}

std::string OnlyIncident(const std::string& root) {
  std::string found;
  for (const auto& e : std::filesystem::directory_iterator(root)) {
    if (e.is_directory() && e.path().filename().string().rfind("incident-", 0) == 0) {
      EXPECT_TRUE(found.empty()) << "two incident folders for one hang";
      found = e.path().string();
    }
  }
  return found;
}

TEST(RunEvidence, NamesTheRankBehindFromRasAndTheFlightRecorderBeforeTheKill) {
  TempDir dir;
  const std::string log = SimulateHang(dir);
  RasResponder ras(dir.path(), {"--ranks", "4", "--behind", "2", "--mode", "stuck"});
  ASSERT_GT(ras.port(), 0);
  // The job: four ranks that take their FIFO and dump paths from the variables run sets.
  std::string job;
  for (int r = 0; r < 4; ++r) {
    job += "python3 " + Script("fake_rank.py") + " --rank " + std::to_string(r) + " --ready-file " +
           dir.path() + "/ready_" + std::to_string(r) + (r == 2 ? " --behind" : "") + " & ";
  }
  job += "wait";
  const std::string events = dir.path() + "/events.jsonl";
  const std::string hook_env = dir.path() + "/hook.env";
  const auto r = RunWattwatch("run --source replay:" + log +
                              " --speed 50 --listen none --kill-grace-s 2 --events " + events +
                              " --nccl-ras 127.0.0.1:" + std::to_string(ras.port()) +
                              " --hook sh --hook-arg=-c --hook-arg 'env | grep ^WATTWATCH_ > " +
                              hook_env + "' -- sh -c '" + job + "'");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("Flight Recorder: set for the job"), std::string::npos) << r.output;

  const auto confirmed = Events(events, "hang_confirmed");
  ASSERT_EQ(confirmed.size(), 1u) << ReadFile(events);
  const nlohmann::json& ev = confirmed[0].at("evidence");
  int from_ras = 0, from_fr = 0;
  for (const auto& c : ev.at("culprits")) {
    EXPECT_EQ(c.at("rank"), 2) << ev.dump();
    from_ras += c.at("source") == "nccl-ras";
    from_fr += c.at("source") == "flight-recorder";
  }
  EXPECT_EQ(from_ras, 1) << ev.dump();
  EXPECT_EQ(from_fr, 1) << ev.dump();
  EXPECT_NE(confirmed[0].at("reasons").dump().find("is at AllReduce #10234"), std::string::npos)
      << confirmed[0].dump();
  // The kill came after the evidence: the event that starts it is written after the hang event.
  const std::string all = ReadFile(events);
  ASSERT_NE(all.find("\"kill\""), std::string::npos) << all;
  EXPECT_LT(all.find("hang_confirmed"), all.find("\"kill\""));

  const std::string incident = OnlyIncident(dir.path());
  ASSERT_FALSE(incident.empty()) << r.output;
  EXPECT_EQ(ev.at("incident_dir"), incident);
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_TRUE(std::filesystem::exists(incident + "/fr/dump_" + std::to_string(rank)))
        << "rank " << rank;
  }
  EXPECT_TRUE(std::filesystem::exists(incident + "/ras/query1.json"));
  EXPECT_TRUE(std::filesystem::exists(incident + "/ras/query2.json"));
  const std::string md = ReadFile(incident + "/INCIDENT.md");
  EXPECT_NE(md.find("rank 2"), std::string::npos) << md;
  EXPECT_NE(md.find("**Stacks.**"), std::string::npos) << "where py-spy's stacks are, or why none";
  EXPECT_NE(ReadFile(incident + "/events.jsonl").find("state_change"), std::string::npos);
  // The last 10 minutes of telemetry, as an nvidia-smi CSV wattwatch itself reads back.
  const std::string csv = incident + "/telemetry-10min.csv";
  const auto rows = Lines(ReadFile(csv));
  ASSERT_GT(rows.size(), 4u * 60) << "at least a minute of 4 GPUs at 1 s";
  EXPECT_LE(rows.size(), 4u * 601 + 1);
  EXPECT_EQ(rows[0].rfind("timestamp, index", 0), 0u) << rows[0];
  const auto tri = RunWattwatch("triage " + csv + " --json", false);
  EXPECT_EQ(tri.exit_code, 0) << tri.output;
  EXPECT_NE(tri.output.find("\"hang_episodes\""), std::string::npos);

  ASSERT_TRUE(WaitForFile(hook_env));
  const std::string env = ReadFile(hook_env);
  // Rank 2 once, though both sources name it.
  EXPECT_NE(env.find("WATTWATCH_CULPRIT_RANKS=2\n"), std::string::npos) << env;
  EXPECT_NE(env.find("WATTWATCH_INCIDENT_DIR=" + incident), std::string::npos) << env;
}

TEST(RunEvidence, WithoutRasOrFifosTheHangIsActedOnAsBefore) {
  TempDir dir;
  const std::string log = SimulateHang(dir);
  const std::string events = dir.path() + "/events.jsonl";
  const auto r = RunWattwatch(
      "run --source replay:" + log + " --speed 50 --listen none --kill-grace-s 1 --events " +
      events + " --nccl-ras 127.0.0.1:" + std::to_string(FreePort()) + " -- sleep 600");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  const auto confirmed = Events(events, "hang_confirmed");
  ASSERT_EQ(confirmed.size(), 1u) << ReadFile(events);
  const std::string summary = confirmed[0].at("evidence").at("summary");
  EXPECT_NE(summary.find("none named"), std::string::npos) << summary;
  // The default --fr-wait-s (10 s) is not spent when no FIFO was there to poke: the step adds
  // less than 2 s before the kill.
  const std::string incident = confirmed[0].at("evidence").at("incident_dir");
  const auto report = nlohmann::json::parse(ReadFile(incident + "/evidence.json"), nullptr, false);
  ASSERT_TRUE(report.is_object()) << incident;
  const double step_s = report.at("elapsed_s");
  std::printf("run: evidence step with nothing listening and no FIFOs: %.3f s\n", step_s);
  EXPECT_LT(step_s, 2.0);
  EXPECT_EQ(Events(events, "kill").size(), 1u);
  EXPECT_FALSE(OnlyIncident(dir.path()).empty());

  // --no-evidence: no folder, no evidence in the event.
  TempDir quiet;
  const std::string events2 = quiet.path() + "/events.jsonl";
  const auto r2 =
      RunWattwatch("run --source replay:" + log +
                   " --speed 50 --listen none --kill-grace-s 1 --no-evidence --events " + events2 +
                   " -- sleep 600");
  EXPECT_EQ(r2.exit_code, 3) << r2.output;
  const auto c2 = Events(events2, "hang_confirmed");
  ASSERT_EQ(c2.size(), 1u);
  EXPECT_FALSE(c2[0].contains("evidence"));
  EXPECT_TRUE(OnlyIncident(quiet.path()).empty());
}

// `watch` beside a job that set only its FIFO prefix (no dump prefix): the four fake ranks dump
// where PyTorch does by default ($HOME/.cache/torch/comm_lib_trace_rank_<rank>), the watcher is
// given --fr-pipe alone. The webhook payload and /state carry the evidence: the incident folder
// and rank 2 from both sources.
TEST(WatchEvidence, FrPipeAloneFindsDefaultDumpsAndTheWebhookAndStateNameTheRank) {
  TempDir dir;
  const std::string log = SimulateHang(dir);
  RasResponder ras(dir.path(), {"--ranks", "4", "--behind", "2", "--mode", "stuck"});
  ASSERT_GT(ras.port(), 0);
  const std::string home = dir.path() + "/home";
  FakeRanks ranks(dir.path(), 4, /*behind_rank=*/2, 10235,
                  home + "/.cache/torch/comm_lib_trace_rank_");
  ASSERT_TRUE(ranks.WaitReady());

  httplib::Server receiver;
  std::mutex mu;
  std::string payload;
  receiver.Post("/hook", [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(mu);
    if (payload.empty()) payload = req.body;  // the first POST: the hang
    res.status = 204;
  });
  const int hook_port = receiver.bind_to_any_port("127.0.0.1");
  ASSERT_GT(hook_port, 0);
  std::thread serve([&] { receiver.listen_after_bind(); });

  const std::string addr_file = dir.path() + "/addr";
  const std::string events = dir.path() + "/events.jsonl";
  nlohmann::json state_evidence;
  {
    Child watch({"env",
                 "-u",
                 "XDG_CACHE_HOME",
                 "-u",
                 "TORCH_FR_DUMP_TEMP_FILE",
                 "-u",
                 "TORCH_NCCL_DEBUG_INFO_TEMP_FILE",
                 "HOME=" + home,
                 ww::testing::WattwatchBinary(),
                 "watch",
                 "--source",
                 "replay:" + log,
                 "--speed",
                 "50",
                 "--linger",
                 "--listen",
                 "127.0.0.1:0",
                 "--ready-file",
                 addr_file,
                 "--events",
                 events,
                 "--nccl-ras",
                 "127.0.0.1:" + std::to_string(ras.port()),
                 "--fr-pipe",
                 ranks.pipe_prefix(),
                 "--webhook",
                 "http://127.0.0.1:" + std::to_string(hook_port) + "/hook",
                 "--log-level",
                 "error"});
    ASSERT_TRUE(WaitForFile(addr_file));
    std::string addr;
    for (int i = 0; i < 100 && addr.empty(); ++i) {
      std::ifstream(addr_file) >> addr;
      if (addr.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    httplib::Client c("127.0.0.1", std::stoi(addr.substr(addr.rfind(':') + 1)));
    for (int i = 0; i < 300 && state_evidence.is_null(); ++i) {
      if (auto r = c.Get("/state"); r && r->status == 200) {
        const auto j = nlohmann::json::parse(r->body, nullptr, false);
        if (j.is_object() && j.contains("evidence")) state_evidence = j["evidence"];
      }
      if (state_evidence.is_null()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    auto posted = [&] {
      std::lock_guard<std::mutex> lock(mu);
      return !payload.empty();
    };
    for (int i = 0; i < 100 && !posted(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  receiver.stop();
  serve.join();

  ASSERT_TRUE(state_evidence.is_object()) << "/state never showed the evidence\n"
                                          << ReadFile(events);
  const std::string incident = state_evidence.value("incident_dir", "");
  ASSERT_FALSE(incident.empty()) << state_evidence.dump();
  auto sources_of_rank_2 = [](const nlohmann::json& ev) {
    std::set<std::string> sources;
    for (const auto& c : ev.at("culprits")) {
      EXPECT_EQ(c.at("rank"), 2) << ev.dump();
      sources.insert(c.at("source").get<std::string>());
    }
    return sources;
  };
  const std::set<std::string> both = {"flight-recorder", "nccl-ras"};
  EXPECT_EQ(sources_of_rank_2(state_evidence), both) << state_evidence.dump();
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_TRUE(
        std::filesystem::exists(incident + "/fr/comm_lib_trace_rank_" + std::to_string(rank)))
        << "rank " << rank;
  }
  const auto hook = nlohmann::json::parse(payload, nullptr, false);
  ASSERT_TRUE(hook.is_object()) << "no webhook payload: " << payload;
  EXPECT_EQ(hook.value("event", ""), "hang_confirmed");
  ASSERT_TRUE(hook.contains("evidence")) << payload;
  EXPECT_EQ(hook["evidence"].value("incident_dir", ""), incident);
  EXPECT_EQ(sources_of_rank_2(hook["evidence"]), both) << payload;
}

}  // namespace
}  // namespace ww::evidence::testing
