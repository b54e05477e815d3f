// Fuzzes the dataset readers with SampleExtent recording on (what `wattwatch iobench` reads) and
// checks the invariants iobench relies on: one extent per length, every extent inside its file.
// Input: byte 0 picks the format (0 megatron, 1 npy, 2 jsonl, 3 arrow); for two-file formats
// bytes 1-2 (little-endian) split the rest into the first and second file.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/env.h"
#include "dataset/sample_length_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ww::dataset;
  if (size < 3) return 0;
  const std::string rest(reinterpret_cast<const char*>(data) + 3, size - 3);
  const size_t split = std::min<size_t>(rest.size(), data[1] | (size_t{data[2]} << 8));
  ww::MemEnv env;
  DataFormat format;
  std::string path;
  switch (data[0] % 4) {
    case 0:
      format = DataFormat::kMegatron;
      env.AddFile("m.idx", rest.substr(0, split));
      env.AddFile("m.bin", rest.substr(split));
      path = "m";
      break;
    case 1:
      format = DataFormat::kNpy;
      if (data[0] & 4) {
        env.AddFile("p.offsets.npy", rest.substr(0, split));
        env.AddFile("p.tokens.npy", rest.substr(split));
        path = "p";
      } else {
        env.AddFile("x.npy", rest);
        path = "x.npy";
      }
      break;
    case 2:
      format = DataFormat::kJsonl;
      env.AddFile("j.jsonl", rest);
      path = "j.jsonl";
      break;
    default:
      format = DataFormat::kArrow;
      env.AddFile("a.arrow", rest);
      path = "a.arrow";
      break;
  }
  ReaderOptions options;
  options.chunk_samples = 3;
  options.max_line_bytes = 1 << 16;
  auto reader = OpenSampleLengthReader(&env, format, path, options);
  if (!reader.ok()) return 0;
  std::vector<uint32_t> lengths;
  std::vector<SampleExtent> extents;
  (*reader)->set_extent_sink(&extents);
  if (!ReadAllLengths(reader->get(), &lengths).ok()) return 0;
  if (!extents.empty() && extents.size() != lengths.size()) std::abort();
  const auto& files = (*reader)->files();
  for (const SampleExtent& e : extents) {
    if (e.file_index >= files.size()) std::abort();
    const uint64_t file_size = files[e.file_index].second;
    if (e.offset > file_size || e.bytes > file_size - e.offset) std::abort();
  }
  return 0;
}
