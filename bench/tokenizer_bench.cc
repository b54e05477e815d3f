// Tokenizer throughput, one thread (MB/s per core), on the corpora bench/tokenizer_corpus.py
// writes. bench/tokenizer.sh runs this next to the reference implementations on the same files
// and prints the ratios; run it alone with
//   WW_TOKENIZER=tokenizer.json WW_BENCH_CORPORA=DIR build/release/tokenizer_bench
// Benchmarks: Encode/<corpus>/cold loads a fresh tokenizer per iteration (untimed) so the piece
// cache starts empty, as in a one-shot gate run; Encode/<corpus>/warm reuses one tokenizer.
// With WW_FAMILIES, also Load/<family> (the time Tokenizer::Load takes on that file) and
// EncodeFamily/<family>/{cold,warm} on that family's generated corpus.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "tokenizer/jsonl_text.h"
#include "tokenizer/tokenizer.h"

namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::vector<std::string> LoadCorpus(const std::string& name) {
  std::vector<std::string> texts;
  std::ifstream in(Env("WW_BENCH_CORPORA") + "/" + name + ".jsonl");
  for (std::string line; std::getline(in, line);) {
    auto t = ww::ExtractJsonlText(line, "text");
    if (t.ok()) texts.push_back(std::move(t).value());
  }
  return texts;
}

std::unique_ptr<ww::Tokenizer> LoadTokenizer() {
  auto t = ww::Tokenizer::Load(Env("WW_TOKENIZER"));
  if (!t.ok()) {
    std::cerr << t.status().message() << "\n";
    std::exit(2);
  }
  return std::move(t).value();
}

void EncodeCorpus(benchmark::State& state, const std::string& corpus, bool cold) {
  const auto texts = LoadCorpus(corpus);
  if (texts.empty()) {
    state.SkipWithError("empty corpus: set WW_BENCH_CORPORA");
    return;
  }
  size_t bytes = 0;
  for (const auto& t : texts) bytes += t.size();
  std::unique_ptr<ww::Tokenizer> tok = LoadTokenizer();
  size_t tokens = 0;
  for (auto _ : state) {
    if (cold) {
      state.PauseTiming();
      tok = LoadTokenizer();
      state.ResumeTiming();
    }
    tokens = 0;
    for (const auto& t : texts) tokens += tok->Encode(t).size();
    benchmark::DoNotOptimize(tokens);
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes) * state.iterations());
  state.counters["tokens"] = static_cast<double>(tokens);
  state.counters["bytes"] = static_cast<double>(bytes);
}

// Per model family (bench/tokenizer.sh sets WW_FAMILIES="name=tokenizer.json,..." and writes
// WW_BENCH_CORPORA/family_<name>.jsonl): the load time of each file and encoding of its corpus.
void LoadFile(benchmark::State& state, const std::string& path) {
  for (auto _ : state) {
    auto t = ww::Tokenizer::Load(path);
    if (!t.ok()) {
      state.SkipWithError(t.status().message().c_str());
      return;
    }
    benchmark::DoNotOptimize(t);
  }
}

void RegisterFamilies() {
  const std::string families = Env("WW_FAMILIES");
  size_t at = 0;
  while (at < families.size()) {
    size_t end = families.find(',', at);
    if (end == std::string::npos) end = families.size();
    const std::string item = families.substr(at, end - at);
    at = end + 1;
    const size_t eq = item.find('=');
    if (eq == std::string::npos) continue;
    const std::string name = item.substr(0, eq), path = item.substr(eq + 1);
    benchmark::RegisterBenchmark(("Load/" + name).c_str(), LoadFile, path)
        ->Iterations(3)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    for (const bool cold : {true, false}) {
      benchmark::RegisterBenchmark(("EncodeFamily/" + name + (cold ? "/cold" : "/warm")).c_str(),
                                   [name, path, cold](benchmark::State& state) {
                                     setenv("WW_TOKENIZER", path.c_str(), 1);
                                     EncodeCorpus(state, "family_" + name, cold);
                                   })
          ->Iterations(cold ? 2 : 3)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    }
  }
}

}  // namespace

BENCHMARK_CAPTURE(EncodeCorpus, prose / cold, std::string("prose"), true)
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(EncodeCorpus, prose / warm, std::string("prose"), false)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(EncodeCorpus, code / cold, std::string("code"), true)
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(EncodeCorpus, code / warm, std::string("code"), false)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

int main(int argc, char** argv) {
  RegisterFamilies();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
