// Fuzzes the .npy reader: the input as a lengths/rows file, and as the offsets of an
// offsets/tokens pair.
#include <cstdint>
#include <string>
#include <vector>

#include "core/env.h"
#include "dataset/sample_length_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ww::MemEnv env;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  env.AddFile("f.npy", bytes);
  env.AddFile("p.offsets.npy", bytes);
  env.AddFile("p.tokens.npy", bytes);
  ww::dataset::ReaderOptions options;
  options.chunk_samples = 5;
  for (const char* path : {"f.npy", "p"}) {
    auto reader = ww::dataset::OpenNpyReader(&env, path, options);
    if (!reader.ok()) continue;
    std::vector<uint32_t> lengths;
    (void)ww::dataset::ReadAllLengths(reader->get(), &lengths);
  }
  return 0;
}
