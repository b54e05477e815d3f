// Fuzzes the Arrow IPC stream reader (FlatBuffers metadata walk, buffer bounds, offsets).
#include <cstdint>
#include <string>
#include <vector>

#include "core/env.h"
#include "dataset/sample_length_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ww::MemEnv env;
  env.AddFile("f.arrow", std::string(reinterpret_cast<const char*>(data), size));
  ww::dataset::ReaderOptions options;
  options.chunk_samples = 6;
  options.token_sample_bytes = 256;
  auto reader = ww::dataset::OpenArrowReader(&env, "f.arrow", options);
  if (!reader.ok()) return 0;
  std::vector<uint32_t> lengths;
  (void)ww::dataset::ReadAllLengths(reader->get(), &lengths);
  return 0;
}
