// Helpers for the measure tests: corpora on the real disk (page-cache tests need a real file
// system), written durably so posix_fadvise can drop their pages.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/page_cache_testing.h"
#include "dataset/corpus_writers.h"

namespace ww::measure::testing {

using ::ww::testing::NoColdReads;
using ::ww::testing::SyncFile;

// A Megatron corpus of `samples` samples of `tokens` int32 tokens each, written durably.
inline std::vector<uint32_t> WriteDurableMegatron(const std::string& prefix, size_t samples,
                                                  uint32_t tokens) {
  std::vector<uint32_t> lengths(samples);
  for (size_t i = 0; i < samples; ++i) lengths[i] = tokens + static_cast<uint32_t>(i % 7);
  dataset::testing::WriteMegatron(prefix, lengths, /*int32*/ 4, 50000);
  SyncFile(prefix + ".idx");
  SyncFile(prefix + ".bin");
  return lengths;
}

}  // namespace ww::measure::testing
