// Fuzzes the job spec parser (YAML in, JobSpec or a message naming the key out).
#include <cstdint>
#include <string>

#include "gate/job_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto spec = ww::gate::ParseJobSpec(text, "fuzz/job.yaml");
  if (spec.ok()) (void)spec->World();
  (void)ww::gate::EstimateParamsFromConfig(text);
  return 0;
}
