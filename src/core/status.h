// Errors as values at module boundaries. Exceptions never cross a module's public API:
// functions that can fail return Status or Result<T>.
// Thread-safety: plain value types; no shared state.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace ww {

enum class StatusCode {
  kOk = 0,
  kInvalidInput,  // the user's input is malformed (file, line and field in the message)
  kNotFound,      // a file, library or device that should exist does not
  kUnavailable,   // a dependency is missing or not supported here (no NVML, no GPU)
  kDeadlineExceeded,
  kIoError,
  kInternal,
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }
  static Status InvalidInput(std::string m) { return {StatusCode::kInvalidInput, std::move(m)}; }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
  static Status DeadlineExceeded(std::string m) {
    return {StatusCode::kDeadlineExceeded, std::move(m)};
  }
  static Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Result<T>: a T or a non-ok Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOkStatus;
    return ok() ? kOkStatus : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace ww

// Propagates a non-ok Status from an expression returning Status.
#define WW_RETURN_IF_ERROR(expr)             \
  do {                                       \
    ::ww::Status ww_status_ = (expr);        \
    if (!ww_status_.ok()) return ww_status_; \
  } while (0)
