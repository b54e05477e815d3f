// Helpers shared by the readers (internal to src/dataset).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "dataset/sample_length_reader.h"

namespace ww::dataset::internal {

template <typename T>
T LoadLe(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;  // every supported host is little-endian (x86-64, aarch64)
}

// Reads up to `budget_bytes` of the token array in [begin, end) of `file`, spread over at most
// 16 windows, and adds every id to *ids. Non-integer dtypes add nothing.
Status SampleTokenIds(const RandomAccessFile& file, uint64_t begin, uint64_t end,
                      const TokenDtype& dtype, uint64_t budget_bytes, TokenIdRange* ids,
                      uint64_t* bytes_read);

// Decodes one little-endian integer of an integer `dtype` at p.
int64_t DecodeInt(const uint8_t* p, const TokenDtype& dtype);

// Decodes `count` little-endian integers of `dtype` at p into *ids.
void AddIds(const uint8_t* p, size_t count, const TokenDtype& dtype, TokenIdRange* ids);

TokenDtype MakeIntDtype(int bits, bool is_signed);

}  // namespace ww::dataset::internal
