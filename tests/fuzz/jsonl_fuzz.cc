// Fuzzes the jsonl reader (token-id lists under "input_ids").
#include <cstdint>
#include <string>
#include <vector>

#include "core/env.h"
#include "dataset/sample_length_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ww::MemEnv env;
  env.AddFile("f.jsonl", std::string(reinterpret_cast<const char*>(data), size));
  ww::dataset::ReaderOptions options;
  options.chunk_samples = 4;
  options.max_line_bytes = 1 << 16;
  auto reader = ww::dataset::OpenJsonlReader(&env, "f.jsonl", options, /*text=*/false);
  if (!reader.ok()) return 0;
  std::vector<uint32_t> lengths;
  (void)ww::dataset::ReadAllLengths(reader->get(), &lengths);
  return 0;
}
