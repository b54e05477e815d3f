#include "dataset/reader_common.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace ww::dataset {

uint64_t TokenDtype::max_id() const {
  if (!is_integer || bits <= 0) return 0;
  if (bits >= 64) return is_signed ? uint64_t{INT64_MAX} : UINT64_MAX;
  return is_signed ? (uint64_t{1} << (bits - 1)) - 1 : (uint64_t{1} << bits) - 1;
}

void TokenIdRange::Merge(const TokenIdRange& other) {
  ids_seen += other.ids_seen;
  min_id = std::min(min_id, other.min_id);
  max_id = std::max(max_id, other.max_id);
}

std::optional<DataFormat> ParseDataFormat(std::string_view name) {
  if (name == "megatron") return DataFormat::kMegatron;
  if (name == "npy") return DataFormat::kNpy;
  if (name == "jsonl") return DataFormat::kJsonl;
  if (name == "arrow") return DataFormat::kArrow;
  if (name == "text-jsonl") return DataFormat::kTextJsonl;
  return std::nullopt;
}

std::string_view DataFormatName(DataFormat format) {
  switch (format) {
    case DataFormat::kMegatron:
      return "megatron";
    case DataFormat::kNpy:
      return "npy";
    case DataFormat::kJsonl:
      return "jsonl";
    case DataFormat::kArrow:
      return "arrow";
    case DataFormat::kTextJsonl:
      return "text-jsonl";
  }
  return "?";
}

const std::vector<DataFormat>& AllDataFormats() {
  static const std::vector<DataFormat> kAll = {DataFormat::kMegatron, DataFormat::kNpy,
                                               DataFormat::kJsonl, DataFormat::kArrow,
                                               DataFormat::kTextJsonl};
  return kAll;
}

std::string_view DefaultField(DataFormat format) {
  return format == DataFormat::kTextJsonl ? "text" : "input_ids";
}

Result<std::unique_ptr<SampleLengthReader>> OpenSampleLengthReader(Env* env, DataFormat format,
                                                                   const std::string& path,
                                                                   const ReaderOptions& options) {
  switch (format) {
    case DataFormat::kMegatron:
      return OpenMegatronReader(env, path, options);
    case DataFormat::kNpy:
      return OpenNpyReader(env, path, options);
    case DataFormat::kJsonl:
      return OpenJsonlReader(env, path, options, /*text=*/false);
    case DataFormat::kTextJsonl:
      return OpenJsonlReader(env, path, options, /*text=*/true);
    case DataFormat::kArrow:
      return OpenArrowReader(env, path, options);
  }
  return Status::Internal("unknown data format");
}

Status ReadAllLengths(SampleLengthReader* reader, std::vector<uint32_t>* lengths) {
  while (true) {
    auto got = reader->Next(lengths);
    if (!got.ok()) return got.status();
    if (*got == 0) return Status::Ok();
  }
}

namespace internal {

TokenDtype MakeIntDtype(int bits, bool is_signed) {
  TokenDtype d;
  d.bits = bits;
  d.is_signed = is_signed;
  d.is_integer = true;
  d.name = fmt::format("{}int{}", is_signed ? "" : "u", bits);
  return d;
}

int64_t DecodeInt(const uint8_t* p, const TokenDtype& dtype) {
  switch (dtype.bits) {
    case 8:
      return dtype.is_signed ? int64_t{LoadLe<int8_t>(p)} : int64_t{LoadLe<uint8_t>(p)};
    case 16:
      return dtype.is_signed ? int64_t{LoadLe<int16_t>(p)} : int64_t{LoadLe<uint16_t>(p)};
    case 32:
      return dtype.is_signed ? int64_t{LoadLe<int32_t>(p)} : int64_t{LoadLe<uint32_t>(p)};
    default: {
      const uint64_t u = LoadLe<uint64_t>(p);
      // An unsigned value past INT64_MAX is out of any range we accept; clamp so it reads as huge.
      return dtype.is_signed ? static_cast<int64_t>(u)
                             : static_cast<int64_t>(std::min<uint64_t>(u, INT64_MAX));
    }
  }
}

void AddIds(const uint8_t* p, size_t count, const TokenDtype& dtype, TokenIdRange* ids) {
  if (!dtype.is_integer) return;
  const size_t item = static_cast<size_t>(dtype.bits / 8);
  for (size_t i = 0; i < count; ++i, p += item) ids->Add(DecodeInt(p, dtype));
}

Status SampleTokenIds(const RandomAccessFile& file, uint64_t begin, uint64_t end,
                      const TokenDtype& dtype, uint64_t budget_bytes, TokenIdRange* ids,
                      uint64_t* bytes_read) {
  if (!dtype.is_integer || dtype.bits < 8 || budget_bytes == 0 || end <= begin) return Status::Ok();
  const uint64_t item = static_cast<uint64_t>(dtype.bits / 8);
  const uint64_t total_items = (end - begin) / item;
  if (total_items == 0) return Status::Ok();
  constexpr uint64_t kWindows = 16;
  const uint64_t budget_items = std::max<uint64_t>(1, budget_bytes / item);
  const uint64_t windows = std::min<uint64_t>(kWindows, total_items);
  const uint64_t per_window = std::max<uint64_t>(1, std::min(total_items, budget_items) / windows);
  std::vector<uint8_t> buf;
  for (uint64_t w = 0; w < windows; ++w) {
    // Window starts spread evenly; the last window ends at the array's end.
    uint64_t start = (total_items - per_window) * w / std::max<uint64_t>(1, windows - 1);
    if (windows == 1) start = 0;
    const uint64_t n = std::min(per_window, total_items - start);
    buf.resize(static_cast<size_t>(n * item));
    WW_RETURN_IF_ERROR(file.ReadAt(begin + start * item, buf.size(), buf.data()));
    *bytes_read += buf.size();
    AddIds(buf.data(), static_cast<size_t>(n), dtype, ids);
  }
  return Status::Ok();
}

}  // namespace internal
}  // namespace ww::dataset
