// Scripts the fake libnvidia-ml.so.1 (tests/fake_nvml) for tests that open NVML through the
// production dlopen path: the same path dlopen'd here returns the object NvmlLib opens, so a reset
// here makes its next nvmlInit load the new script. Never dlclosed: a detached NVML worker may
// still be inside the library when a test ends.
#pragma once

#include <dlfcn.h>
#include <stdlib.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace ww::testing {

// A control entry point of the fake (found with dlsym); throws when the fake lacks it.
template <typename Fn>
Fn* FakeNvmlControl(const char* name) {
  static void* handle = dlopen(FAKE_NVML_LIB, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) throw std::runtime_error(std::string("dlopen fake NVML: ") + dlerror());
  auto* fn = reinterpret_cast<Fn*>(dlsym(handle, name));
  if (fn == nullptr) throw std::runtime_error(std::string(name) + " missing from the fake NVML");
  return fn;
}

// Loads `script` at the next nvmlInit; the fake's time runs on the steady clock until
// SetFakeNvmlTimeMs is called.
inline void ScriptFakeNvml(const std::string& script) {
  FakeNvmlControl<void()>("fakeNvmlReset")();
  setenv("FAKE_NVML_SCRIPT_TEXT", script.c_str(), 1);
  unsetenv("FAKE_NVML_SCRIPT");
}

// Switches the fake to manual time: script time is `ms` until the next call.
inline void SetFakeNvmlTimeMs(int64_t ms) {
  FakeNvmlControl<void(long long)>("fakeNvmlSetTimeMs")(ms);
}

}  // namespace ww::testing
