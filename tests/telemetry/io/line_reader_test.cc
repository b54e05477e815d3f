// The shared line reading every telemetry reader stands on (issue 19): a NUL tail left by a
// crashed writer is dropped like a cut-off last line and reported; NULs followed by more text are
// not; UTF-16 text is refused with the command that converts it; the same file twice and host
// names of same-named files from different folders; output paths that would destroy an input.
#include "telemetry/io/line_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/support.h"
#include "telemetry/ingest/open.h"
#include "telemetry/ingest/output_paths.h"
#include "telemetry/ingest/text.h"
#include "telemetry/write/nvsmi_writer.h"

namespace ww::line_reader_hardening {

using ::testing::HasSubstr;
using ww::testing::TempDir;

struct ReadLines {
  Status status;
  std::vector<std::string> lines;
  std::vector<bool> complete;
  uint64_t nul_tail = 0;
  std::string note;
};

ReadLines ReadAllLines(const std::string& path, size_t max_line = 1 << 20) {
  ReadLines out;
  auto reader = LineReader::Open(path, max_line);
  if (!reader.ok()) {
    out.status = reader.status();
    return out;
  }
  std::string_view line;
  bool complete = false;
  for (;;) {
    auto r = (*reader)->Next(&line, &complete);
    if (!r.ok()) {
      out.status = r.status();
      break;
    }
    if (!*r) break;
    out.lines.emplace_back(line);
    out.complete.push_back(complete);
  }
  out.nul_tail = (*reader)->nul_tail_bytes();
  out.note = (*reader)->NulTailNote();
  return out;
}

// A three-row nvidia-smi CSV of one GPU.
std::string SmallLog() {
  std::string s = "timestamp, index, power.draw [W], utilization.gpu [%]\n";
  for (int i = 0; i < 30; ++i) {
    std::string ts;
    AppendNvsmiTimestamp(ts, 1763465360000 + i * 100);
    s += ts + ", 0, 500.00 W, 90 %\n";
  }
  return s;
}

TEST(LineReaderNulTail, ShortTailAfterTheLastLineIsDroppedAndCounted) {
  TempDir dir;
  const std::string path = dir.Write("crash.csv", "a\nb\n" + std::string(4096, '\0'));
  ReadLines r = ReadAllLines(path);
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(r.lines, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(r.nul_tail, 4096u);
  EXPECT_THAT(r.note, HasSubstr("4096 NUL bytes after line 2 skipped"));
}

TEST(LineReaderNulTail, TailLongerThanALineIsDroppedNotAnOverlongLine) {
  TempDir dir;
  // 3 MiB of NULs with a 64 KiB line limit: before, "line longer than 65536 bytes".
  const std::string path =
      dir.Write("crash.csv", "a\nhalf-writ" + std::string(size_t{3} << 20, '\0'));
  ReadLines r = ReadAllLines(path, 1 << 16);
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_EQ(r.lines, (std::vector<std::string>{"a", "half-writ"}));
  EXPECT_FALSE(r.complete[1]);  // a cut-off last line, which the readers skip
  EXPECT_EQ(r.nul_tail, size_t{3} << 20);
}

TEST(LineReaderNulTail, NulsInTheMiddleAreNotATail) {
  TempDir dir;
  // Short NULs inside a line stay in it (the readers call that binary data).
  ReadLines inside = ReadAllLines(dir.Write("mid.csv", std::string("a\nb\0\0c\nd\n", 9)));
  ASSERT_TRUE(inside.status.ok());
  EXPECT_EQ(inside.lines[1], std::string("b\0\0c", 4));
  EXPECT_EQ(inside.nul_tail, 0u);
  // A NUL run longer than a line, then text again: an error naming the line, not a skip.
  ReadLines run = ReadAllLines(
      dir.Write("run.csv", "a\n" + std::string(size_t{1} << 18, '\0') + "more text\n"), 1 << 16);
  ASSERT_FALSE(run.status.ok());
  EXPECT_THAT(run.status.message(), HasSubstr("NUL bytes in the middle of the file"));
  EXPECT_THAT(run.status.message(), HasSubstr("run.csv:2"));
}

TEST(LineReaderNulTail, EveryReaderWarnsAndKeepsTheRows) {
  TempDir dir;
  const std::string log = SmallLog();
  for (const char* name : {"nvsmi.csv", "custom.csv"}) {
    std::string text = log;
    IngestOptions io;
    if (std::string(name) == "custom.csv") {
      text = "t,watts\n";
      for (int i = 0; i < 30; ++i) text += std::to_string(1763465360 + i) + ",500\n";
      io.map = {{"time", "t"}, {"power", "watts"}};
    }
    const std::string path = dir.Write(name, text + std::string(70000, '\0'));
    auto opened = OpenTelemetryFiles({path}, io);
    ASSERT_TRUE(opened.ok()) << opened.status().message();
    std::vector<GpuSample> all, batch;
    for (;;) {
      batch.clear();
      Status st = opened->source->Next(&batch);
      ASSERT_TRUE(st.ok()) << name << ": " << st.message();
      if (batch.empty()) break;
      all.insert(all.end(), batch.begin(), batch.end());
    }
    EXPECT_EQ(all.size(), 30u) << name;
    std::string warnings;
    for (const auto& w : opened->source->warnings()) warnings += w + "\n";
    EXPECT_THAT(warnings, HasSubstr("NUL bytes at the end skipped")) << name;
    EXPECT_THAT(warnings, HasSubstr("70000 NUL bytes after line 31")) << name;
  }
}

TEST(LineReaderUtf16, RefusedWithTheIconvCommand) {
  TempDir dir;
  std::string le = "\xff\xfe";
  for (char c : std::string("timestamp, power.draw [W]\n")) le += std::string{c, '\0'};
  std::string bare;  // no byte-order mark, every other byte NUL
  for (char c : std::string("timestamp, power.draw [W]\n")) bare += std::string{'\0', c};
  for (const auto& [name, bytes] :
       std::vector<std::pair<std::string, std::string>>{{"bom.csv", le}, {"bare.csv", bare}}) {
    const std::string path = dir.Write(name, bytes);
    ReadLines r = ReadAllLines(path);
    ASSERT_FALSE(r.status.ok()) << name;
    EXPECT_THAT(r.status.message(), HasSubstr("UTF-16")) << name;
    EXPECT_THAT(r.status.message(), HasSubstr("iconv -f UTF-16 -t UTF-8 " + path)) << name;
  }
}

TEST(DecimalCommaHintTest, NamesTheValue) {
  EXPECT_THAT(ingest::DecimalCommaHint("2025/11/18 11:29:20.100, 0, 123,45 W, 90 %"),
              HasSubstr("'123,45'"));
  EXPECT_EQ(ingest::DecimalCommaHint("2025/11/18 11:29:20.100, 0, 123.45 W, 90 %"), "");
}

TEST(HostNamesForPathsTest, SameNamedFilesFromDifferentFolders) {
  EXPECT_EQ(HostNamesForPaths({"/x/a/node0.csv", "/x/b/node0.csv", "/x/b/node1.csv"}),
            (std::vector<std::string>{"a/node0", "b/node0", "node1"}));
  EXPECT_EQ(HostNamesForPaths({"/r/a/logs/node0.csv", "/r/b/logs/node0.csv"}),
            (std::vector<std::string>{"a/logs/node0", "b/logs/node0"}));
  EXPECT_EQ(HostNamesForPaths({"/x/node0.csv", "/x/node0.csv.gz"}),
            (std::vector<std::string>{"x/node0", "x/node0#2"}));
  EXPECT_EQ(HostNamesForPaths({"-", "/x/node1.csv"}), (std::vector<std::string>{"stdin", "node1"}));
}

TEST(CheckDistinctInputsTest, TheSameFileTwiceByIdentity) {
  TempDir dir;
  const std::string a = dir.Write("a.csv", SmallLog());
  const std::string b = dir.Write("b.csv", SmallLog());
  EXPECT_TRUE(CheckDistinctInputs({a, b}).ok());
  const Status twice = CheckDistinctInputs({a, dir.path() + "/./a.csv"});
  ASSERT_FALSE(twice.ok());
  EXPECT_THAT(twice.message(), HasSubstr("are the same file"));
  EXPECT_FALSE(CheckDistinctInputs({"-", "-"}).ok());
  EXPECT_FALSE(OpenTelemetryFiles({a, a}).ok());
}

TEST(CheckOutputPathsTest, InputsAndTelemetryAreRefusedUnlessForced) {
  TempDir dir;
  const std::string log = dir.Write("node0.csv", SmallLog());
  const std::string other = dir.Write("node1.csv", SmallLog());
  const std::string old_report = dir.Write("report.html", "<html>old</html>\n");
  const std::string labels = dir.Write("labels.csv", "host,timestamp,gpu,state\nn,t,0,idle\n");
  // One of the inputs, spelled differently.
  Status st = CheckOutputPaths({log}, {{"--html", dir.path() + "/./node0.csv"}}, false);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("--html"));
  EXPECT_THAT(st.message(), HasSubstr("node0.csv"));
  EXPECT_THAT(st.message(), HasSubstr("--force"));
  // Not an input, but a telemetry log.
  st = CheckOutputPaths({log}, {{"--json-out", other}}, false);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("reads as a telemetry log (nvidia-smi)"));
  // Two outputs on one file.
  st = CheckOutputPaths({log}, {{"--json-out", dir / "x.json"}, {"--html", dir / "x.json"}}, false);
  EXPECT_FALSE(st.ok());
  // What a previous run wrote, new files, stdout and unset flags are fine; --force allows all.
  EXPECT_TRUE(CheckOutputPaths({log},
                               {{"--html", old_report},
                                {"--labels", labels},
                                {"--json-out", dir / "new.json"},
                                {"--labels", "-"},
                                {"--html", ""}},
                               false)
                  .ok());
  // Devices take any number of writers.
  EXPECT_TRUE(
      CheckOutputPaths({log}, {{"--json-out", "/dev/null"}, {"--html", "/dev/null"}}, false).ok());
  EXPECT_TRUE(CheckOutputPaths({log}, {{"--html", log}, {"--json-out", other}}, true).ok());
}

}  // namespace ww::line_reader_hardening
