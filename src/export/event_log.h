// EventLog: `--events FILE.jsonl`, one JSON object per line for every state change and hang event,
// appended and fsync'd per event so a crash or power loss right after a hang alert keeps it.
// Ownership: owns the file descriptor. Thread-safety: Append may be called from any thread.
#pragma once

#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"

namespace ww::exporter {

class EventLog {
 public:
  // Opens (creates, appends to) the file; kIoError names the path and the reason.
  static Result<std::unique_ptr<EventLog>> Open(const std::string& path);
  ~EventLog();
  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;

  // Writes one line and fsyncs it. A failed write is reported once per failure streak in the
  // returned Status; the watcher carries on (an events file on a full disk must not stop it).
  Status Append(const nlohmann::json& event);
  const std::string& path() const { return path_; }

 private:
  EventLog(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_;
  std::mutex mu_;
};

}  // namespace ww::exporter
