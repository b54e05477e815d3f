// Reader throughput: each SampleLengthReader over a generated corpus on disk, against the
// reference of reading the same number of bytes with plain sequential pread (so the ratio is
// the parser's cost over raw I/O from the page cache). Counters: bytes_per_second (MB/s of
// bytes the reader read), samples_per_second.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/env.h"
#include "dataset/corpus_writers.h"
#include "dataset/sample_length_reader.h"

namespace {

using namespace ww::dataset;
using namespace ww::dataset::testing;

// The corpora live for the process; the directory goes at exit.
struct BenchDir {
  BenchDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "ww_gate_bench_XXXXXX").string();
    path = mkdtemp(tmpl.data());
  }
  ~BenchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return path + "/" + name; }
  std::string path;
};

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

struct Corpora {
  BenchDir dir;
  Corpora() {
    std::vector<uint32_t> lengths(200000);
    for (size_t i = 0; i < lengths.size(); ++i)
      lengths[i] = 20 + static_cast<uint32_t>((i * 2654435761u) % 60);
    WriteMegatron(dir / "m", lengths, 8);
    std::vector<int64_t> lens(1000000);
    for (size_t i = 0; i < lens.size(); ++i)
      lens[i] = 20 + static_cast<int64_t>((i * 2654435761u) % 4000);
    WriteFile(dir / "lengths.npy", NpyBytes<int64_t>("<i8", {lens.size()}, lens));
    WriteFile(dir / "c.jsonl",
              JsonlBytes(std::vector<uint32_t>(lengths.begin(), lengths.begin() + 20000), 151936));
    std::vector<std::vector<uint32_t>> batches(20);
    for (size_t i = 0; i < lengths.size(); ++i) batches[i % 20].push_back(lengths[i]);
    WriteFile(dir / "c.arrow", ArrowStreamBytes(batches));
  }
};

Corpora& Files() {
  static Corpora* c = new Corpora();
  return *c;
}

void BM_Reader(benchmark::State& state, DataFormat format, const char* name) {
  const std::string path = Files().dir / name;
  uint64_t bytes = 0, samples = 0;
  std::vector<uint32_t> lengths;
  for (auto _ : state) {
    auto reader = OpenSampleLengthReader(ww::DefaultEnv(), format, path, ReaderOptions{});
    if (!reader.ok()) {
      state.SkipWithError(reader.status().message().c_str());
      return;
    }
    lengths.clear();
    (void)ReadAllLengths(reader->get(), &lengths);
    bytes += (*reader)->bytes_read();
    samples += lengths.size();
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.counters["samples_per_second"] =
      benchmark::Counter(static_cast<double>(samples), benchmark::Counter::kIsRate);
}

// Reference: sequential 4 MiB preads of the first `bytes` of the file the reader reads most.
void BM_RawRead(benchmark::State& state, const char* name) {
  const std::string path = Files().dir / name;
  std::vector<char> buf(4 << 20);
  uint64_t total = 0;
  for (auto _ : state) {
    int fd = ::open(path.c_str(), O_RDONLY);
    off_t off = 0;
    ssize_t got;
    while ((got = ::pread(fd, buf.data(), buf.size(), off)) > 0) off += got;
    ::close(fd);
    total += static_cast<uint64_t>(off);
  }
  state.SetBytesProcessed(static_cast<int64_t>(total));
}

BENCHMARK_CAPTURE(BM_Reader, megatron, DataFormat::kMegatron, "m")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_RawRead, megatron_idx, "m.idx")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Reader, npy_lengths, DataFormat::kNpy, "lengths.npy")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_RawRead, npy_lengths, "lengths.npy")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Reader, jsonl, DataFormat::kJsonl, "c.jsonl")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_RawRead, jsonl, "c.jsonl")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Reader, arrow, DataFormat::kArrow, "c.arrow")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_RawRead, arrow, "c.arrow")->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
