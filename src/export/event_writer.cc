#include "export/event_writer.h"

#include <spdlog/spdlog.h>

namespace ww::exporter {

EventWriter::EventWriter(std::unique_ptr<EventLog> log) : log_(std::move(log)) {
  thread_ = std::thread([this] { Loop(); });
}

EventWriter::~EventWriter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void EventWriter::Push(nlohmann::json event) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(event));
  }
  cv_.notify_all();
}

void EventWriter::Loop() {
  bool failing = false;
  for (;;) {
    nlohmann::json e;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and everything queued is written
      e = std::move(queue_.front());
      queue_.pop_front();
    }
    Status st = log_->Append(e);
    if (!st.ok() && !failing) spdlog::error("{}", st.message());
    failing = !st.ok();
  }
}

}  // namespace ww::exporter
