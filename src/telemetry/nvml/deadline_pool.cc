#include "telemetry/nvml/deadline_pool.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>

namespace ww::nvml {

struct DeadlinePool::Shared {
  struct Slot {
    std::shared_ptr<Job> job;
    uint64_t queued = 0;     // round the slot was last queued in
    uint64_t completed = 0;  // last round whose run of this job returned
    bool busy = false;       // queued or running, not yet returned
  };

  std::mutex mu;
  std::condition_variable done;  // the owner waits here for a round's jobs
  std::condition_variable work;  // idle pool threads wait here for jobs
  bool stop = false;
  uint64_t round = 0;
  std::vector<Slot> slots;
  std::deque<size_t> queue;  // slots to run this round, in order
  std::vector<bool> in_job;  // per pool thread: inside a job (maybe stuck)
};

namespace {

// A pool thread: takes slots off the round's queue until it is empty, then tells the owner. One
// thread usually runs every job of a round; the owner wakes another only when the queue stalls.
void PoolLoop(const std::shared_ptr<DeadlinePool::Shared>& shared, size_t self) {
  DeadlinePool::Shared& s = *shared;
  std::unique_lock<std::mutex> lock(s.mu);
  for (;;) {
    s.work.wait(lock, [&] { return s.stop || !s.queue.empty(); });
    if (s.stop) return;
    while (!s.queue.empty() && !s.stop) {
      const size_t slot = s.queue.front();
      s.queue.pop_front();
      const uint64_t round = s.slots[slot].queued;
      DeadlinePool::Job* job = s.slots[slot].job.get();  // kept alive by `shared`
      s.in_job[self] = true;
      lock.unlock();
      job->Run();
      lock.lock();
      s.in_job[self] = false;
      // A job that returns after its round's deadline completes the round it was queued in; the
      // slot was not queued again while busy.
      s.slots[slot].completed = round;
      s.slots[slot].busy = false;
    }
    s.done.notify_all();
  }
}

}  // namespace

DeadlinePool::DeadlinePool(std::vector<std::shared_ptr<Job>> jobs)
    : shared_(std::make_shared<Shared>()) {
  shared_->slots.resize(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) shared_->slots[i].job = std::move(jobs[i]);
  shared_->in_job.assign(shared_->slots.size(), false);
  threads_.reserve(shared_->slots.size());
  for (size_t t = 0; t < shared_->slots.size(); ++t) {
    threads_.emplace_back([shared = shared_, t] { PoolLoop(shared, t); });
  }
}

DeadlinePool::~DeadlinePool() {
  std::vector<bool> stuck;
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    shared_->stop = true;
    stuck = shared_->in_job;
    shared_->work.notify_all();
  }
  for (size_t i = 0; i < threads_.size(); ++i) {
    // A thread blocked inside a job cannot be joined without hanging; it owns what it uses.
    if (stuck[i]) {
      threads_[i].detach();
    } else {
      threads_[i].join();
    }
  }
}

void DeadlinePool::RunRound(std::chrono::nanoseconds deadline, std::vector<Outcome>* outcomes) {
  Shared& s = *shared_;
  const size_t n = s.slots.size();
  outcomes->assign(n, Outcome::kStillBusy);
  if (n == 0) return;
  deadline = std::max(deadline, std::chrono::nanoseconds(1));
  std::unique_lock<std::mutex> lock(s.mu);
  const uint64_t round = ++s.round;
  for (size_t i = 0; i < n; ++i) {
    if (s.slots[i].busy) continue;
    s.slots[i].busy = true;
    s.slots[i].queued = round;
    s.queue.push_back(i);
    (*outcomes)[i] = Outcome::kMissedDeadline;  // until it returns
  }
  const auto dispatched = [&](size_t i) { return (*outcomes)[i] != Outcome::kStillBusy; };
  if (!s.queue.empty()) {
    s.work.notify_one();
    const auto start = std::chrono::steady_clock::now();
    const auto until_deadline = start + deadline;
    // A queue that has not moved for this long sits behind a slow or stuck job: another thread
    // takes the rest, so one stuck slot costs the others at most this much.
    const auto stall =
        std::max<std::chrono::nanoseconds>(std::chrono::milliseconds(1), deadline / 20);
    const auto all_done = [&] {
      for (size_t i = 0; i < n; ++i) {
        if (dispatched(i) && s.slots[i].completed != round) return false;
      }
      return true;
    };
    size_t queued = s.queue.size();
    auto moved_at = start;
    for (;;) {
      const auto t = std::chrono::steady_clock::now();
      if (s.queue.size() != queued) {
        queued = s.queue.size();
        moved_at = t;
      }
      if (queued > 0 && t - moved_at >= stall) {
        s.work.notify_one();
        moved_at = t;
      }
      const auto until = queued > 0 ? std::min(until_deadline, moved_at + stall) : until_deadline;
      if (s.done.wait_until(lock, until, all_done)) break;
      if (std::chrono::steady_clock::now() >= until_deadline) break;
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (dispatched(i) && s.slots[i].completed == round) (*outcomes)[i] = Outcome::kDone;
  }
}

}  // namespace ww::nvml
