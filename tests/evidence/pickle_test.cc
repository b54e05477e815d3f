// The Flight Recorder pickle reader against pickles CPython itself writes, and against input
// that must be refused: code-importing opcodes, truncation at every byte, huge lengths.
#include "evidence/pickle.h"

#include <gtest/gtest.h>

#include <string>

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

}  // namespace
}  // namespace ww::evidence
