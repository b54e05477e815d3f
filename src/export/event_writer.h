// EventWriter: writes `--events` lines off the caller's thread. EventLog::Append fsyncs, which
// costs milliseconds on a busy disk, and the watcher's sampling schedule must not slip for it; so
// Push only queues, and one writer thread appends in order.
//
// Ownership: owns the EventLog and the writer thread. Thread-safety: Push from any thread; the
// destructor writes everything already pushed, then joins.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "export/event_log.h"

namespace ww::exporter {

class EventWriter {
 public:
  explicit EventWriter(std::unique_ptr<EventLog> log);
  ~EventWriter();
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  // Queues one event. A failed write is logged once per failure streak (a full disk must not stop
  // the watcher, nor flood its log).
  void Push(nlohmann::json event);

 private:
  void Loop();

  std::unique_ptr<EventLog> log_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<nlohmann::json> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace ww::exporter
