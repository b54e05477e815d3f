// DeadlinePool: runs one job per slot on a pool of threads, once per round, and waits for the
// round with a deadline, for calls that may hang (a wedged GPU driver) and must not stall the
// caller. Nothing in it knows about NVML.
//
// RunRound() queues every slot that is not still busy from an earlier round and wakes one pool
// thread, which runs the queued jobs one after another: two thread wake-ups per round, not two per
// slot. When the queue has not moved for 1/20 of the deadline (at least 1 ms), the job at its head
// is slow or stuck and the caller wakes another thread to take the rest. The pool has one thread
// per slot, so even with every slot stuck no slot ever waits for a thread. RunRound() returns when
// every job it queued has finished, or at the deadline. A slot whose job has not returned by then
// is kMissedDeadline for that round and kStillBusy for the rounds after, without being run again
// or waited for, until its job returns; the next round then runs it as usual.
//
// Ownership: the pool shares the jobs (shared_ptr) with whoever created them. A pool thread still
// inside a job when the pool is destroyed is detached, not joined: it keeps its job, and whatever
// the job holds, alive, so process exit never waits for it and nothing is freed under it.
// Thread-safety: RunRound() and the destructor are called by one thread, the owner. Each job runs
// on at most one pool thread at a time. A job's state changes hands with the slot: from the moment
// RunRound() queues it until it returns, only its pool thread may touch it; when RunRound()
// reports kDone, the owner may read it (what the round produced) until its next RunRound(). A job
// that finished after its round's deadline is run again by the next round without the owner
// reading it in between: a job that must not lose what a late run learned carries it forward.
// Time: the deadline is real steady time, since it bounds how long a real call may take even when
// the caller runs on a manual clock.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace ww::nvml {

class DeadlinePool {
 public:
  class Job {
   public:
    virtual ~Job() = default;
    // One round's work. May block for any time; the pool never interrupts it.
    virtual void Run() = 0;
  };

  enum class Outcome : uint8_t {
    kDone,            // queued this round and returned before the deadline
    kMissedDeadline,  // queued this round and still running at the deadline
    kStillBusy,       // still running from an earlier round: not queued this round
  };

  // One slot (and one thread) per job; jobs must be non-null.
  explicit DeadlinePool(std::vector<std::shared_ptr<Job>> jobs);
  // Stops the idle threads and joins them; detaches any that is inside a job.
  ~DeadlinePool();
  DeadlinePool(const DeadlinePool&) = delete;
  DeadlinePool& operator=(const DeadlinePool&) = delete;

  size_t size() const { return threads_.size(); }

  // Runs every slot that is not still busy once and waits at most `deadline` (at least 1 ns) for
  // them. Resizes *outcomes to size() and fills it per slot.
  void RunRound(std::chrono::nanoseconds deadline, std::vector<Outcome>* outcomes);

  struct Shared;  // state the owner and every pool thread share; defined in the .cc

 private:
  std::shared_ptr<Shared> shared_;
  std::vector<std::thread> threads_;
};

// A library's boot (dlopen, init, enumeration) on a thread of its own, waited for at most
// wait_ms: true when it finished (the thread joined), false when it did not (the thread is
// detached and keeps `state` alive; a hung driver call must not hang the caller, who reports
// it). State has `mu`, `cv` and `done`, which `boot(state)` sets under `mu` and notifies.
template <typename State, typename Boot>
bool BootWithin(const std::shared_ptr<State>& state, int64_t wait_ms, Boot boot) {
  std::thread thread([state, boot = std::move(boot)] { boot(state); });
  std::unique_lock<std::mutex> lock(state->mu);
  if (!state->cv.wait_for(lock, std::chrono::milliseconds(std::max<int64_t>(1, wait_ms)),
                          [&] { return state->done; })) {
    lock.unlock();
    thread.detach();
    return false;
  }
  lock.unlock();
  thread.join();
  return true;
}

}  // namespace ww::nvml
