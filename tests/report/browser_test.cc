// The HTML report in a real browser: `wattwatch simulate` + `wattwatch triage --html` (the real
// binary), then headless Chromium loads the page from disk, takes a screenshot and dumps the DOM.
// Checked: the swimlanes drew (many pixels of the state colors, red ones for the hang), the script
// ran to its end (<body data-rendered="ok">, no data-error) and no console error was logged.
// Chromium missing: skipped locally, a failure under CI=true (the test must run in CI).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "report/png_reader.h"
#include "support/support.h"

namespace ww::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string ChromiumCommand(const std::string& dir) {
  return "timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-quic "
         "--no-first-run --disable-background-networking --disable-component-update "
         "--disable-sync --disable-extensions --force-device-scale-factor=1 "
         "--user-data-dir=" +
         dir + "/profile --enable-logging=stderr --v=0 ";
}

int CountColor(const RgbImage& img, uint8_t r, uint8_t g, uint8_t b) {
  int n = 0;
  for (int y = 0; y < img.height; ++y) {
    for (int x = 0; x < img.width; ++x) {
      const uint8_t* p = img.At(x, y);
      n += p[0] == r && p[1] == g && p[2] == b;
    }
  }
  return n;
}

TEST(BrowserTest, ChromiumDrawsTheReportWithoutScriptErrors) {
  if (RunCommand("command -v chromium > /dev/null 2>&1") != 0) {
    if (InCi()) FAIL() << "chromium is not installed (scripts/install-deps.sh)";
    GTEST_SKIP() << "chromium is not installed";
  }
  TempDir dir;
  const std::string d = dir.path(), bin = WattwatchBinary();
  ASSERT_EQ(RunCommand(bin + " simulate hang-exit --out-dir " + d + " > " + d + "/sim.txt 2>&1"), 0)
      << ReadFile(d + "/sim.txt");
  std::string logs;
  for (const auto& e : std::filesystem::directory_iterator(d)) {
    if (e.path().extension() == ".csv") logs += " " + e.path().string();
  }
  ASSERT_FALSE(logs.empty());
  ASSERT_EQ(RunCommand(bin + " triage" + logs + " --color never --html " + d + "/report.html > " +
                       d + "/triage.txt 2>&1"),
            0)
      << ReadFile(d + "/triage.txt");
  const std::string url = "file://" + d + "/report.html";

  ASSERT_EQ(RunCommand("cd " + d + " && " + ChromiumCommand(d) + "--screenshot=" + d +
                       "/shot.png --window-size=1400,900 " + url + " > " + d + "/shot.log 2>&1"),
            0)
      << ReadFile(d + "/shot.log");
  const std::string log = ReadFile(d + "/shot.log");
  EXPECT_THAT(log, Not(HasSubstr("Uncaught")));
  EXPECT_THAT(log, Not(HasSubstr("SyntaxError")));
  EXPECT_THAT(log, Not(HasSubstr(":ERROR:CONSOLE")));

  auto img = DecodePng(ReadFile(d + "/shot.png"));
  ASSERT_TRUE(img.ok()) << img.status().message();
  EXPECT_EQ(img->width, 1400);
  // Lanes: 8 GPUs x ~21 px rows over ~1100 px of time. Compute (green) before the hang, hang
  // (red) after it: both must cover a large area, which a blank or half-drawn page cannot.
  const int compute = CountColor(*img, 0x2e, 0x7d, 0x32);
  const int hang = CountColor(*img, 0xd3, 0x2f, 0x2f);
  EXPECT_GT(compute, 20000) << "compute-colored pixels";
  EXPECT_GT(hang, 20000) << "hang-colored pixels";
  // The power chart drew its min/max envelope (its own blue).
  EXPECT_GT(CountColor(*img, 0x15, 0x65, 0xc0), 300) << "power envelope pixels";

  ASSERT_EQ(RunCommand("cd " + d + " && " + ChromiumCommand(d) + "--dump-dom " + url + " > " + d +
                       "/dom.html 2> " + d + "/dom.log"),
            0)
      << ReadFile(d + "/dom.log");
  const std::string dom = ReadFile(d + "/dom.html");
  EXPECT_THAT(dom, HasSubstr("data-rendered=\"ok\""));
  EXPECT_THAT(dom, HasSubstr("data-lanes=\"8\""));
  EXPECT_THAT(dom, Not(HasSubstr("data-error=\"")));

  // Zoomed in on the start of the hang (the view a link can name): the page re-reduces finer
  // buckets for the narrower window, so the lanes now split between compute and hang.
  const std::string page = ReadFile(d + "/report.html");
  const std::string open = "<script type=\"application/json\" id=\"ww-data\">";
  const size_t a = page.find(open), b = page.find("</script>", a);
  ASSERT_NE(a, std::string::npos);
  const auto data = nlohmann::json::parse(page.substr(a + open.size(), b - a - open.size()));
  ASSERT_FALSE(data["hangs"].empty());
  const int64_t start = data["hangs"][0]["start"];
  const std::string zoom_url = url + "#from=" + std::to_string(start - 20000) +
                               "&to=" + std::to_string(start + 20000) + "&gpu=node0/GPU0";
  ASSERT_EQ(
      RunCommand("cd " + d + " && " + ChromiumCommand(d) + "--screenshot=" + d +
                 "/zoom.png --window-size=1400,900 '" + zoom_url + "' > " + d + "/zoom.log 2>&1"),
      0)
      << ReadFile(d + "/zoom.log");
  auto zoomed = DecodePng(ReadFile(d + "/zoom.png"));
  ASSERT_TRUE(zoomed.ok()) << zoomed.status().message();
  const double zc = CountColor(*zoomed, 0x2e, 0x7d, 0x32),
               zh = CountColor(*zoomed, 0xd3, 0x2f, 0x2f);
  EXPECT_GT(zc, 20000);
  EXPECT_GT(zh, 20000);
  // The whole run is mostly hang; 20 s either side of its start is about half and half.
  EXPECT_GT(static_cast<double>(hang) / compute, 1.5);
  EXPECT_GT(zh / zc, 0.5);
  EXPECT_LT(zh / zc, 2.0);
}

}  // namespace
}  // namespace ww::testing
