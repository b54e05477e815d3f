// Megatron MMIDIDX (.idx / .bin) reader. Lengths come from the .idx `sizes` array, streamed in
// chunks; `pointers` are checked against the running byte offset and the .bin size, so a pair of
// files that do not belong together is caught before the job trusts them.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "dataset/reader_common.h"
#include "dataset/sample_length_reader.h"

namespace ww::dataset {
namespace {

using internal::LoadLe;

constexpr std::array<char, 9> kMagic = {'M', 'M', 'I', 'D', 'I', 'D', 'X', '\0', '\0'};
constexpr uint64_t kHeaderBytes = 9 + 8 + 1 + 8 + 8;

std::optional<TokenDtype> DtypeFromCode(uint8_t code) {
  switch (code) {
    case 1:
      return internal::MakeIntDtype(8, false);
    case 2:
      return internal::MakeIntDtype(8, true);
    case 3:
      return internal::MakeIntDtype(16, true);
    case 4:
      return internal::MakeIntDtype(32, true);
    case 5:
      return internal::MakeIntDtype(64, true);
    case 6:
      return TokenDtype{"float64", 64, true, false};
    case 7:
      return TokenDtype{"float32", 32, true, false};
    case 8:
      return internal::MakeIntDtype(16, false);
    default:
      return std::nullopt;
  }
}

std::string StripSuffix(const std::string& path) {
  for (const char* suffix : {".idx", ".bin"}) {
    const size_t n = std::strlen(suffix);
    if (path.size() > n && path.compare(path.size() - n, n, suffix) == 0) {
      return path.substr(0, path.size() - n);
    }
  }
  return path;
}

class MegatronReader final : public SampleLengthReader {
 public:
  Status Open(Env* env, const std::string& path, const ReaderOptions& options) {
    options_ = options;
    const std::string prefix = StripSuffix(path);
    idx_path_ = prefix + ".idx";
    auto idx = env->OpenFile(idx_path_);
    if (!idx.ok()) return idx.status();
    idx_ = std::move(*idx);
    auto bin = env->OpenFile(prefix + ".bin");
    if (!bin.ok()) return bin.status();
    bin_ = std::move(*bin);
    files_.emplace_back(idx_->path(), idx_->size_bytes());
    files_.emplace_back(bin_->path(), bin_->size_bytes());

    const uint64_t idx_size = idx_->size_bytes();
    if (idx_size < kHeaderBytes) {
      return Status::InvalidInput(
          fmt::format("{}: truncated Megatron index: {} bytes, the header alone needs {}",
                      idx_path_, idx_size, kHeaderBytes));
    }
    std::array<uint8_t, kHeaderBytes> header{};
    WW_RETURN_IF_ERROR(idx_->ReadAt(0, header.size(), header.data()));
    bytes_read_ += header.size();
    if (std::memcmp(header.data(), kMagic.data(), kMagic.size()) != 0) {
      return Status::InvalidInput(fmt::format(
          "{}: not a Megatron MMIDIDX index (wrong magic; expected \"MMIDIDX\\0\\0\")", idx_path_));
    }
    const uint64_t version = LoadLe<uint64_t>(header.data() + 9);
    if (version != 1) {
      return Status::InvalidInput(fmt::format(
          "{}: unsupported MMIDIDX version {} (this reader knows version 1)", idx_path_, version));
    }
    const uint8_t code = header[17];
    dtype_ = DtypeFromCode(code);
    if (!dtype_) {
      return Status::InvalidInput(
          fmt::format("{}: unknown dtype code {} in the header", idx_path_, code));
    }
    item_bytes_ = static_cast<uint64_t>(dtype_->bits / 8);
    seq_count_ = LoadLe<uint64_t>(header.data() + 18);
    doc_count_ = LoadLe<uint64_t>(header.data() + 26);
    // Check counts against the file size before using them for anything: a header that lies
    // (or a huge count) must not turn into a huge allocation or a read loop over garbage.
    const uint64_t body = idx_size - kHeaderBytes;
    if (seq_count_ > body / 12 || doc_count_ > body / 8 ||
        seq_count_ * 12 + doc_count_ * 8 > body) {
      return Status::InvalidInput(fmt::format(
          "{}: header declares {} sequences and {} documents, which need more than the {} bytes "
          "the index has (truncated file or a header that lies)",
          idx_path_, seq_count_, doc_count_, idx_size));
    }
    const uint64_t expected = kHeaderBytes + seq_count_ * 12 + doc_count_ * 8;
    // Multimodal indexes append one mode byte per sequence.
    if (idx_size != expected && idx_size != expected + seq_count_) {
      return Status::InvalidInput(fmt::format(
          "{}: header declares {} sequences and {} documents ({} bytes) but the index has {} bytes",
          idx_path_, seq_count_, doc_count_, expected, idx_size));
    }
    if (doc_count_ == 0) {
      return Status::InvalidInput(fmt::format(
          "{}: document index is empty (it always holds at least the leading 0)", idx_path_));
    }
    sizes_offset_ = kHeaderBytes;
    pointers_offset_ = sizes_offset_ + seq_count_ * 4;
    docs_offset_ = pointers_offset_ + seq_count_ * 8;
    return Status::Ok();
  }

  std::optional<uint64_t> declared_samples() const override { return seq_count_; }
  std::optional<TokenDtype> token_dtype() const override { return dtype_; }

  Result<size_t> Next(std::vector<uint32_t>* lengths) override {
    if (done_) return size_t{0};
    if (next_seq_ == seq_count_) {
      WW_RETURN_IF_ERROR(Finish());
      done_ = true;
      return size_t{0};
    }
    const uint64_t n =
        std::min<uint64_t>(std::max<size_t>(1, options_.chunk_samples), seq_count_ - next_seq_);
    sizes_buf_.resize(static_cast<size_t>(n));
    pointers_buf_.resize(static_cast<size_t>(n));
    WW_RETURN_IF_ERROR(idx_->ReadAt(sizes_offset_ + next_seq_ * 4, n * 4, sizes_buf_.data()));
    WW_RETURN_IF_ERROR(idx_->ReadAt(pointers_offset_ + next_seq_ * 8, n * 8, pointers_buf_.data()));
    bytes_read_ += n * 12;
    const uint64_t bin_size = bin_->size_bytes();
    lengths->reserve(lengths->size() + n);
    for (uint64_t i = 0; i < n; ++i) {
      const int32_t size = sizes_buf_[i];
      const int64_t pointer = pointers_buf_[i];
      const uint64_t seq = next_seq_ + i;
      if (size < 0) {
        return Status::InvalidInput(
            fmt::format("{}: sequence {} has a negative size {}", idx_path_, seq, size));
      }
      if (pointer < 0 || static_cast<uint64_t>(pointer) != running_bytes_) {
        return Status::InvalidInput(fmt::format(
            "{}: sequence {} points at byte {} of the .bin but the sizes before it end at byte {} "
            "(pointers out of order, or .idx and .bin do not match)",
            idx_path_, seq, pointer, running_bytes_));
      }
      if (extents_) {  // file 1 is the .bin
        extents_->push_back({running_bytes_, static_cast<uint64_t>(size) * item_bytes_, 1});
      }
      running_bytes_ += static_cast<uint64_t>(size) * item_bytes_;
      if (running_bytes_ > bin_size) {
        return Status::InvalidInput(
            fmt::format("{}: sequence {} ends at byte {} but {} has only {} bytes (truncated .bin "
                        "or wrong pair)",
                        idx_path_, seq, running_bytes_, bin_->path(), bin_size));
      }
      lengths->push_back(static_cast<uint32_t>(size));
    }
    next_seq_ += n;
    return static_cast<size_t>(n);
  }

 private:
  Status Finish() {
    if (running_bytes_ != bin_->size_bytes()) {
      return Status::InvalidInput(
          fmt::format("{}: the index describes {} bytes of tokens but {} has {} bytes (.idx and "
                      ".bin do not match)",
                      idx_path_, running_bytes_, bin_->path(), bin_->size_bytes()));
    }
    // Document boundaries: non-decreasing sequence indexes from 0 to the sequence count.
    std::vector<int64_t> docs;
    uint64_t prev = 0;
    for (uint64_t d = 0; d < doc_count_;) {
      const uint64_t n = std::min<uint64_t>(doc_count_ - d, uint64_t{1} << 16);
      docs.resize(static_cast<size_t>(n));
      WW_RETURN_IF_ERROR(idx_->ReadAt(docs_offset_ + d * 8, n * 8, docs.data()));
      bytes_read_ += n * 8;
      for (uint64_t i = 0; i < n; ++i) {
        const int64_t v = docs[i];
        if (v < 0 || static_cast<uint64_t>(v) < prev || static_cast<uint64_t>(v) > seq_count_ ||
            (d + i == 0 && v != 0)) {
          return Status::InvalidInput(fmt::format(
              "{}: document index entry {} is {} (must start at 0, never decrease and stay <= {})",
              idx_path_, d + i, v, seq_count_));
        }
        prev = static_cast<uint64_t>(v);
      }
      d += n;
    }
    if (prev != seq_count_) {
      return Status::InvalidInput(
          fmt::format("{}: document index ends at sequence {} but the index has {} sequences",
                      idx_path_, prev, seq_count_));
    }
    return internal::SampleTokenIds(*bin_, 0, bin_->size_bytes(), *dtype_,
                                    options_.token_sample_bytes, &token_ids_, &bytes_read_);
  }

  ReaderOptions options_;
  std::string idx_path_;
  std::unique_ptr<RandomAccessFile> idx_, bin_;
  std::optional<TokenDtype> dtype_;
  uint64_t item_bytes_ = 0, seq_count_ = 0, doc_count_ = 0;
  uint64_t sizes_offset_ = 0, pointers_offset_ = 0, docs_offset_ = 0;
  uint64_t next_seq_ = 0, running_bytes_ = 0;
  bool done_ = false;
  std::vector<int32_t> sizes_buf_;
  std::vector<int64_t> pointers_buf_;
};

}  // namespace

Result<std::unique_ptr<SampleLengthReader>> OpenMegatronReader(Env* env, const std::string& prefix,
                                                               const ReaderOptions& options) {
  auto reader = std::make_unique<MegatronReader>();
  WW_RETURN_IF_ERROR(reader->Open(env, prefix, options));
  return std::unique_ptr<SampleLengthReader>(std::move(reader));
}

}  // namespace ww::dataset
