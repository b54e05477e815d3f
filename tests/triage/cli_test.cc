// End-to-end tests of `wattwatch triage` (and `wattwatch simulate` as its fixture generator): the
// real binary (WW_BINARY) runs on simulated and malformed logs, output captured to temp files.
// What is checked is the user-facing contract: JSON field names and shapes, culprits against the
// simulator's truth, exit codes (0 ok, 2 bad input, 3 hang with --fail-on-hang), the labels CSV,
// messages for unusable files, and the text summary against a golden file.
//
// Golden file: tests/data/golden/field_report_summary.txt is the text summary of
//   wattwatch simulate field-report --seed 1 --out-dir D
//   wattwatch triage D/node0.csv D/node1.csv --color never
// with the temporary directory written as "D". After an intended change of the summary, rewrite it
// with  WW_UPDATE_GOLDEN=1 ./triage_tests --gtest_filter='CliTest.FieldReportGolden'  and review
// the diff before committing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "support/support.h"
#include "telemetry/write/nvsmi_writer.h"

namespace ww::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

const std::string kMalformedDir = std::string(WW_SOURCE_DIR) + "/tests/data/malformed";
const std::string kGolden =
    std::string(WW_SOURCE_DIR) + "/tests/data/golden/field_report_summary.txt";

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

struct CmdResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs `wattwatch ARGS` (each argument quoted) with stdout and stderr kept apart: the contract
// says which messages go where. stderr goes through a file in dir.
CmdResult Wattwatch(const TempDir& dir, const std::vector<std::string>& args) {
  static int n = 0;
  const std::string err = dir / ("stderr." + std::to_string(n++) + ".txt");
  // Appended piece by piece: `" " + Quote(a)` trips GCC 12's false -Wrestrict positive.
  std::string cmd;
  for (const auto& a : args) {
    cmd += ' ';
    cmd += Quote(a);
  }
  cmd += " 2>";
  cmd += Quote(err);
  const CommandResult r = RunWattwatch(cmd, /*merge_stderr=*/false);
  return {r.exit_code, r.output, ReadFile(err)};
}

// nvidia-smi's timestamp for offset_ms after 2025-11-18T11:29:20.000Z: "2025/11/18 11:29:20.100".
std::string Ts(int64_t offset_ms) {
  std::string s;
  AppendNvsmiTimestamp(s, 1763465360000 + offset_ms);
  return s;
}

const std::set<std::string> kStates = {"idle",         "compute",    "communication",
                                       "data_starved", "checkpoint", "hang"};
const char* const kIsoMs = "\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z?";

// gtest's own regex (POSIX on Linux) has no \\d: use std::regex.
bool FullMatch(const std::string& s, const std::string& re) {
  return std::regex_match(s, std::regex(re));
}

std::set<std::pair<std::string, int>> KeySet(const json& list) {
  std::set<std::pair<std::string, int>> out;
  for (const json& k : list) out.insert({k.at("host").get<std::string>(), k.at("gpu").get<int>()});
  return out;
}

// One hang-exit job (8 GPUs, rank N crashes, the others spin) shared by the tests below.
class CliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    log_ = dir_->path() + "/node0.csv";
    truth_ = dir_->path() + "/truth.json";
    sim_ = new CmdResult(Wattwatch(
        *dir_, {"simulate", "hang-exit", "--seed", "3", "--out", log_, "--truth-json", truth_}));
  }
  static void TearDownTestSuite() {
    delete sim_;
    delete dir_;
  }
  void SetUp() override { ASSERT_EQ(sim_->exit_code, 0) << sim_->err; }

  static TempDir* dir_;
  static std::string log_;
  static std::string truth_;
  static CmdResult* sim_;
};
TempDir* CliTest::dir_ = nullptr;
std::string CliTest::log_;
std::string CliTest::truth_;
CmdResult* CliTest::sim_ = nullptr;

TEST_F(CliTest, JsonContract) {
  CmdResult r = Wattwatch(*dir_, {"triage", log_, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded()) << "stdout is not JSON:\n" << r.out.substr(0, 500);
  ASSERT_TRUE(j.is_object());

  // hosts: [{host, gpus: [{gpu, seconds: {<every state>}, ...}]}]
  ASSERT_TRUE(j.contains("hosts") && j["hosts"].is_array());
  ASSERT_EQ(j["hosts"].size(), 1u);
  const json& host = j["hosts"][0];
  EXPECT_EQ(host.at("host"), "node0");
  ASSERT_TRUE(host.at("gpus").is_array());
  ASSERT_EQ(host["gpus"].size(), 8u);
  const int64_t data_rows = static_cast<int64_t>(Lines(ReadFile(log_)).size()) - 1;
  int64_t samples = 0;
  for (size_t g = 0; g < host["gpus"].size(); ++g) {
    const json& gpu = host["gpus"][g];
    EXPECT_EQ(gpu.at("gpu"), g);
    ASSERT_TRUE(gpu.at("seconds").is_object());
    std::set<std::string> keys;
    double total = 0;
    for (const auto& [k, v] : gpu["seconds"].items()) {
      keys.insert(k);
      ASSERT_TRUE(v.is_number()) << k;
      EXPECT_GE(v.get<double>(), 0) << k;
      total += v.get<double>();
    }
    EXPECT_EQ(keys, kStates);
    // Every GPU's seconds cover the log (~293 s of hang-exit), none lost, none counted twice.
    EXPECT_NEAR(total, 293, 5) << "GPU " << g;
    EXPECT_GT(gpu["seconds"]["hang"].get<double>(), 0) << "GPU " << g;
    samples += gpu.at("samples").get<int64_t>();
  }
  EXPECT_EQ(samples, data_rows);

  // hang_episodes: [{start, detected_at, end, gpus: [{host, gpu}], culprits: [...], reasons}]
  ASSERT_TRUE(j.contains("hang_episodes") && j["hang_episodes"].is_array());
  ASSERT_EQ(j["hang_episodes"].size(), 1u);
  const json& e = j["hang_episodes"][0];
  for (const char* k : {"start", "detected_at", "end"}) {
    ASSERT_TRUE(e.at(k).is_string()) << k;
    EXPECT_TRUE(FullMatch(e[k].get<std::string>(), kIsoMs)) << k << ": " << e[k];
  }
  // ISO timestamps of one format order as strings.
  EXPECT_LE(e["start"].get<std::string>(), e["detected_at"].get<std::string>());
  EXPECT_LE(e["detected_at"].get<std::string>(), e["end"].get<std::string>());
  ASSERT_TRUE(e.at("gpus").is_array());
  EXPECT_EQ(e["gpus"].size(), 8u);
  for (const json& k : e["gpus"]) {
    EXPECT_TRUE(k.at("host").is_string());
    EXPECT_TRUE(k.at("gpu").is_number_integer());
  }
  ASSERT_TRUE(e.at("culprits").is_array());
  ASSERT_TRUE(e.at("reasons").is_array());
  ASSERT_FALSE(e["reasons"].empty());
  for (const json& reason : e["reasons"]) {
    ASSERT_TRUE(reason.is_string());
    EXPECT_FALSE(reason.get<std::string>().empty());
  }

  // wasted_gpu_hours: a number, the episodes' sum.
  ASSERT_TRUE(j.contains("wasted_gpu_hours") && j["wasted_gpu_hours"].is_number());
  EXPECT_GT(j["wasted_gpu_hours"].get<double>(), 0);
  EXPECT_NEAR(j["wasted_gpu_hours"].get<double>(), e.at("wasted_gpu_hours").get<double>(), 1e-3);

  // Culprits: exactly the ranks the simulator crashed.
  json truth = json::parse(ReadFile(truth_));
  ASSERT_EQ(truth.at("hang_episodes").size(), 1u);
  EXPECT_EQ(KeySet(e["culprits"]), KeySet(truth["hang_episodes"][0].at("culprits")))
      << "triage: " << e["culprits"].dump() << "\ntruth: " << truth["hang_episodes"][0].dump();
  EXPECT_FALSE(e["culprits"].empty());

  // --json-out writes the same document.
  const std::string json_out = dir_->path() + "/out.json";
  CmdResult r2 = Wattwatch(*dir_, {"triage", log_, "--json-out", json_out, "--color", "never"});
  ASSERT_EQ(r2.exit_code, 0) << r2.err;
  EXPECT_EQ(json::parse(ReadFile(json_out)), j);
  EXPECT_THAT(r2.out, HasSubstr("HANG 1"));  // and still prints the summary
}

TEST_F(CliTest, FailOnHangExitCodes) {
  CmdResult hang = Wattwatch(*dir_, {"triage", log_, "--fail-on-hang", "--color", "never"});
  EXPECT_EQ(hang.exit_code, 3) << hang.err;
  EXPECT_THAT(hang.out, HasSubstr("HANG 1"));
  // Without the flag a hang is a finding, not a failure.
  CmdResult plain = Wattwatch(*dir_, {"triage", log_, "--color", "never"});
  EXPECT_EQ(plain.exit_code, 0) << plain.err;

  const std::string healthy = dir_->path() + "/healthy/node0.csv";
  std::filesystem::create_directories(dir_->path() + "/healthy");
  CmdResult sim = Wattwatch(*dir_, {"simulate", "healthy", "--seed", "3", "--out", healthy});
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  CmdResult ok = Wattwatch(*dir_, {"triage", healthy, "--fail-on-hang", "--color", "never"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_THAT(ok.out, HasSubstr("No hang."));
}

TEST_F(CliTest, LabelsOneRowPerInputSample) {
  const std::string labels = dir_->path() + "/labels.csv";
  CmdResult r = Wattwatch(*dir_, {"triage", log_, "--labels", labels, "--color", "never"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto rows = Lines(ReadFile(labels));
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows[0], "host,timestamp,gpu,state");
  const auto input = Lines(ReadFile(log_));
  ASSERT_EQ(rows.size(), input.size()) << "one label per data row (+ header each)";

  const std::regex row_re(std::string("node0,(") + kIsoMs +
                          "),([0-7]),(idle|compute|communication|data_starved|checkpoint|hang)");
  std::map<std::string, int> by_state;
  std::set<std::pair<std::string, std::string>> seen;  // (timestamp, gpu): no sample twice
  for (size_t i = 1; i < rows.size(); ++i) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(rows[i], m, row_re)) << "line " << i + 1 << ": " << rows[i];
    ++by_state[m[3]];
    EXPECT_TRUE(seen.insert({m[1], m[2]}).second) << rows[i];
  }
  // 2025-11-18T11:29:20.700: the simulator's start day and format (no zone: the log had none).
  EXPECT_TRUE(FullMatch(rows[1], "node0,2025-11-18T11:29:2\\d\\.\\d{3},\\d,.*")) << rows[1];
  EXPECT_GT(by_state["hang"], 0);
  EXPECT_GT(by_state["compute"], 0);
  EXPECT_GT(by_state["idle"], 0);

  // '-' writes the labels to stdout instead of the summary.
  CmdResult to_stdout = Wattwatch(*dir_, {"triage", log_, "--labels", "-"});
  ASSERT_EQ(to_stdout.exit_code, 0) << to_stdout.err;
  EXPECT_EQ(Lines(to_stdout.out), rows);
}

// Every file in tests/data/malformed/ against tests/data/malformed/expectations.txt.
TEST_F(CliTest, MalformedInputs) {
  std::map<std::string, std::pair<int, std::string>> expect;
  for (const std::string& line : Lines(ReadFile(kMalformedDir + "/expectations.txt"))) {
    if (line.empty() || line[0] == '#') continue;
    const size_t a = line.find('\t'), b = line.find('\t', a + 1);
    ASSERT_NE(b, std::string::npos) << line;
    expect[line.substr(0, a)] = {std::stoi(line.substr(a + 1, b - a - 1)), line.substr(b + 1)};
  }
  size_t checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kMalformedDir)) {
    const std::string name = entry.path().filename().string();
    if (name == "expectations.txt") continue;
    SCOPED_TRACE(name);
    auto it = expect.find(name);
    ASSERT_NE(it, expect.end()) << "no line for " << name << " in expectations.txt";
    const auto& [want_exit, text] = it->second;
    const std::string path = entry.path().string();
    CmdResult r = Wattwatch(*dir_, {"triage", path, "--color", "never"});
    EXPECT_EQ(r.exit_code, want_exit) << r.err << r.out;
    if (want_exit == 2) {
      // One clear message naming the file and the line.
      EXPECT_THAT(r.err, HasSubstr("wattwatch triage: " + path));
      EXPECT_TRUE(std::regex_search(r.err, std::regex(":\\d+:|line \\d+"))) << r.err;
      EXPECT_THAT(r.err, HasSubstr(text));
      EXPECT_EQ(Lines(r.err).size(), 1u) << r.err;
      EXPECT_TRUE(r.out.empty()) << r.out;
    } else {
      bool found = false;
      for (const std::string& line : Lines(r.out)) {
        if (line.rfind("skipped: " + path + ": ", 0) == 0 && line.find(text) != std::string::npos) {
          found = true;
        }
      }
      EXPECT_TRUE(found) << "no 'skipped: " << path << ": ..." << text << "' line in:\n" << r.out;
      // The same warnings reach machines through --json.
      CmdResult rj = Wattwatch(*dir_, {"triage", path, "--json"});
      ASSERT_EQ(rj.exit_code, 0) << rj.err;
      json j = json::parse(rj.out, nullptr, false);
      ASSERT_TRUE(j.is_object());
      EXPECT_THAT(j.at("warnings").dump(), HasSubstr(text.substr(0, text.find('\''))));
    }
    ++checked;
  }
  EXPECT_EQ(checked, expect.size()) << "expectations.txt names files that do not exist";
}

TEST(CliJsonTest, JsonStaysValidOnNonUtf8Logs) {
  // Latin-1 GPU names and stray bytes in values must not abort `--json` (nlohmann::json throws
  // on invalid UTF-8 when dumping); they come out as U+FFFD.
  TempDir dir;
  std::string log = "timestamp, index, name, power.draw [W], utilization.gpu [%]\n";
  for (int t = 0; t < 20; ++t) {
    for (int g = 0; g < 2; ++g) {
      log += Ts(t * 100) + ", " + std::to_string(g) + ", Carte graphique \xe9, " +
             (t == 5 && g == 0 ? std::string("5\xff"
                                             "0 W")
                               : std::string("300.00 W")) +
             ", 95 %\n";
    }
  }
  const std::string path = dir / "gpu.csv";
  WriteFile(path, log);
  CmdResult r = Wattwatch(dir, {"triage", path, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["hosts"][0]["gpus"][0]["name"], "Carte graphique \xef\xbf\xbd");
  EXPECT_THAT(j["warnings"].dump(), HasSubstr("5\xef\xbf\xbd"
                                              "0 W"));
}

TEST(CliHelpTest, HelpTeachesExitCodes) {
  TempDir dir;
  CmdResult r = Wattwatch(dir, {"triage", "--help"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string help = r.out + r.err;
  EXPECT_THAT(help, HasSubstr("Exit codes"));
  EXPECT_THAT(help, HasSubstr("0 triage ran"));
  EXPECT_THAT(help, HasSubstr("2 unusable input"));
  EXPECT_THAT(help, HasSubstr("3 a hang was found"));
  EXPECT_THAT(help, HasSubstr("--fail-on-hang"));
  EXPECT_THAT(help, HasSubstr("Example"));

  // Flags wrong: exit 2 as well, not a crash.
  CmdResult missing = Wattwatch(dir, {"triage", dir.path() + "/does-not-exist.csv"});
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  EXPECT_THAT(missing.err, HasSubstr("does-not-exist.csv"));
}

TEST(CliGoldenTest, FieldReportGolden) {
  TempDir dir;
  const std::string d = dir.path() + "/D";
  CmdResult sim = Wattwatch(dir, {"simulate", "field-report", "--seed", "1", "--out-dir", d});
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  CmdResult r = Wattwatch(dir, {"triage", d + "/node0.csv", d + "/node1.csv", "--color", "never"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Paths of the temp dir (in "skipped:" lines, if any) become "D".
  std::string summary = r.out;
  for (size_t pos; (pos = summary.find(d)) != std::string::npos;)
    summary.replace(pos, d.size(), "D");
  EXPECT_EQ(summary.find("\033["), std::string::npos) << "--color never printed escapes";

  if (const char* update = std::getenv("WW_UPDATE_GOLDEN"); update && std::string(update) == "1") {
    std::filesystem::create_directories(std::filesystem::path(kGolden).parent_path());
    std::ofstream(kGolden, std::ios::binary) << summary;
    GTEST_SKIP() << "rewrote " << kGolden;
  }
  const std::string golden = ReadFile(kGolden);
  ASSERT_FALSE(golden.empty()) << kGolden << " missing; run with WW_UPDATE_GOLDEN=1";
  if (summary != golden) {
    const auto a = Lines(golden), b = Lines(summary);
    size_t i = 0;
    while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
    FAIL() << "summary differs from " << kGolden << " at line " << i + 1
           << ":\n  golden: " << (i < a.size() ? a[i] : "<end>")
           << "\n  actual: " << (i < b.size() ? b[i] : "<end>")
           << "\n(intended? rerun with WW_UPDATE_GOLDEN=1 and review the diff)\n"
           << summary;
  }
}

}  // namespace
}  // namespace ww::testing
