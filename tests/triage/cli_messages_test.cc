// Issue 19, end to end through the real binary: output flags that would overwrite an input,
// standard input, NUL tails, UTF-16 and decimal-comma logs, flag errors with suggestions,
// --json with --labels -, --nvml-lib on a file that is no library, same-named files from
// different folders, the same file twice, and the checkpoint wording (who saved, who waited).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "support/support.h"

namespace ww::testing::cli_hardening {

using ::testing::HasSubstr;
using ::testing::Not;

// Two hosts of a healthy job, simulated once per test.
class CliHardeningTest : public TestDirFixture {
 protected:
  void SetUp() override {
    TestDirFixture::SetUp();
    dir = dir_.string();
    const CommandResult sim =
        RunWattwatch("simulate healthy --hosts 2 --seed 3 --out-dir " + dir + " 2>&1");
    ASSERT_EQ(sim.exit_code, 0) << sim.output;
    node0 = dir + "/node0.csv";
    node1 = dir + "/node1.csv";
    original = ReadFile(node0);
    ASSERT_FALSE(original.empty());
  }
  std::string dir, node0, node1, original;
};

// What `wattwatch triage --html node*.csv` expands to: the first log after the flag.
TEST_F(CliHardeningTest, OutputFlagGivenAnInputLogIsRefused) {
  for (const std::string flag : {"--html", "--labels", "--json-out"}) {
    const CommandResult r = RunWattwatch("triage " + flag + " " + node0 + " " + node1);
    EXPECT_EQ(r.exit_code, 2) << flag << ": " << r.output;
    EXPECT_THAT(r.output, HasSubstr("wattwatch triage: " + flag + " " + node0)) << flag;
    EXPECT_THAT(r.output, HasSubstr("--force")) << flag;
    EXPECT_EQ(ReadFile(node0), original) << flag << " overwrote the log";
  }
  // The same file as input and output, spelled two ways: identity, not the string.
  const CommandResult self = RunCapture("cd " + dir + " && " + WattwatchBinary() +
                                        " triage --json-out ./node0.csv " + node0 + " 2>&1");
  EXPECT_EQ(self.exit_code, 2) << self.output;
  EXPECT_THAT(self.output, HasSubstr("that is the input log"));
  EXPECT_EQ(ReadFile(node0), original);
  // --force writes it, as asked.
  const CommandResult forced = RunWattwatch("triage --force --json-out " + node1 + " " + node0);
  EXPECT_EQ(forced.exit_code, 0) << forced.output;
  EXPECT_THAT(ReadFile(node1), HasSubstr("\"hang_episodes\""));
}

TEST_F(CliHardeningTest, RerunOverItsOwnOutputsIsFine) {
  const std::string outs = " --json-out " + dir + "/t.json --labels " + dir + "/labels.csv" +
                           " --html " + dir + "/r.html ";
  for (int i = 0; i < 2; ++i) {
    const CommandResult r = RunWattwatch("triage" + outs + node0 + " " + node1);
    EXPECT_EQ(r.exit_code, 0) << "run " << i << ": " << r.output;
  }
}

TEST_F(CliHardeningTest, EveryCommandThatWritesChecksItsOutputs) {
  // record --out over an existing log: refused before NVML is even loaded.
  CommandResult r = RunWattwatch("record --out " + node0 + " --nvml-lib /nonexistent.so");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("wattwatch record: --out " + node0));
  // simulate over a real log (and into a folder of logs) unless --force.
  r = RunWattwatch("simulate healthy --out " + node0);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("wattwatch simulate: --out " + node0));
  r = RunWattwatch("simulate healthy --hosts 2 --out-dir " + dir);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("--out-dir"));
  EXPECT_EQ(ReadFile(node0), original);
  r = RunWattwatch("simulate healthy --hosts 2 --seed 3 --force --out-dir " + dir);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // watch --events on the log it replays.
  r = RunWattwatch("watch --source replay:" + node0 + " --speed 1000 --listen none --events " +
                   node0);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("wattwatch watch: --events " + node0));
  EXPECT_EQ(ReadFile(node0), original);
}

TEST_F(CliHardeningTest, JsonAndLabelsBothOnStdoutAreRefused) {
  const CommandResult r = RunWattwatch("triage --json --labels - " + node0);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("--json and --labels - both print on standard output"));
}

TEST_F(CliHardeningTest, StandardInputReadsEveryFormatAndCompression) {
  const CommandResult file = RunWattwatch("triage --json " + node0, false);
  ASSERT_EQ(file.exit_code, 0);
  const auto want = nlohmann::json::parse(file.output)["hosts"][0]["gpus"];
  for (const std::string feed : {"cat ", "gzip -c ", "zstd -q -c "}) {
    const CommandResult r =
        RunCapture(feed + node0 + " | " + WattwatchBinary() + " triage --json -",
                   /*merge_stderr=*/false);
    ASSERT_EQ(r.exit_code, 0) << feed << r.output;
    const auto got = nlohmann::json::parse(r.output);
    EXPECT_EQ(got["hosts"][0]["host"], "stdin") << feed;
    EXPECT_EQ(got["hosts"][0]["gpus"], want) << feed;
  }
  const CommandResult twice =
      RunCapture("cat " + node0 + " | " + WattwatchBinary() + " triage - - 2>&1");
  EXPECT_EQ(twice.exit_code, 2) << twice.output;
  EXPECT_THAT(twice.output, HasSubstr("standard input) given twice"));
}

TEST_F(CliHardeningTest, NulTailOfACrashedLogIsSkippedWithAWarning) {
  const std::string crashed = dir + "/crashed.csv";
  WriteFile(crashed, original + std::string(size_t{3} << 20, '\0'));
  const CommandResult r = RunWattwatch("triage --color never " + crashed);
  EXPECT_EQ(r.exit_code, 0) << r.output.substr(0, 400);
  EXPECT_THAT(r.output, HasSubstr("NUL bytes at the end skipped"));
  // NULs and then rows again are no tail: still refused.
  const std::string middle = dir + "/middle.csv";
  WriteFile(middle, original + std::string(size_t{2} << 20, '\0') + original.substr(0, 200));
  const CommandResult m = RunWattwatch("triage " + middle);
  EXPECT_EQ(m.exit_code, 2) << m.output.substr(0, 400);
  EXPECT_THAT(m.output, HasSubstr("NUL bytes in the middle"));
}

TEST_F(CliHardeningTest, Utf16AndDecimalCommaLogsAreNamed) {
  const std::string utf16 = dir + "/utf16.csv";
  ASSERT_EQ(RunCommand("iconv -f UTF-8 -t UTF-16 " + node0 + " > " + utf16), 0);
  CommandResult r = RunWattwatch("triage " + utf16);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("UTF-16"));
  EXPECT_THAT(r.output, HasSubstr("iconv -f UTF-16 -t UTF-8 " + utf16));
  // A de_DE locale: 547,12 W. Every row has two fields more than the header (power.draw and
  // power.limit split in two).
  const std::string comma = dir + "/comma.csv";
  ASSERT_EQ(RunCommand("sed -E '2,$ s/([0-9])\\.([0-9]+) W/\\1,\\2 W/g' " + node0 + " > " + comma),
            0);
  r = RunWattwatch("triage " + comma);
  EXPECT_EQ(r.exit_code, 2) << r.output.substr(0, 600);
  EXPECT_THAT(r.output, HasSubstr("decimal comma"));
}

TEST(CliHardeningFlags, ErrorsNameTheCommandAndSuggestTheNearestWord) {
  CommandResult r = RunWattwatch("tirage x.csv");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("wattwatch: unknown command 'tirage'; did you mean 'triage'?"));
  r = RunWattwatch("triage --jsn x.csv");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output,
              HasSubstr("wattwatch triage: unknown option '--jsn'; did you mean '--json'?"));
  r = RunWattwatch("gpu.csv triage");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("'gpu.csv' comes before the command 'triage'"));
  r = RunWattwatch("simulate healthy --out=x.csv --sed 3");
  EXPECT_THAT(r.output, HasSubstr("wattwatch simulate: unknown option '--sed'; did you mean "
                                  "'--seed'?"));
  // CLI11's own errors get the prefix too.
  r = RunWattwatch("triage --interval-ms 0 x.csv");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("wattwatch triage: "));
  // Help still works and exits 0; `run`'s command after -- is not checked.
  EXPECT_EQ(RunWattwatch("triage --help").exit_code, 0);
  r = RunWattwatch("run --source sim:healthy --speed 1000 --listen none -- true --not-ours");
  EXPECT_THAT(r.output, Not(HasSubstr("unknown option")));
}

TEST(CliHardeningNvml, AFileThatIsNoLibraryIsNamed) {
  const CommandResult r = RunWattwatch("devices --nvml-lib /etc/passwd");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("/etc/passwd (from --nvml-lib) is not a loadable library: it "
                                  "is not an ELF shared object"));
  const CommandResult folder = RunWattwatch("devices --nvml-lib /");
  EXPECT_EQ(folder.exit_code, 2) << folder.output;
  EXPECT_THAT(folder.output, HasSubstr("is not a loadable library: it is a directory"));
}

TEST_F(CliHardeningTest, SameNamedFilesFromTwoFoldersAndTheSameFileTwice) {
  std::filesystem::create_directories(dir + "/a");
  std::filesystem::create_directories(dir + "/b");
  std::filesystem::copy_file(node0, dir + "/a/node0.csv");
  std::filesystem::copy_file(node1, dir + "/b/node0.csv");
  CommandResult r =
      RunWattwatch("triage --color never " + dir + "/a/node0.csv " + dir + "/b/node0.csv");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("hosts: a/node0 = " + dir + "/a/node0.csv, b/node0 = " + dir +
                                  "/b/node0.csv"));
  EXPECT_THAT(r.output, HasSubstr("\nb/node0 "));
  // The same file twice, in two spellings: an error, not two hosts.
  r = RunCapture("cd " + dir + " && " + WattwatchBinary() + " triage node0.csv ./node0.csv 2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("are the same file"));
}

TEST(CliHardeningCheckpoints, TheRealTraceSaysWhoSavedAndWhoWaited) {
  const std::string trace = SharedDir() + "/traces/real/grantwilkins_training_profile_ckpt1.csv";
  WW_REQUIRE_SHARED_FILE(trace);
  const CommandResult r = RunWattwatch("triage --color never " + trace);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string host = "grantwilkins_training_profile_ckpt1";
  EXPECT_THAT(r.output,
              HasSubstr(": " + host + "/GPU0 saved while 7 GPUs (" + host + "/GPU1-7) waited\n"));
}

TEST(CliHardeningCheckpoints, ZeroSecondCheckpointsAreNotListed) {
  // ckpt500 has a 1 ms all-quiet blip at 01:59:34.586 that was listed as "(0.0 s)". The three
  // rank-0 saves are its checkpoints; the all-quiet moments at start-up (before 10 s of training),
  // at the rank-0 exit (01:55:09: the processes left) and at the relaunch's load are not.
  const std::string trace = SharedDir() + "/traces/real/grantwilkins_training_profile_ckpt500.csv";
  WW_REQUIRE_SHARED_FILE(trace);
  const CommandResult r = RunWattwatch("triage --color never " + trace);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("\nCheckpoints: 3 (43.8 s in all)\n"));
  EXPECT_THAT(r.output, Not(HasSubstr("(0.0 s)")));
}

}  // namespace ww::testing::cli_hardening
