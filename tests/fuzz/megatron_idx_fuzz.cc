// Fuzzes the Megatron .idx reader: the input is the .idx; the .bin is zeros, sized by the
// input's first byte so both "sizes match" and "sizes differ" paths run.
#include <cstdint>
#include <string>
#include <vector>

#include "core/env.h"
#include "dataset/sample_length_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ww::MemEnv env;
  const std::string idx(reinterpret_cast<const char*>(data), size);
  env.AddFile("f.idx", idx);
  env.AddFile("f.bin", std::string(size > 0 ? data[0] * 2u : 0u, '\0'));
  ww::dataset::ReaderOptions options;
  options.chunk_samples = 7;
  auto reader = ww::dataset::OpenMegatronReader(&env, "f", options);
  if (!reader.ok()) return 0;
  std::vector<uint32_t> lengths;
  (void)ww::dataset::ReadAllLengths(reader->get(), &lengths);
  return 0;
}
