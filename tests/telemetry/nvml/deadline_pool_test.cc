// DeadlinePool on its own, with jobs that finish, block on a gate the test opens, or never return
// while the pool lives. Real steady time (the pool's deadline is real time), with bounds loose
// enough for a loaded machine: they tell "waited the deadline" from "waited for the stuck job".
#include "telemetry/nvml/deadline_pool.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace ww::nvml {
namespace {

using ::testing::Each;
using ::testing::ElementsAre;
using Outcome = DeadlinePool::Outcome;
using namespace std::chrono_literals;

// A latch the test opens; jobs wait on it.
class Gate {
 public:
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

// Counts its runs; blocks on `gate` when it has one, until the test opens it.
class CountingJob final : public DeadlinePool::Job {
 public:
  explicit CountingJob(std::shared_ptr<Gate> gate = nullptr) : gate_(std::move(gate)) {}
  void Run() override {
    entered.fetch_add(1);
    if (gate_) gate_->Wait();
    returned.fetch_add(1);
  }
  std::atomic<int> entered{0};
  std::atomic<int> returned{0};

 private:
  std::shared_ptr<Gate> gate_;
};

std::vector<std::shared_ptr<DeadlinePool::Job>> AsJobs(
    const std::vector<std::shared_ptr<CountingJob>>& jobs) {
  return {jobs.begin(), jobs.end()};
}

// Waits (at most 5 s) until `done` holds.
template <typename Pred>
bool Eventually(Pred done) {
  const auto until = std::chrono::steady_clock::now() + 5s;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

TEST(DeadlinePoolTest, JobsThatFinishInTimeAreDoneOncePerRound) {
  std::vector<std::shared_ptr<CountingJob>> jobs;
  for (int i = 0; i < 3; ++i) jobs.push_back(std::make_shared<CountingJob>());
  DeadlinePool pool(AsJobs(jobs));
  EXPECT_EQ(pool.size(), 3u);
  std::vector<Outcome> out;
  for (int round = 1; round <= 3; ++round) {
    pool.RunRound(2s, &out);
    EXPECT_THAT(out, Each(Outcome::kDone)) << "round " << round;
    for (const auto& j : jobs) EXPECT_EQ(j->returned.load(), round);
  }
}

TEST(DeadlinePoolTest, BlockedJobIsStaleForItsRoundAndNotWaitedForAfterwards) {
  auto gate = std::make_shared<Gate>();
  std::vector<std::shared_ptr<CountingJob>> jobs = {std::make_shared<CountingJob>(gate)};
  for (int i = 0; i < 3; ++i) jobs.push_back(std::make_shared<CountingJob>());
  DeadlinePool pool(AsJobs(jobs));
  std::vector<Outcome> out;

  // Slot 0 blocks at the head of the queue: the others are taken by another thread and finish
  // in the same round; slot 0 missed the deadline, and the round ended at the deadline.
  auto t0 = std::chrono::steady_clock::now();
  pool.RunRound(200ms, &out);
  auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_THAT(
      out, ElementsAre(Outcome::kMissedDeadline, Outcome::kDone, Outcome::kDone, Outcome::kDone));
  EXPECT_GE(waited, 200ms);
  EXPECT_LT(waited, 3s);

  // Still stuck: not queued again, and the round does not wait for it (a 10 s deadline).
  t0 = std::chrono::steady_clock::now();
  pool.RunRound(10s, &out);
  waited = std::chrono::steady_clock::now() - t0;
  EXPECT_THAT(out,
              ElementsAre(Outcome::kStillBusy, Outcome::kDone, Outcome::kDone, Outcome::kDone));
  EXPECT_LT(waited, 5s);
  EXPECT_EQ(jobs[0]->entered.load(), 1);

  // Once it returns, the next round runs it again as usual.
  gate->Open();
  ASSERT_TRUE(Eventually([&] { return jobs[0]->returned.load() == 1; }));
  pool.RunRound(2s, &out);
  EXPECT_THAT(out, Each(Outcome::kDone));
  EXPECT_EQ(jobs[0]->returned.load(), 2);
  EXPECT_EQ(jobs[1]->returned.load(), 3);
}

TEST(DeadlinePoolTest, EverySlotStuckStillGetsAThreadEach) {
  constexpr int kSlots = 4;
  std::vector<std::shared_ptr<Gate>> gates;
  std::vector<std::shared_ptr<CountingJob>> jobs;
  for (int i = 0; i < kSlots; ++i) {
    gates.push_back(std::make_shared<Gate>());
    jobs.push_back(std::make_shared<CountingJob>(gates.back()));
  }
  DeadlinePool pool(AsJobs(jobs));
  std::vector<Outcome> out;
  pool.RunRound(400ms, &out);
  EXPECT_THAT(out, Each(Outcome::kMissedDeadline));
  // Each stuck job holds a thread, and the stall wake-ups reached every slot: all four are
  // inside Run() at once, none waiting in the queue behind another.
  ASSERT_TRUE(Eventually([&] {
    for (const auto& j : jobs) {
      if (j->entered.load() != 1) return false;
    }
    return true;
  }));
  pool.RunRound(400ms, &out);
  EXPECT_THAT(out, Each(Outcome::kStillBusy));

  // Released in reverse order, each returns on its own thread.
  for (int i = kSlots - 1; i >= 0; --i) gates[i]->Open();
  ASSERT_TRUE(Eventually([&] {
    for (const auto& j : jobs) {
      if (j->returned.load() != 1) return false;
    }
    return true;
  }));
  pool.RunRound(2s, &out);
  EXPECT_THAT(out, Each(Outcome::kDone));
}

TEST(DeadlinePoolTest, ShutdownDoesNotWaitForAStuckJobAndFreesItWhenItReturns) {
  auto gate = std::make_shared<Gate>();  // opened only after the pool is gone
  auto stuck = std::make_shared<CountingJob>(gate);
  auto fine = std::make_shared<CountingJob>();
  std::weak_ptr<CountingJob> stuck_alive = stuck;
  auto pool = std::make_unique<DeadlinePool>(
      std::vector<std::shared_ptr<DeadlinePool::Job>>{std::move(stuck), fine});
  std::vector<Outcome> out;
  pool->RunRound(100ms, &out);
  EXPECT_THAT(out, ElementsAre(Outcome::kMissedDeadline, Outcome::kDone));

  const auto t0 = std::chrono::steady_clock::now();
  pool.reset();  // joins the idle thread, detaches the one inside the stuck job
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
  EXPECT_EQ(fine->returned.load(), 1);

  // The detached thread owns the job (and the pool's shared state) until the job returns; then
  // it exits and lets them go, touching nothing the pool freed (ASan checks).
  EXPECT_FALSE(stuck_alive.expired());
  gate->Open();
  EXPECT_TRUE(Eventually([&] { return stuck_alive.expired(); }));
}

TEST(DeadlinePoolTest, EmptyPoolRoundIsANoOp) {
  DeadlinePool pool({});
  std::vector<Outcome> out = {Outcome::kDone};
  pool.RunRound(1s, &out);
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace ww::nvml
