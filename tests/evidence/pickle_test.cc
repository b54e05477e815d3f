// The Flight Recorder pickle reader against pickles CPython itself writes, and against input
// that must be refused: code-importing opcodes, truncation at every byte, huge lengths.
#include "evidence/pickle.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "evidence/flight_recorder.h"
#include "support/support.h"

namespace ww::evidence {
namespace {

// CPython's pickle.dumps(<expr>, protocol) as bytes.
std::string CPythonPickle(const std::string& expr, int protocol) {
  const auto r = ww::testing::RunCapture(
      "python3 -c 'import pickle,sys,collections; sys.stdout.buffer.write(pickle.dumps(" + expr +
          ", protocol=" + std::to_string(protocol) + "))'",
      /*merge_stderr=*/false);
  EXPECT_EQ(r.exit_code, 0) << expr;
  return r.output;
}

const char* kDumpShaped =
    "{\"version\": \"2.10\", \"pg_config\": {\"0\": {\"name\": \"0\", \"desc\": \"default_pg\", "
    "\"ranks\": \"[0, 1]\"}}, \"entries\": [{\"record_id\": 7, \"process_group\": (\"0\", "
    "\"default_pg\"), \"collective_seq_id\": 10235, \"profiling_name\": \"nccl:all_reduce\", "
    "\"time_created_ns\": 1764634500123456789, \"neg\": -70000, \"small\": -1, \"dur\": 0.25, "
    "\"state\": \"started\", \"time_discovered_completed_ns\": None, \"retired\": False, "
    "\"is_p2p\": True, \"uni\": \"caf\\u00e9\", \"input_sizes\": "
    "[[1024, 1024]], \"frames\": [{\"name\": \"step\", \"filename\": \"/job/train.py\", "
    "\"line\": 42}]}]}";

TEST(PickleReader, ReadsCPythonPicklesOfEveryProtocolFrom2To5) {
  for (int protocol = 2; protocol <= 5; ++protocol) {
    SCOPED_TRACE(protocol);
    const std::string bytes = CPythonPickle(kDumpShaped, protocol);
    Result<PickleDoc> doc = ParsePickle(bytes);
    ASSERT_TRUE(doc.ok()) << doc.status().message();
    const PickleValue& root = doc->root();
    EXPECT_EQ(doc->GetStr(root, "version"), "2.10");
    const PickleValue* entries = doc->Get(root, "entries");
    ASSERT_NE(entries, nullptr);
    ASSERT_EQ(entries->items.size(), 1u);
    const PickleValue& e = doc->at(entries->items[0]);
    EXPECT_EQ(doc->GetInt(e, "record_id"), 7);
    EXPECT_EQ(doc->GetInt(e, "collective_seq_id"), 10235);
    EXPECT_EQ(doc->GetInt(e, "time_created_ns"), 1764634500123456789LL);
    EXPECT_EQ(doc->GetInt(e, "neg"), -70000);
    EXPECT_EQ(doc->GetInt(e, "small"), -1);
    EXPECT_DOUBLE_EQ(doc->Get(e, "dur")->float_value, 0.25);
    EXPECT_EQ(doc->Get(e, "time_discovered_completed_ns")->kind, PickleValue::Kind::kNone);
    EXPECT_FALSE(doc->Get(e, "retired")->bool_value);
    EXPECT_TRUE(doc->Get(e, "is_p2p")->bool_value);
    EXPECT_EQ(doc->GetStr(e, "uni"), "caf\xc3\xa9");
    const PickleValue* pg = doc->Get(e, "process_group");
    ASSERT_EQ(pg->kind, PickleValue::Kind::kTuple);
    EXPECT_EQ(doc->at(pg->items[1]).text, "default_pg");
  }
}

TEST(PickleReader, BytesFromProtocol3OnAndProtocol2sCodecsCallIsRefused) {
  for (int protocol = 3; protocol <= 5; ++protocol) {
    Result<PickleDoc> doc = ParsePickle(CPythonPickle("[b\"\\x00\\x01\", b\"x\" * 300]", protocol));
    ASSERT_TRUE(doc.ok()) << doc.status().message();
    EXPECT_EQ(doc->at(doc->root().items[0]).kind, PickleValue::Kind::kBytes);
    EXPECT_EQ(doc->at(doc->root().items[0]).text, std::string("\x00\x01", 2));
    EXPECT_EQ(doc->at(doc->root().items[1]).text.size(), 300u);
  }
  // Protocol 2 has no bytes opcode: CPython writes _codecs.encode(...) through GLOBAL + REDUCE.
  Result<PickleDoc> p2 = ParsePickle(CPythonPickle("b\"\\x00\"", 2));
  ASSERT_FALSE(p2.ok());
  EXPECT_NE(p2.status().message().find("GLOBAL"), std::string::npos);
}

TEST(PickleReader, SharedObjectsComeBackThroughTheMemo) {
  // One frame list under two entries: pickle writes it once and refers to it with BINGET.
  const std::string bytes = CPythonPickle(
      "(lambda f: {\"entries\": [{\"frames\": f}, {\"frames\": f}]})([{\"name\": \"x\", "
      "\"filename\": \"/a.py\", \"line\": 1}])",
      2);
  Result<PickleDoc> doc = ParsePickle(bytes);
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  const PickleValue* entries = doc->Get(doc->root(), "entries");
  const PickleValue* f0 = doc->Get(doc->at(entries->items[0]), "frames");
  const PickleValue* f1 = doc->Get(doc->at(entries->items[1]), "frames");
  EXPECT_EQ(f0, f1);
  EXPECT_EQ(f1->items.size(), 1u);
}

TEST(PickleReader, RefusesOpcodesThatImportOrCallNamingOpcodeAndOffset) {
  // Protocol 2 writes an OrderedDict as GLOBAL 'collections OrderedDict' right after PROTO.
  Result<PickleDoc> p2 = ParsePickle(CPythonPickle("collections.OrderedDict()", 2));
  ASSERT_FALSE(p2.ok());
  EXPECT_NE(p2.status().message().find("opcode GLOBAL (0x63) at offset 2"), std::string::npos)
      << p2.status().message();
  Result<PickleDoc> p4 = ParsePickle(CPythonPickle("collections.OrderedDict()", 4));
  ASSERT_FALSE(p4.ok());
  EXPECT_NE(p4.status().message().find("STACK_GLOBAL"), std::string::npos);
  // A set is not in a dump either.
  Result<PickleDoc> set = ParsePickle(CPythonPickle("{1, 2}", 4));
  ASSERT_FALSE(set.ok());
  EXPECT_NE(set.status().message().find("EMPTY_SET"), std::string::npos);
}

TEST(PickleReader, EveryTruncationIsAClearErrorNeverACrash) {
  const std::string bytes = CPythonPickle(kDumpShaped, 4);
  for (size_t n = 0; n < bytes.size(); ++n) {
    Result<PickleDoc> doc = ParsePickle(std::string_view(bytes).substr(0, n));
    ASSERT_FALSE(doc.ok()) << "prefix of " << n << " bytes parsed";
    EXPECT_FALSE(doc.status().message().empty());
  }
  Result<PickleDoc> none = ParsePickle("");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("truncated"), std::string::npos);
}

TEST(PickleReader, HugeLengthsAndCountsAreCapped) {
  // BINUNICODE8 announcing 2^40 bytes.
  const std::string huge =
      std::string("\x80\x04\x8d", 3) + std::string("\x00\x00\x00\x00\x00\x01\x00\x00", 8);
  Result<PickleDoc> doc = ParsePickle(huge);
  ASSERT_FALSE(doc.ok());
  EXPECT_NE(doc.status().message().find("over the"), std::string::npos) << doc.status().message();
  PickleLimits small;
  small.max_values = 10;
  Result<PickleDoc> many = ParsePickle(CPythonPickle("list(range(100))", 2), small);
  ASSERT_FALSE(many.ok());
  EXPECT_NE(many.status().message().find("more than 10 values"), std::string::npos);
  PickleLimits tiny_input;
  tiny_input.max_input_bytes = 4;
  EXPECT_FALSE(ParsePickle(CPythonPickle("[1, 2, 3]", 2), tiny_input).ok());
}

TEST(PickleReader, AListContainingItselfRendersBounded) {
  const std::string bytes = CPythonPickle("(lambda l: (l.append(l), l)[1])([])", 2);
  Result<PickleDoc> doc = ParsePickle(bytes);
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  const std::string json = doc->ToJson(doc->root(), 5);
  EXPECT_NE(json.find("nested too deep"), std::string::npos) << json;
}

TEST(FlightRecorderDump, ReadsEntriesAndTheTopUserFrame) {
  const std::string bytes = CPythonPickle(
      "{\"version\": \"2.10\", \"entries\": [{\"record_id\": 3, \"pg_id\": 0, \"process_group\": "
      "(\"0\", \"default_pg\"), \"collective_seq_id\": 9, \"p2p_seq_id\": 0, \"profiling_name\": "
      "\"nccl:all_reduce\", \"state\": \"started\", \"is_p2p\": False, \"frames\": [{\"name\": "
      "\"all_reduce\", \"filename\": \"/usr/lib/python3/torch/distributed/distributed_c10d.py\", "
      "\"line\": 2501}, {\"name\": \"step\", \"filename\": \"/job/train.py\", \"line\": 42}]}], "
      "\"pg_status\": {\"0\": {\"last_started_collective\": 9}}}",
      4);
  Result<FrRankDump> dump = ReadFrDump(bytes, 5);
  ASSERT_TRUE(dump.ok()) << dump.status().message();
  ASSERT_EQ(dump->entries.size(), 1u);
  EXPECT_EQ(dump->entries[0].collective_seq_id, 9);
  EXPECT_EQ(dump->entries[0].pg_desc, "default_pg");
  EXPECT_EQ(dump->entries[0].top_user_frame, "/job/train.py:42 in step");
  EXPECT_EQ(dump->pg_status["0"]["last_started_collective"], 9);
  Result<FrRankDump> not_fr = ReadFrDump(CPythonPickle("{\"a\": 1}", 2), 0);
  ASSERT_FALSE(not_fr.ok());
  EXPECT_NE(not_fr.status().message().find("entries"), std::string::npos);
}

// The bytes of torch's own C++ pickler (torch/csrc/jit/serialization/pickler.cpp, through which
// ProcessGroupNCCL's dump goes, type tags off), which differ from CPython's: protocol 2, every
// dict EMPTY_DICT MARK ... SETITEMS and every list EMPTY_LIST MARK ... APPENDS even when empty,
// every new string BINUNICODE then BINPUT (LONG_BINPUT from memo 256 on) and a repeated one
// BINGET/LONG_BINGET, ints the smallest of BININT1, BININT2, BININT or an 8-byte LONG1, pairs
// TUPLE2, floats big-endian BINFLOAT. Written here from that description, not from torch's code.
class JitStylePickler {
 public:
  JitStylePickler() : out_("\x80\x02") {}
  void Str(const std::string& s) {
    if (const auto it = memo_.find(s); it != memo_.end()) return Get(it->second);
    out_ += 'X';
    Le(s.size(), 4);
    out_ += s;
    memo_[s] = Put();
  }
  void Int(int64_t n) {
    if (n >= 0 && n <= 0xff) {
      out_ += 'K';
      Le(static_cast<uint64_t>(n), 1);
    } else if (n >= 0 && n <= 0xffff) {
      out_ += 'M';
      Le(static_cast<uint64_t>(n), 2);
    } else if (n >= INT32_MIN && n <= INT32_MAX) {
      out_ += 'J';
      Le(static_cast<uint32_t>(static_cast<int32_t>(n)), 4);
    } else {
      out_ += "\x8a\x08";
      Le(static_cast<uint64_t>(n), 8);
    }
  }
  void Bool(bool b) { out_ += b ? '\x88' : '\x89'; }
  void None() { out_ += 'N'; }
  void Float(double d) {
    out_ += 'G';
    uint64_t bits = 0;
    std::memcpy(&bits, &d, sizeof bits);
    for (int i = 7; i >= 0; --i) out_ += static_cast<char>((bits >> (8 * i)) & 0xff);
  }
  void BeginDict() { out_ += "}("; }
  void EndDict() { out_ += 'u'; }
  void BeginList() { out_ += "]("; }
  void EndList() { out_ += 'e'; }
  void Tuple2() { out_ += '\x86'; }
  void Key(const std::string& k) { Str(k); }
  std::string Finish() const { return out_ + '.'; }

 private:
  void Le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_ += static_cast<char>((v >> (8 * i)) & 0xff);
  }
  uint32_t Put() {
    const uint32_t id = next_memo_++;
    if (id <= 0xff) {
      out_ += 'q';
      Le(id, 1);
    } else {
      out_ += 'r';
      Le(id, 4);
    }
    return id;
  }
  void Get(uint32_t id) {
    out_ += id <= 0xff ? 'h' : 'j';
    Le(id, id <= 0xff ? 1 : 4);
  }
  std::string out_;
  std::map<std::string, uint32_t> memo_;
  uint32_t next_memo_ = 0;
};

// One rank's dump as ProcessGroupNCCL writes it: `last` collectives on process group 0, the last
// one started (the hang) unless `behind`, where the newest is #last completed.
std::string JitStyleDump(int64_t last, bool behind) {
  JitStylePickler p;
  p.BeginDict();
  p.Key("version");
  p.Str("2.10");
  p.Key("comm_lib_version");
  p.Str("2.26.2");
  p.Key("pg_config");
  p.BeginDict();
  p.Key("0");
  p.BeginDict();
  p.Key("name");
  p.Str("0");
  p.Key("desc");
  p.Str("default_pg");
  p.Key("ranks");
  p.Str("[0, 1]");
  p.EndDict();
  p.EndDict();
  p.Key("pg_status");
  p.BeginDict();
  p.Key("0");
  p.BeginDict();
  p.Key("last_enqueued_collective");
  p.Int(last);
  p.Key("last_started_collective");
  p.Int(last);
  p.Key("last_completed_collective");
  p.Int(behind ? last : last - 1);
  p.EndDict();
  p.EndDict();
  p.Key("entries");
  p.BeginList();
  for (int64_t seq = 1; seq <= last; ++seq) {
    const bool hung = seq == last && !behind;
    p.BeginDict();
    p.Key("record_id");
    p.Int(seq - 1);
    p.Key("pg_id");
    p.Int(0);
    p.Key("process_group");
    p.Str("0");
    p.Str("default_pg");
    p.Tuple2();
    p.Key("collective_seq_id");
    p.Int(seq);
    p.Key("p2p_seq_id");
    p.Int(0);
    p.Key("op_id");
    p.Int(seq);
    p.Key("profiling_name");
    p.Str("nccl:all_reduce");
    p.Key("time_created_ns");
    p.Int(1764634500000000000LL + seq * 1000);
    p.Key("input_sizes");
    p.BeginList();
    p.BeginList();
    p.Int(1024);
    p.Int(70000);
    p.EndList();
    p.EndList();
    p.Key("output_dtypes");
    p.BeginList();  // empty: still MARK ... APPENDS
    p.EndList();
    p.Key("state");
    p.Str(hung ? "started" : "completed");
    p.Key("time_discovered_completed_ns");
    if (hung) {
      p.None();
    } else {
      p.Int(1764634500000000000LL + seq * 1000 + 900);
    }
    p.Key("retired");
    p.Bool(!hung);
    p.Key("is_p2p");
    p.Bool(false);
    p.Key("duration_ms");
    p.Float(0.25);
    // A new string per entry, used twice: memo ids pass 255 (LONG_BINPUT, LONG_BINGET).
    p.Key("thread_id");
    p.Str("1400000" + std::to_string(seq));
    p.Key("thread_name");
    p.Str("1400000" + std::to_string(seq));
    p.Key("extra");
    p.BeginDict();  // empty: still MARK ... SETITEMS
    p.EndDict();
    p.Key("frames");
    p.BeginList();
    p.BeginDict();
    p.Key("name");
    p.Str("all_reduce");
    p.Key("filename");
    p.Str("/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py");
    p.Key("line");
    p.Int(2501);
    p.EndDict();
    p.BeginDict();
    p.Key("name");
    p.Str(behind && seq == last ? "log_metrics" : "train_step");
    p.Key("filename");
    p.Str("/job/train.py");
    p.Key("line");
    p.Int(behind && seq == last ? 57 : 42);
    p.EndDict();
    p.EndList();
    p.EndDict();
  }
  p.EndList();
  p.EndDict();
  return p.Finish();
}

TEST(FlightRecorderDump, ReadsTheOpcodesOfTorchsOwnPickler) {
  const std::string rank0 = JitStyleDump(300, /*behind=*/false);
  Result<FrRankDump> d0 = ReadFrDump(rank0, 0);
  ASSERT_TRUE(d0.ok()) << d0.status().message();
  ASSERT_EQ(d0->entries.size(), 300u);
  const FrEntry& last = d0->entries.back();
  EXPECT_EQ(last.collective_seq_id, 300);
  EXPECT_EQ(last.state, "started");
  EXPECT_EQ(last.pg_desc, "default_pg");
  EXPECT_EQ(last.profiling_name, "nccl:all_reduce");
  EXPECT_EQ(last.top_user_frame, "/job/train.py:42 in train_step");
  EXPECT_EQ(d0->pg_status["0"]["last_started_collective"], 300);
  EXPECT_EQ(d0->pg_status["0"]["last_completed_collective"], 299);

  // Values read back whole: an 8-byte LONG1, a LONG_BINGET past memo 255, empty containers.
  Result<PickleDoc> doc = ParsePickle(rank0);
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  const PickleValue* entries = doc->Get(doc->root(), "entries");
  ASSERT_NE(entries, nullptr);
  const PickleValue& e = doc->at(entries->items.back());
  EXPECT_EQ(doc->GetInt(e, "time_created_ns"), 1764634500000000000LL + 300 * 1000);
  EXPECT_EQ(doc->GetStr(e, "thread_name"), "1400000300");
  EXPECT_TRUE(doc->Get(e, "output_dtypes")->items.empty());
  EXPECT_TRUE(doc->Get(e, "extra")->pairs.empty());

  // Two ranks, rank 1 a collective behind: named, with its own frame.
  Result<FrRankDump> d1 = ReadFrDump(JitStyleDump(299, /*behind=*/true), 1);
  ASSERT_TRUE(d1.ok()) << d1.status().message();
  const FrAnalysis a = AnalyzeFlightRecorder({*d0, *d1});
  ASSERT_EQ(a.laggards.size(), 1u);
  EXPECT_EQ(a.laggards[0].rank, 1);
  EXPECT_EQ(a.laggards[0].top_user_frame, "/job/train.py:57 in log_metrics");
}

}  // namespace
}  // namespace ww::evidence
