// Fuzzes the Flight Recorder pickle reader and the dump reading above it: any bytes must give a
// value or a clear error, within the caps (small here so the fuzzer reaches them), and rendering
// a parsed value (memo references, self-containing lists) must stay bounded.
#include <cstdint>
#include <string_view>

#include "evidence/flight_recorder.h"
#include "evidence/pickle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  ww::evidence::PickleLimits limits;
  limits.max_string_bytes = 1 << 16;
  limits.max_values = 1 << 16;
  limits.max_stack = 1 << 12;
  limits.max_memo = 1 << 12;
  auto doc = ww::evidence::ParsePickle(bytes, limits);
  if (doc.ok()) {
    (void)doc->ToJson(doc->root(), 8, 10000);
  } else if (doc.status().message().empty()) {
    __builtin_trap();  // every refusal must say why
  }
  auto dump = ww::evidence::ReadFrDump(bytes, 0);
  if (dump.ok()) {
    std::vector<ww::evidence::FrRankDump> dumps = {*dump, *dump};
    dumps[1].rank = 1;
    (void)ww::evidence::AnalyzeFlightRecorder(dumps);
  }
  return 0;
}
