// Test access to a fake libnvidia-ml.so.1 (tests/fake_nvml): scripts it and moves its time.
// dlopen of the same path returns the same loaded object NvmlLib opens, so both share state.
// Needs FAKE_NVML_LIB (the build's fake) defined by the test's CMakeLists.txt.
#pragma once

#include <dlfcn.h>
#include <stdlib.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "core/clock.h"

namespace ww::testing {

class FakeNvml {
 public:
  // `path`: the fake to drive (the legacy build is another library with its own state).
  explicit FakeNvml(const char* path = FAKE_NVML_LIB) {
    handle_ = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) throw std::runtime_error(std::string("dlopen fake: ") + dlerror());
    set_time_ = reinterpret_cast<void (*)(long long)>(dlsym(handle_, "fakeNvmlSetTimeMs"));
    reset_ = reinterpret_cast<void (*)()>(dlsym(handle_, "fakeNvmlReset"));
    calls_ =
        reinterpret_cast<unsigned long long (*)(const char*)>(dlsym(handle_, "fakeNvmlCallCount"));
    if (!set_time_ || !reset_ || !calls_) throw std::runtime_error("fake control symbols missing");
  }
  // Never dlclosed: a detached worker may still be inside the library when a test ends.

  // Loads `script` at the next nvmlInit, with manual time starting at 0.
  void Script(const std::string& script) {
    reset_();
    setenv("FAKE_NVML_SCRIPT_TEXT", script.c_str(), 1);
    unsetenv("FAKE_NVML_SCRIPT");
    set_time_(0);
  }
  void SetTimeMs(int64_t ms) { set_time_(ms); }
  uint64_t Calls(const char* name) { return calls_(name); }

 private:
  void* handle_ = nullptr;
  void (*set_time_)(long long) = nullptr;
  void (*reset_)() = nullptr;
  unsigned long long (*calls_)(const char*) = nullptr;
};

// Moves the fake's script time and a ManualClock together, so both agree on elapsed time.
class FakeTime {
 public:
  FakeTime(FakeNvml* fake, ManualClock* clock) : fake_(fake), clock_(clock) {}
  void To(int64_t ms) {
    clock_->AdvanceNs((ms - now_ms_) * 1'000'000);
    now_ms_ = ms;
    fake_->SetTimeMs(ms);
  }

 private:
  FakeNvml* fake_;
  ManualClock* clock_;
  int64_t now_ms_ = 0;
};

}  // namespace ww::testing
