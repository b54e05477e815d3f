// The start-up watch and fleet share (src/watch/service_start.h): the one fresh-data rule, and a
// start without a server.
#include "watch/service_start.h"

#include <gtest/gtest.h>

#include "support/support.h"

namespace ww::watch {
namespace {

TEST(DataFresh, ThreeIntervalsPlusTenSecondsSinceTheLastRead) {
  struct Case {
    int64_t age_ms;
    int64_t interval_ms;
    bool fresh;
  };
  const Case cases[] = {
      {0, 100, true},          {10'300, 100, true},      {10'301, 100, false},
      {100'000, 30'000, true}, {100'001, 30'000, false}, {190'000, 60'000, true},
      {-5'000, 1'000, true},  // a clock stepped back: not stale
  };
  for (const Case& c : cases) {
    EXPECT_EQ(DataFresh(1'000'000, 1'000'000 - c.age_ms, c.interval_ms), c.fresh)
        << c.age_ms << " ms at " << c.interval_ms << " ms";
  }
  EXPECT_FALSE(DataFresh(1'000'000, std::nullopt, 100)) << "nothing read yet";
}

TEST(StartService, WithoutListenItOpensTheEventLogAndPublishesOnce) {
  ww::testing::TempDir dir;
  ServiceStartOptions o;
  o.events_path = dir / "events.jsonl";
  o.listen = "none";
  exporter::MetricsSnapshot snapshot;
  int published = 0;
  ServiceParts parts;
  ASSERT_TRUE(StartService(
                  o, &snapshot, [](nlohmann::json) {}, [&] { ++published; }, &parts)
                  .ok());
  EXPECT_EQ(published, 1);
  EXPECT_TRUE(parts.events != nullptr);
  EXPECT_TRUE(parts.actions != nullptr);
  EXPECT_TRUE(parts.server == nullptr);
  EXPECT_TRUE(parts.listen_address.empty());
  parts.Stop();

  o.actions.webhook_url = "ftp://x";
  ServiceParts refused;
  EXPECT_FALSE(StartService(
                   o, &snapshot, [](nlohmann::json) {}, [] {}, &refused)
                   .ok())
      << "a webhook that cannot work stops the start";
}

}  // namespace
}  // namespace ww::watch
