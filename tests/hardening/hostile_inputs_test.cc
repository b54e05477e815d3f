// End to end: `wattwatch` on hostile files and careless input (issue 31, items 7-10 and 15).
// Each case is one command under `timeout` and an address-space limit, so a binary that recurses
// without bound, reads a device forever or allocates by a number from the file fails the test
// (exit 124, or a signal) instead of taking the machine.
//
// WW_HARDENING_BINARY=/path/to/wattwatch runs these tests against another binary (an older tree,
// to see them fail there).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "support/support.h"

namespace ww::testing::hostile {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct CliRun {
  int exit_code = -1;  // -1: killed by a signal (a crash, or the memory limit)
  std::string out;     // stdout and stderr
  double seconds = 0;
};

std::string Binary() {
  const char* b = std::getenv("WW_HARDENING_BINARY");
  return b && *b ? std::string(b) : WattwatchBinary();
}

// `wattwatch ARGS` with at most timeout_s seconds and (outside sanitizer builds, which reserve
// terabytes of address space) 4 GiB of address space.
CliRun Wattwatch(const std::string& args, int timeout_s = 20) {
#if defined(__SANITIZE_ADDRESS__)
  const std::string limit;
#else
  const std::string limit = "ulimit -v 4194304; ";
#endif
  const auto start = std::chrono::steady_clock::now();
  const CommandResult r = RunCapture("(" + limit + "exec timeout " + std::to_string(timeout_s) +
                                         " " + Binary() + " " + args + ") 2>&1",
                                     false);
  CliRun out{r.exit_code, r.output};
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

std::string Repeat(const std::string& s, int n) {
  std::string out;
  out.reserve(s.size() * static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

const char kTinyModel[] =
    R"("model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]})";

// --- item 7: tokenizer.json ---------------------------------------------------------------

TEST(HostileTokenizer, SequenceNested40000DeepIsRefusedNotACrash) {
  TempDir dir;
  const int n = 40000;
  const std::string tok =
      dir.Write("deep.json", std::string("{") + kTinyModel + R"(, "normalizer": )" +
                                 Repeat(R"({"type": "Sequence", "normalizers": [)", n) +
                                 R"({"type": "Lowercase"})" + Repeat("]}", n) + "}");
  const std::string in = dir.Write("in.jsonl", "{\"text\": \"ab\"}\n");
  const CliRun r = Wattwatch("tokenize --tokenizer " + tok + " " + in);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("deep.json: JSON nested deeper than 128 levels"));

  // The pre-tokenizer's Sequence the same way.
  const std::string pre =
      dir.Write("deep_pre.json", std::string("{") + kTinyModel + R"(, "pre_tokenizer": )" +
                                     Repeat(R"({"type": "Sequence", "pretokenizers": [)", n) +
                                     R"({"type": "ByteLevel"})" + Repeat("]}", n) + "}");
  const CliRun p = Wattwatch("tokenize --tokenizer " + pre + " " + in);
  EXPECT_EQ(p.exit_code, 2) << p.out;
  EXPECT_THAT(p.out, HasSubstr("nested deeper than 128 levels"));

  // The gate loads the same file for a text-jsonl corpus.
  dir.Write("t.jsonl", Repeat("{\"text\": \"ab ab\"}\n", 8));
  const std::string spec =
      dir.Write("job.yaml",
                "world_size: 2\nmicro_batch_size: 1\ngrad_accum: 1\nseq_len: 16\n"
                "data: {format: text-jsonl, paths: [t.jsonl], tokenizer: deep.json}\n");
  const CliRun g = Wattwatch("gate " + spec);
  EXPECT_EQ(g.exit_code, 2) << g.out;
  EXPECT_THAT(g.out, HasSubstr("data.tokenizer: "));
  EXPECT_THAT(g.out, HasSubstr("deep.json: JSON nested deeper than 128 levels"));
}

TEST(HostileTokenizer, ReplaceChainThatMultipliesTextIsRefusedAtLoad) {
  TempDir dir;
  std::string norms;
  for (int i = 0; i < 20; ++i) {
    norms += std::string(i ? ", " : "") +
             R"({"type": "Replace", "pattern": {"String": "a"}, "content": "aaaaaaaa"})";
  }
  const std::string tok = dir.Write(
      "chain.json", std::string("{") + kTinyModel +
                        R"(, "normalizer": {"type": "Sequence", "normalizers": [)" + norms + "]}}");
  const std::string in = dir.Write("in.jsonl", "{\"text\": \"aaaaaaaaaaaaaaaa\"}\n");
  const CliRun r = Wattwatch("tokenize --tokenizer " + tok + " " + in);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("chain.json: normalizer 3 (Replace 'a' -> 'aaaaaaaa')"));
  EXPECT_THAT(r.out, HasSubstr("more than 1024 times is refused"));
  EXPECT_LT(r.seconds, 10);
}

TEST(HostileTokenizer, OrdinaryNormalizersStillLoad) {
  // Llama-2's: Prepend "▁", Replace " " -> "▁" (3x), and a few Sequence levels.
  TempDir dir;
  const std::string tok = dir.Write(
      "ok.json", std::string("{") + kTinyModel +
                     R"(, "normalizer": {"type": "Sequence", "normalizers": [{"type": "Sequence",
          "normalizers": [{"type": "Prepend", "prepend": "▁"}, {"type": "Replace",
          "pattern": {"String": " "}, "content": "▁"}, {"type": "Replace",
          "pattern": {"Regex": "x+"}, "content": "y"}]}]}, "pre_tokenizer": {"type": "ByteLevel"}})");
  const std::string in = dir.Write("in.jsonl", "{\"text\": \"ab ab\"}\n");
  const CliRun r = Wattwatch("tokenize --tokenizer " + tok + " --json " + in);
  EXPECT_EQ(r.exit_code, 0) << r.out;
}

// --- item 8: incident folders, devices and FIFOs where a file belongs ----------------------

TEST(HostileIncident, WrongTypesAndMissingKeysAreClearErrors) {
  TempDir dir;
  struct Case {
    const char* json;
    const char* message;
  } cases[] = {
      {R"({"summary": 5})", "'summary' is not a string"},
      {"{}", "no 'summary'"},
      {R"({"summary": "x"})", "no 'context'"},
      {R"({"summary": "x", "context": []})", "'context' is not an object"},
      {R"({"summary": "x", "context": {"job": 7}})", "'context.job' is not a string"},
      {R"({"summary": "x", "context": {}, "culprits": [5]})", "'culprits[0]' is not an object"},
      {R"({"summary": "x", "context": {}, "culprits": [{"reason": []}]})",
       "'culprits[0].reason' is not a string"},
      {R"({"summary": "x", "context": {}, "elapsed_s": "1"})", "'elapsed_s' is not a number"},
  };
  int i = 0;
  for (const Case& c : cases) {
    const std::string name = "case" + std::to_string(i++);
    dir.Write(name + "/evidence.json", c.json);
    const std::string folder = dir / name;
    const CliRun r = Wattwatch("incident " + folder);
    EXPECT_EQ(r.exit_code, 2) << c.json << "\n" << r.out;
    EXPECT_THAT(r.out, HasSubstr(c.message)) << c.json;
  }
  // A well-formed one still prints.
  dir.Write("good/evidence.json",
            R"({"summary": "culprit: rank 3", "context": {"job": "j1"}, "culprits": [{"source":
            "ras", "reason": "rank 3 stuck"}], "notes": ["n"], "elapsed_s": 1.5})");
  const CliRun ok = Wattwatch("incident " + (dir / "good"));
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
  EXPECT_THAT(ok.out, HasSubstr("  - [ras] rank 3 stuck"));
}

TEST(HostileIncident, FifoAndDevZeroAreRefusedAtOnce) {
  TempDir dir;
  std::filesystem::create_directories(dir / "fifo");
  ASSERT_EQ(::mkfifo((dir / "fifo/evidence.json").c_str(), 0600), 0);
  const CliRun f = Wattwatch("incident " + (dir / "fifo"), 10);
  EXPECT_EQ(f.exit_code, 2) << "124: it waited for a writer\n" << f.out;
  EXPECT_THAT(f.out, HasSubstr("not a regular file (a FIFO)"));

  std::filesystem::create_directories(dir / "zero");
  std::filesystem::create_symlink("/dev/zero", dir / "zero/evidence.json");
  const CliRun z = Wattwatch("incident " + (dir / "zero"), 10);
  EXPECT_EQ(z.exit_code, 2) << z.out;
  EXPECT_THAT(z.out, HasSubstr("not a regular file (a character device)"));
}

std::string GoldenLog() { return SourceDir() + "/tests/data/golden/watch_replay/node0.csv"; }

TEST(HostileTriage, DevicesAndFifosAreRefusedAtOnceAndStdinStillStreams) {
  TempDir dir;
  const CliRun z = Wattwatch("triage /dev/zero", 10);
  EXPECT_EQ(z.exit_code, 2) << z.out;
  EXPECT_THAT(z.out, HasSubstr("/dev/zero: not a regular file (a character device)"));

  ASSERT_EQ(::mkfifo((dir / "log.fifo").c_str(), 0600), 0);
  const CliRun f = Wattwatch("triage " + (dir / "log.fifo"), 10);
  EXPECT_EQ(f.exit_code, 2) << "124: it waited for a writer\n" << f.out;
  EXPECT_THAT(f.out, HasSubstr("not a regular file (a FIFO)"));
  EXPECT_THAT(f.out, HasSubstr("'-'"));

  const CliRun s = Wattwatch("triage - --json < " + GoldenLog());
  EXPECT_EQ(s.exit_code, 0) << s.out.substr(0, 400);
}

TEST(HostileTriage, TokenFileMustBeARegularFile) {
  const std::string common =
      " --prometheus http://127.0.0.1:1 --start 2026-11-18T00:00:00Z --end "
      "2026-11-18T00:10:00Z --prometheus-token-file ";
  const CliRun z = Wattwatch("triage" + common + "/dev/zero", 10);
  EXPECT_EQ(z.exit_code, 2) << z.out;
  EXPECT_THAT(z.out, HasSubstr("--prometheus-token-file /dev/zero: not a regular file"));
  const CliRun f = Wattwatch(
      "fleet --once --listen none --prometheus http://127.0.0.1:1 "
      "--prometheus-token-file /dev/zero",
      10);
  EXPECT_EQ(f.exit_code, 2) << f.out;
  EXPECT_THAT(f.out, HasSubstr("--prometheus-token-file /dev/zero: not a regular file"));
}

// --- item 9: the gate's job spec ------------------------------------------------------------

struct GateCase {
  TempDir dir;
  GateCase() {
    std::string corpus;
    for (int i = 0; i < 64; ++i) corpus += "{\"input_ids\": [1, 2, 3, 4, 5, 6, 7, 8]}\n";
    dir.Write("c.jsonl", corpus);
  }
  CliRun Gate(const std::string& spec_text, int timeout_s = 20) {
    const std::string spec = dir.Write("job.yaml", spec_text);
    return Wattwatch("gate " + spec, timeout_s);
  }
  static std::string Rest() {
    return "micro_batch_size: 1\ngrad_accum: 1\nseq_len: 16\n"
           "data: {format: jsonl, paths: [c.jsonl]}\n";
  }
};

TEST(HostileGate, HugeWorldSizeIsARangeErrorNotAnAbort) {
  GateCase g;
  const CliRun r = g.Gate("world_size: 1000000000\n" + GateCase::Rest());
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("world_size: 1000000000 is out of range (1..131072)"));
  const CliRun n = g.Gate("nodes: 100000\ngpus_per_node: 8\n" + GateCase::Rest());
  EXPECT_EQ(n.exit_code, 2) << n.out;
  EXPECT_THAT(n.out, HasSubstr("800000 ranks is out of range (1..131072)"));
  const CliRun p = g.Gate("world_size: 8\nparallel: {tp: 1073741824}\n" + GateCase::Rest());
  EXPECT_EQ(p.exit_code, 2) << p.out;
  // The top of the range runs, in bounded time and memory.
  const CliRun top = g.Gate("world_size: 131072\n" + GateCase::Rest(), 60);
  EXPECT_LT(top.seconds, 30);
  EXPECT_THAT(top.exit_code, ::testing::AnyOf(0, 1)) << top.out.substr(0, 400);
}

TEST(HostileGate, AliasBombIsRefusedQuickly) {
  GateCase g;
  std::string bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 10; ++i) {
    bomb += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 9; ++k) bomb += (k ? ", *a" : "*a") + std::to_string(i - 1);
    bomb += "]\n";
  }
  ASSERT_LT(bomb.size(), 700u);
  const CliRun r = g.Gate(bomb + "world_size: 4\n" + GateCase::Rest());
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("the YAML expands to more than 200000 nodes"));
  EXPECT_LT(r.seconds, 5);
}

TEST(HostileGate, LeadingZeroNumbersAndSecondDocumentsAreRefused) {
  GateCase g;
  const CliRun octal = g.Gate("world_size: 010\n" + GateCase::Rest());
  EXPECT_EQ(octal.exit_code, 2) << octal.out;
  EXPECT_THAT(octal.out, HasSubstr("job.yaml:1: world_size: '010' has a leading zero"));
  EXPECT_THAT(octal.out, HasSubstr("octal 8"));
  const CliRun eight = g.Gate("world_size: 4\n" + GateCase::Rest() + "epochs: 08\n");
  EXPECT_EQ(eight.exit_code, 2) << eight.out;
  EXPECT_THAT(eight.out, HasSubstr("as a string"));
  // Zero itself, and a quoted string PyYAML also reads as a string, are not numbers in question.
  const CliRun zero = g.Gate("world_size: 4\n" + GateCase::Rest() +
                             "checkpoint: {dir: " + (g.dir / "ck") + ", keep: 0}\n");
  EXPECT_THAT(zero.out, Not(HasSubstr("leading zero")));

  const CliRun two = g.Gate("world_size: 4\n" + GateCase::Rest() + "---\nworld_size: 8\n");
  EXPECT_EQ(two.exit_code, 2) << two.out;
  EXPECT_THAT(two.out, HasSubstr("more than one YAML document"));
  const CliRun one = g.Gate("---\nworld_size: 4\n" + GateCase::Rest());
  EXPECT_THAT(one.out, Not(HasSubstr("more than one YAML document")));
  EXPECT_NE(one.exit_code, 2) << one.out;
}

// --- item 10: outputs never land on inputs, for every command -------------------------------

TEST(HostileOutputs, FleetReadyFileAndEventsNeverOverwriteALog) {
  TempDir dir;
  const std::string log = dir.Write("node0.csv", ReadFile(GoldenLog()));
  const std::string before = ReadFile(log);
  const std::string fleet = "fleet --once --prometheus http://127.0.0.1:1 --retries 0 ";
  const CliRun r = Wattwatch(fleet + "--listen 127.0.0.1:0 --ready-file " + log, 20);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("--ready-file"));
  EXPECT_EQ(ReadFile(log), before);
  const CliRun e = Wattwatch(fleet + "--listen none --events " + log, 20);
  EXPECT_EQ(e.exit_code, 2) << e.out;
  EXPECT_THAT(e.out, HasSubstr("--events"));
  EXPECT_EQ(ReadFile(log), before);
  // Over the token file it reads.
  const std::string token = dir.Write("token", "secret\n");
  const CliRun t = Wattwatch(
      fleet + "--listen none --prometheus-token-file " + token + " --events " + token, 20);
  EXPECT_EQ(t.exit_code, 2) << t.out;
  EXPECT_EQ(ReadFile(token), "secret\n");
}

TEST(HostileOutputs, WatchEventsNeverAppendToTheProgressLog) {
  TempDir dir;
  const std::string train = dir.Write("train.log", "step 1\nstep 2\n");
  const CliRun r =
      Wattwatch("watch --source replay:" + GoldenLog() + " --speed 1000 --listen none " +
                    "--progress-log " + train + " --progress-regex step --events " + train,
                20);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("--events"));
  EXPECT_EQ(ReadFile(train), "step 1\nstep 2\n");
}

// --- item 15: a byte-order mark, a cut-off compressed log ----------------------------------

TEST(HostileLogs, Utf8ByteOrderMarkIsIgnored) {
  TempDir dir;
  const std::string bom = dir.Write("bom.csv", "\xEF\xBB\xBF" + ReadFile(GoldenLog()));
  const CliRun plain = Wattwatch("triage " + GoldenLog());
  const CliRun r = Wattwatch("triage " + bom);
  EXPECT_EQ(r.exit_code, plain.exit_code) << r.out;
  EXPECT_THAT(r.out, Not(HasSubstr("no timestamp column")));
}

TEST(HostileLogs, TruncatedGzipAndZstdAreReadUpToTheCutWithAWarning) {
  TempDir dir;
  // The log in two members/frames, as a writer that flushes (or log rotation) leaves it, cut in
  // the middle of the second: zstd decodes whole blocks, so the first frame is what survives.
  const std::string first = dir.Write("first.csv", "");
  const std::string second = dir.Write("second.csv", "");
  ASSERT_EQ(RunCommand("head -n 400 " + GoldenLog() + " > " + first + " && tail -n +401 " +
                       GoldenLog() + " > " + second),
            0);
  for (const char* tool : {"gzip", "zstd"}) {
    const std::string full = dir / (std::string("full.") + tool);
    ASSERT_EQ(RunCommand(std::string(tool) + " -c < " + first + " > " + full + " && " + tool +
                         " -c < " + second + " >> " + full),
              0);
    const auto size = std::filesystem::file_size(full);
    const std::string cut = dir / (std::string("cut.") + tool);
    ASSERT_EQ(RunCommand("head -c " + std::to_string(size * 9 / 10) + " " + full + " > " + cut), 0);
    const CliRun r = Wattwatch("triage " + cut);
    EXPECT_EQ(r.exit_code, 0) << tool << "\n" << r.out;
    EXPECT_THAT(r.out, HasSubstr(std::string("truncated ") + tool + " stream after"));
    // Corrupt data (not a cut) is still an error.
    std::string bytes = ReadFile(full);
    for (size_t i = bytes.size() / 3; i < bytes.size() / 3 + 64; ++i) bytes[i] = '\x55';
    const std::string bad = dir.Write(std::string("bad.") + tool, bytes);
    const CliRun b = Wattwatch("triage " + bad);
    EXPECT_EQ(b.exit_code, 2) << tool << "\n" << b.out;
  }
}

}  // namespace
}  // namespace ww::testing::hostile
