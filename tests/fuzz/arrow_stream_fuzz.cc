// Fuzzes the Arrow IPC stream reader (FlatBuffers metadata walk, buffer bounds, offsets).
#include <cstdint>
#include <string>
#include <vector>

#include "gate/env.h"
#include "gate/readers/sample_length_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ww::gate::MemGateEnv env;
  env.AddFile("f.arrow", std::string(reinterpret_cast<const char*>(data), size));
  ww::gate::ReaderOptions options;
  options.chunk_samples = 6;
  options.token_sample_bytes = 256;
  auto reader = ww::gate::OpenArrowReader(&env, "f.arrow", options);
  if (!reader.ok()) return 0;
  std::vector<uint32_t> lengths;
  (void)ww::gate::ReadAllLengths(reader->get(), &lengths);
  return 0;
}
