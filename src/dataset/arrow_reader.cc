// Arrow IPC reader for HF datasets cache files (.arrow, IPC *stream* format; the IPC *file*
// format, which wraps a stream between "ARROW1" magics, is accepted too). It parses just enough
// of the FlatBuffers metadata (Schema.fbs, Message.fbs) to find one list<int> or
// large_list<int> column and reads that column's offsets buffer from each record batch; no
// Arrow library is needed (Debian ships none).
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "dataset/flatbuffer_view.h"
#include "dataset/reader_common.h"
#include "dataset/sample_length_reader.h"

namespace ww::dataset {
namespace {

using internal::LoadLe;

// Arrow enum values (Schema.fbs: union Type; Message.fbs: union MessageHeader).
enum ArrowType : uint8_t {
  kNull = 1,
  kInt = 2,
  kFloatingPoint = 3,
  kBinary = 4,
  kUtf8 = 5,
  kBool = 6,
  kDecimal = 7,
  kDate = 8,
  kTime = 9,
  kTimestamp = 10,
  kInterval = 11,
  kList = 12,
  kStruct = 13,
  kUnion = 14,
  kFixedSizeBinary = 15,
  kFixedSizeList = 16,
  kMap = 17,
  kDuration = 18,
  kLargeBinary = 19,
  kLargeUtf8 = 20,
  kLargeList = 21,
  kRunEndEncoded = 22,
  kBinaryView = 23,
  kUtf8View = 24,
  kListView = 25,
  kLargeListView = 26,
};
enum MessageHeader : uint8_t { kSchema = 1, kDictionaryBatch = 2, kRecordBatch = 3 };
// Field slots (Schema.fbs table Field): name, nullable, type_type, type, dictionary, children.
constexpr int kFieldName = 0, kFieldTypeType = 2, kFieldType = 3, kFieldDictionary = 4,
              kFieldChildren = 5;
constexpr uint64_t kMaxMetadataBytes = uint64_t{64} << 20;
constexpr int kMaxNesting = 64;
constexpr uint64_t kMaxSchemaFields = 1u << 20;

struct Layout {
  uint64_t nodes = 0;
  uint64_t buffers = 0;
};

class ArrowReader final : public SampleLengthReader {
 public:
  Status Open(Env* env, const std::string& path, const ReaderOptions& options) {
    options_ = options;
    auto file = env->OpenFile(path);
    if (!file.ok()) return file.status();
    file_ = std::move(*file);
    files_.emplace_back(path, file_->size_bytes());
    if (file_->size_bytes() >= 8) {
      char magic[6];
      WW_RETURN_IF_ERROR(file_->ReadAt(0, 6, magic));
      if (std::memcmp(magic, "ARROW1", 6) == 0) pos_ = 8;  // IPC file format: a stream follows
    }
    // The first message must be the schema.
    WW_RETURN_IF_ERROR(ReadMessage());
    if (eos_ || header_type_ != kSchema)
      return Bad("the stream does not start with a schema message");
    return ParseSchema();
  }

  std::optional<TokenDtype> token_dtype() const override { return dtype_; }

  Result<size_t> Next(std::vector<uint32_t>* lengths) override {
    while (batch_next_ >= batch_rows_) {
      if (eos_) return size_t{0};
      WW_RETURN_IF_ERROR(ReadMessage());
      if (eos_) return size_t{0};
      if (header_type_ == kRecordBatch) {
        WW_RETURN_IF_ERROR(StartBatch());
      } else if (header_type_ != kDictionaryBatch) {
        return Bad(fmt::format("unexpected message type {} after the schema", header_type_));
      }
    }
    const uint64_t n =
        std::min<uint64_t>(std::max<size_t>(1, options_.chunk_samples), batch_rows_ - batch_next_);
    const uint64_t width = large_ ? 8 : 4;
    buf_.resize(static_cast<size_t>((n + 1) * width));
    WW_RETURN_IF_ERROR(file_->ReadAt(offsets_pos_ + batch_next_ * width, buf_.size(), buf_.data()));
    bytes_read_ += buf_.size();
    auto at = [&](uint64_t i) -> int64_t {
      return large_ ? LoadLe<int64_t>(buf_.data() + i * 8)
                    : int64_t{LoadLe<int32_t>(buf_.data() + i * 4)};
    };
    int64_t prev = at(0);
    if (batch_next_ == 0 && prev < 0)
      return Bad(fmt::format("record batch {}: first offset {} is negative", batch_index_, prev));
    lengths->reserve(lengths->size() + n);
    for (uint64_t i = 1; i <= n; ++i) {
      const int64_t cur = at(i);
      if (cur < prev || cur - prev > int64_t{UINT32_MAX} ||
          static_cast<uint64_t>(cur) > values_count_) {
        return Bad(fmt::format(
            "record batch {}: offsets out of order or past the values at row {} ({} then {}, "
            "{} values)",
            batch_index_, batch_next_ + i - 1, prev, cur, values_count_));
      }
      lengths->push_back(static_cast<uint32_t>(cur - prev));
      if (extents_) {
        extents_->push_back({values_pos_ + static_cast<uint64_t>(prev) * value_bytes_,
                             static_cast<uint64_t>(cur - prev) * value_bytes_, 0});
      }
      prev = cur;
    }
    batch_next_ += n;
    return static_cast<size_t>(n);
  }

 private:
  Status Bad(const std::string& why) const {
    return Status::InvalidInput(
        fmt::format("{}: not a usable Arrow IPC stream: {}", file_->path(), why));
  }

  // Reads the message at pos_ into meta_ and advances pos_ past its body.
  Status ReadMessage() {
    const uint64_t size = file_->size_bytes();
    if (pos_ == size) {  // a stream that ends without the end-of-stream marker
      eos_ = true;
      return Status::Ok();
    }
    uint8_t prefix[8];
    if (pos_ + 4 > size) return Bad(fmt::format("truncated message header at byte {}", pos_));
    WW_RETURN_IF_ERROR(file_->ReadAt(pos_, 4, prefix));
    uint64_t meta_start = pos_ + 4;
    int32_t len = LoadLe<int32_t>(prefix);
    if (static_cast<uint32_t>(len) == 0xFFFFFFFFu) {  // continuation marker (format >= 0.15)
      if (pos_ + 8 > size) return Bad(fmt::format("truncated message header at byte {}", pos_));
      WW_RETURN_IF_ERROR(file_->ReadAt(pos_ + 4, 4, prefix + 4));
      len = LoadLe<int32_t>(prefix + 4);
      meta_start = pos_ + 8;
    }
    bytes_read_ += meta_start - pos_;
    if (len == 0) {
      eos_ = true;
      return Status::Ok();
    }
    if (len < 0 || static_cast<uint64_t>(len) > kMaxMetadataBytes ||
        meta_start + static_cast<uint64_t>(len) > size) {
      return Bad(fmt::format("message at byte {} declares {} metadata bytes (file has {})", pos_,
                             len, size));
    }
    meta_.resize(static_cast<size_t>(len));
    WW_RETURN_IF_ERROR(file_->ReadAt(meta_start, meta_.size(), meta_.data()));
    bytes_read_ += meta_.size();
    fbuf_ = std::make_unique<fb::Buffer>(meta_.data(), meta_.size());
    auto msg = fb::Table::Root(fbuf_.get());
    if (!msg) return Bad(fmt::format("message at byte {}: malformed flatbuffer", pos_));
    header_type_ = msg->Scalar<uint8_t>(1, 0);
    header_ = msg->SubTable(2);
    const int64_t body = msg->Scalar<int64_t>(3, 0);
    body_start_ = meta_start + static_cast<uint64_t>(len);
    if (!header_) return Bad(fmt::format("message at byte {} has no header", pos_));
    if (body < 0 || static_cast<uint64_t>(body) > size - body_start_) {
      return Bad(fmt::format("message at byte {} declares a {}-byte body past the end of the file",
                             pos_, body));
    }
    body_length_ = static_cast<uint64_t>(body);
    pos_ = body_start_ + body_length_;
    ++messages_;
    return Status::Ok();
  }

  // Nodes and buffers a field occupies in a record batch (Arrow columnar format, IPC buffer
  // layout), recursively over children.
  Result<Layout> FieldLayout(const fb::Table& field, int depth) const {
    if (depth > kMaxNesting) return Bad("schema nesting too deep");
    // Children may share tables (a DAG), so bound the total walk, not only the depth.
    if (++fields_visited_ > kMaxSchemaFields) return Bad("schema has too many fields");
    Layout out{1, 0};
    if (field.SubTable(kFieldDictionary)) return Layout{1, 2};  // stored as its integer indices
    const uint8_t type = field.Scalar<uint8_t>(kFieldTypeType, 0);
    bool has_children = false;
    switch (type) {
      case kNull:
        out.buffers = 0;
        break;
      case kInt:
      case kFloatingPoint:
      case kBool:
      case kDecimal:
      case kDate:
      case kTime:
      case kTimestamp:
      case kInterval:
      case kFixedSizeBinary:
      case kDuration:
        out.buffers = 2;
        break;
      case kBinary:
      case kUtf8:
      case kLargeBinary:
      case kLargeUtf8:
        out.buffers = 3;
        break;
      case kList:
      case kLargeList:
      case kMap:
        out.buffers = 2;
        has_children = true;
        break;
      case kStruct:
      case kFixedSizeList:
        out.buffers = 1;
        has_children = true;
        break;
      case kRunEndEncoded:
        out.buffers = 0;
        has_children = true;
        break;
      case kListView:
      case kLargeListView:
        out.buffers = 3;
        has_children = true;
        break;
      case kUnion: {
        auto u = field.SubTable(kFieldType);
        const int16_t mode = u ? u->Scalar<int16_t>(0, 0) : 0;  // 0 sparse, 1 dense
        out.buffers = mode == 1 ? 2 : 1;
        has_children = true;
        break;
      }
      default:
        return Status::Unavailable(fmt::format(
            "{}: Arrow type {} (view or unknown type) before the '{}' column is not supported",
            file_->path(), type, options_.field));
    }
    if (has_children) {
      auto children = field.VectorField(kFieldChildren);
      const uint32_t n = children ? children->size() : 0;
      for (uint32_t i = 0; i < n; ++i) {
        auto child = children->TableAt(i);
        if (!child) return Bad("malformed child field");
        auto sub = FieldLayout(*child, depth + 1);
        if (!sub.ok()) return sub.status();
        out.nodes += sub->nodes;
        out.buffers += sub->buffers;
      }
    }
    return out;
  }

  Status ParseSchema() {
    auto fields = header_->VectorField(1);
    if (!fields) return Bad("schema has no fields");
    std::vector<std::string> names;
    for (uint32_t i = 0; i < fields->size(); ++i) {
      auto field = fields->TableAt(i);
      if (!field) return Bad(fmt::format("schema field {} is malformed", i));
      auto name = field->String(kFieldName);
      const std::string name_str = name ? std::string(*name) : std::string();
      if (name_str != options_.field) {
        auto layout = FieldLayout(*field, 0);
        if (!layout.ok()) return layout.status();
        node_index_ += layout->nodes;
        buffer_index_ += layout->buffers;
        names.push_back(name_str);
        continue;
      }
      const uint8_t type = field->Scalar<uint8_t>(kFieldTypeType, 0);
      if (field->SubTable(kFieldDictionary) || (type != kList && type != kLargeList)) {
        return Status::InvalidInput(
            fmt::format("{}: column '{}' is not a list of token ids (Arrow type {}; expected "
                        "list<int> or large_list<int>)",
                        file_->path(), options_.field, type));
      }
      large_ = type == kLargeList;
      auto children = field->VectorField(kFieldChildren);
      auto child = children && children->size() == 1 ? children->TableAt(0) : std::nullopt;
      if (!child || child->Scalar<uint8_t>(kFieldTypeType, 0) != kInt ||
          child->SubTable(kFieldDictionary)) {
        return Status::InvalidInput(
            fmt::format("{}: column '{}' is a list whose items are not integers", file_->path(),
                        options_.field));
      }
      auto int_type = child->SubTable(kFieldType);
      const int32_t bits = int_type ? int_type->Scalar<int32_t>(0, 0) : 0;
      const bool is_signed = int_type ? int_type->Scalar<uint8_t>(1, 0) != 0 : false;
      if (bits != 8 && bits != 16 && bits != 32 && bits != 64) {
        return Bad(fmt::format("column '{}' has integer width {}", options_.field, bits));
      }
      dtype_ = internal::MakeIntDtype(bits, is_signed);
      found_ = true;
      return Status::Ok();
    }
    std::string known;
    for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
    return Status::InvalidInput(
        fmt::format("{}: no column '{}' (columns: {})", file_->path(), options_.field, known));
  }

  Status StartBatch() {
    ++batch_index_;
    if (header_->SubTable(3)) {
      return Status::Unavailable(
          fmt::format("{}: record batch {} is compressed (LZ4/ZSTD bodies are not supported)",
                      file_->path(), batch_index_));
    }
    const int64_t rows = header_->Scalar<int64_t>(0, 0);
    auto nodes = header_->VectorField(1);
    auto buffers = header_->VectorField(2);
    if (!nodes || !buffers || !nodes->Fits(16) || !buffers->Fits(16) ||
        node_index_ >= nodes->size() || buffer_index_ + 3 >= buffers->size()) {
      return Bad(fmt::format("record batch {} lists too few nodes or buffers for column '{}'",
                             batch_index_, options_.field));
    }
    const auto col = static_cast<uint32_t>(node_index_);
    const int64_t length = nodes->StructField<int64_t>(col, 16, 0).value_or(-1);
    if (length < 0 || rows < 0 || length > rows) {
      return Bad(fmt::format("record batch {}: column length {} (batch length {})", batch_index_,
                             length, rows));
    }
    auto buffer = [&](uint64_t index, uint64_t* offset, uint64_t* size) -> Status {
      const auto i = static_cast<uint32_t>(index);
      const int64_t off = buffers->StructField<int64_t>(i, 16, 0).value_or(-1);
      const int64_t len = buffers->StructField<int64_t>(i, 16, 8).value_or(-1);
      if (off < 0 || len < 0 || static_cast<uint64_t>(off) > body_length_ ||
          static_cast<uint64_t>(len) > body_length_ - static_cast<uint64_t>(off)) {
        return Bad(
            fmt::format("record batch {}: buffer {} ({} bytes at {}) lies outside the {}-byte body",
                        batch_index_, index, len, off, body_length_));
      }
      *offset = body_start_ + static_cast<uint64_t>(off);
      *size = static_cast<uint64_t>(len);
      return Status::Ok();
    };
    uint64_t offsets_size = 0, values_size = 0;
    WW_RETURN_IF_ERROR(buffer(buffer_index_ + 1, &offsets_pos_, &offsets_size));
    WW_RETURN_IF_ERROR(buffer(buffer_index_ + 3, &values_pos_, &values_size));
    const uint64_t width = large_ ? 8 : 4;
    const auto ulength = static_cast<uint64_t>(length);
    if (ulength > 0 && offsets_size / width < ulength + 1) {
      return Bad(fmt::format("record batch {}: offsets buffer of {} bytes cannot hold {} offsets",
                             batch_index_, offsets_size, ulength + 1));
    }
    const uint64_t item = static_cast<uint64_t>(dtype_->bits / 8);
    values_count_ = values_size / item;
    value_bytes_ = item;
    batch_rows_ = ulength;
    batch_next_ = 0;
    // Sample some token ids from this batch's values, within what is left of the budget.
    const uint64_t share = std::max<uint64_t>(uint64_t{64} << 10, options_.token_sample_bytes / 8);
    const uint64_t take = std::min({share, sample_budget_left_, values_size});
    if (take > 0) {
      uint64_t read = 0;
      WW_RETURN_IF_ERROR(internal::SampleTokenIds(*file_, values_pos_, values_pos_ + take, *dtype_,
                                                  take, &token_ids_, &read));
      bytes_read_ += read;
      sample_budget_left_ -= std::min(sample_budget_left_, read);
    }
    return Status::Ok();
  }

  ReaderOptions options_;
  std::unique_ptr<RandomAccessFile> file_;
  uint64_t pos_ = 0;
  bool eos_ = false;
  std::vector<uint8_t> meta_;
  std::unique_ptr<fb::Buffer> fbuf_;
  uint8_t header_type_ = 0;
  std::optional<fb::Table> header_;
  uint64_t body_start_ = 0, body_length_ = 0, messages_ = 0;
  uint64_t node_index_ = 0, buffer_index_ = 0;
  mutable uint64_t fields_visited_ = 0;
  bool found_ = false, large_ = false;
  std::optional<TokenDtype> dtype_;
  uint64_t batch_index_ = 0, batch_rows_ = 0, batch_next_ = 0, offsets_pos_ = 0, values_count_ = 0;
  uint64_t values_pos_ = 0, value_bytes_ = 0;  // this batch's token values, for sample extents
  uint64_t sample_budget_left_ = 0;
  std::vector<uint8_t> buf_;

 public:
  void InitBudget() { sample_budget_left_ = options_.token_sample_bytes; }
};

}  // namespace

Result<std::unique_ptr<SampleLengthReader>> OpenArrowReader(Env* env, const std::string& path,
                                                            const ReaderOptions& options) {
  auto reader = std::make_unique<ArrowReader>();
  WW_RETURN_IF_ERROR(reader->Open(env, path, options));
  reader->InitBudget();
  return std::unique_ptr<SampleLengthReader>(std::move(reader));
}

}  // namespace ww::dataset
