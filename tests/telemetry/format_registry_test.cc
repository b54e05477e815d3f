// The format registry (src/telemetry/ingest/formats.cc): every list of formats is made from its
// rows, so these tests check the rows themselves and the one list written by hand, the docs'.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "support/support.h"
#include "telemetry/ingest/format.h"
#include "telemetry/ingest/open.h"

namespace ww::format_registry {
namespace {

using ::testing::HasSubstr;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(FormatRegistry, DocsListEveryFormatInRegistryOrder) {
  std::string list = "auto";
  for (const ingest::Format* f : ingest::Formats()) list += std::string("|") + f->name;
  const std::string docs = ReadAll(testing::SourceDir() + "/docs/triage.md");
  ASSERT_FALSE(docs.empty());
  EXPECT_THAT(docs, HasSubstr("`--format " + list + "`"))
      << "docs/triage.md's --format list drifted from src/telemetry/ingest/formats.cc";
}

TEST(FormatRegistry, NamesParseBackAndAreUnique) {
  std::set<std::string> names;
  for (const ingest::Format* f : ingest::Formats()) {
    EXPECT_TRUE(names.insert(f->name).second) << f->name;
    auto parsed = ParseInputFormat(f->name);
    ASSERT_TRUE(parsed.ok()) << f->name;
    EXPECT_EQ(*parsed, f);
    EXPECT_STREQ(InputFormatName(f), f->name);
    EXPECT_THAT(InputFormatNames(), HasSubstr(f->name));
    EXPECT_THAT(InputFormatHelp(), HasSubstr(f->what));
    EXPECT_NE(f->open, nullptr) << f->name;
  }
  auto automatic = ParseInputFormat("auto");
  ASSERT_TRUE(automatic.ok());
  EXPECT_EQ(*automatic, nullptr);
  EXPECT_STREQ(InputFormatName(nullptr), "auto");
  auto unknown = ParseInputFormat("csvish");
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.status().message(), HasSubstr(InputFormatNames()));
}

// Detection asks the rules of all formats in one priority order: two equal priorities would
// leave the order to the registry's row order.
TEST(FormatRegistry, DetectionPrioritiesAreUniqueAndOnePathReader) {
  std::set<int> priorities;
  int path_readers = 0;
  for (const ingest::Format* f : ingest::Formats()) {
    path_readers += f->opens_path;
    EXPECT_FALSE(f->detect.empty()) << f->name << " is never recognized";
    for (const ingest::DetectRule& r : f->detect) {
      EXPECT_TRUE(priorities.insert(r.priority).second)
          << f->name << ": priority " << r.priority << " taken twice";
    }
  }
  EXPECT_EQ(path_readers, 1);  // binary and unreadable files go to exactly one reader
}

}  // namespace
}  // namespace ww::format_registry
