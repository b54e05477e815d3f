// LabelsCsvWriter: the rows it writes, and that a released writer never touches its file again
// (the triage pipeline closes the file after a pass; the writer outlives it).
#include "report/labels_writer.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace ww::report {
namespace {

std::string ReadAll(std::FILE* f) {
  std::rewind(f);
  std::string out;
  char buf[256];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  return out;
}

TEST(LabelsCsvWriter, ReleasedWriterWritesNothingMoreNotEvenOnDestruction) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    LabelsCsvWriter w(f, {"node0"}, false);
    w.OnLabel({1763465360000, GpuKey{0, 3}, GpuState::kCompute});
    w.Release();
    // After Release the caller may close the file; these must not reach it.
    w.OnLabel({1763465361000, GpuKey{0, 3}, GpuState::kIdle});
    w.Flush();
  }
  const std::string text = ReadAll(f);
  std::fclose(f);
  EXPECT_NE(text.find("node0,"), std::string::npos) << text;
  EXPECT_NE(text.find(",3,compute"), std::string::npos) << text;
  EXPECT_EQ(text.find("idle"), std::string::npos) << text;
}

}  // namespace
}  // namespace ww::report
