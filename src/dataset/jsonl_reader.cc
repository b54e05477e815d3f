// JSON Lines readers: `jsonl` (a list of token ids under `field`) and `text-jsonl` (a string
// under `field`, tokenized). Lines are parsed with nlohmann's SAX interface so no DOM is built
// for a 100k-token line; the file is read in blocks, never whole.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <vector>

#include "dataset/reader_common.h"
#include "dataset/sample_length_reader.h"
#include "tokenizer/jsonl_text.h"

namespace ww::dataset {
namespace {

// Counts the integers of the top-level `field` array (jsonl) or captures the top-level `field`
// string (text-jsonl). Anything else under `field` is an error; other keys are skipped.
class LineHandler final : public nlohmann::json_sax<nlohmann::json> {
 public:
  LineHandler(const std::string& field, bool text, TokenIdRange* ids)
      : field_(field), text_(text), ids_(ids) {}

  void Reset() {
    depth_ = 0;
    in_field_ = false;
    key_is_field_ = false;
    found_ = false;
    count_ = 0;
    error_.clear();
    text_value_.clear();
  }
  bool found() const { return found_; }
  uint64_t count() const { return count_; }
  const std::string& error() const { return error_; }
  const std::string& text_value() const { return text_value_; }

  bool null() override { return Scalar("null"); }
  bool boolean(bool) override { return Scalar("a boolean"); }
  bool number_integer(number_integer_t v) override { return Integer(v); }
  bool number_unsigned(number_unsigned_t v) override {
    return Integer(v > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(v));
  }
  bool number_float(number_float_t, const string_t&) override {
    return Scalar("a non-integer number");
  }
  bool string(string_t& s) override {
    if (depth_ == 1 && key_is_field_ && text_) {
      found_ = true;
      text_value_ = std::move(s);
      key_is_field_ = false;
      return true;
    }
    return Scalar("a string");
  }
  bool binary(binary_t&) override { return Scalar("binary"); }
  bool start_object(std::size_t) override {
    if (in_field_ || (depth_ == 1 && key_is_field_))
      return Fail("holds an object, expected " + Expected());
    ++depth_;
    return true;
  }
  bool key(string_t& k) override {
    if (depth_ == 1) key_is_field_ = (k == field_);
    return true;
  }
  bool end_object() override {
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override {
    if (depth_ == 0) return Fail("line is an array, expected an object");
    if (in_field_) return Fail("holds nested lists, expected " + Expected());
    if (depth_ == 1 && key_is_field_) {
      if (text_) return Fail("holds a list, expected a string");
      in_field_ = true;
      found_ = true;
      key_is_field_ = false;
    }
    ++depth_;
    return true;
  }
  bool end_array() override {
    --depth_;
    if (in_field_ && depth_ == 1) in_field_ = false;
    return true;
  }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& ex) override {
    error_ = fmt::format("invalid JSON at byte {}: {}", position, ex.what());
    return false;
  }

 private:
  std::string Expected() const { return text_ ? "a string" : "a list of token ids"; }
  bool Fail(const std::string& why) {
    if (error_.empty()) error_ = fmt::format("field '{}' {}", field_, why);
    return false;
  }
  bool Scalar(const char* what) {
    if (depth_ == 0) return Fail(std::string("line is ") + what + ", expected an object");
    if (in_field_) return Fail(std::string("holds ") + what + ", expected " + Expected());
    if (depth_ == 1 && key_is_field_)
      return Fail(std::string("is ") + what + ", expected " + Expected());
    return true;
  }
  bool Integer(int64_t v) {
    if (in_field_ && depth_ == 2) {
      ++count_;
      ids_->Add(v);
      return true;
    }
    return Scalar("a number");
  }

  const std::string& field_;
  const bool text_;
  TokenIdRange* ids_;
  int depth_ = 0;
  bool in_field_ = false, key_is_field_ = false, found_ = false;
  uint64_t count_ = 0;
  std::string error_, text_value_;
};

class JsonlReader final : public SampleLengthReader {
 public:
  JsonlReader(bool text) : text_(text) {}

  Status Open(Env* env, const std::string& path, const ReaderOptions& options) {
    options_ = options;
    if (text_ && options_.tokenizer == nullptr) {
      return Status::Unavailable(
          fmt::format("{}: text-jsonl needs a tokenizer to count tokens (data.tokenizer, or "
                      "iobench --tokenizer) and none was given",
                      path));
    }
    auto file = env->OpenFile(path);
    if (!file.ok()) return file.status();
    file_ = std::move(*file);
    files_.emplace_back(path, file_->size_bytes());
    handler_ = std::make_unique<LineHandler>(options_.field, text_, &token_ids_);
    return Status::Ok();
  }

  Result<size_t> Next(std::vector<uint32_t>* lengths) override {
    const size_t want = std::max<size_t>(1, options_.chunk_samples);
    size_t produced = 0;
    while (produced < want) {
      // Find the next complete line in the buffer, refilling from the file as needed.
      const size_t nl = buf_.find('\n', pos_);
      const size_t line_begin = pos_;
      std::string_view line;
      if (nl == std::string::npos) {
        if (file_offset_ < file_->size_bytes()) {
          WW_RETURN_IF_ERROR(Refill());
          continue;
        }
        if (pos_ >= buf_.size()) break;  // end of file
        line = std::string_view(buf_).substr(pos_);
        pos_ = buf_.size();
      } else {
        line = std::string_view(buf_).substr(pos_, nl - pos_);
        pos_ = nl + 1;
      }
      ++line_no_;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.find_first_not_of(" \t") == std::string_view::npos) continue;  // blank line
      auto len = ParseLine(line);
      if (!len.ok()) return len.status();
      lengths->push_back(*len);
      if (extents_) {
        // buf_ holds the file's bytes [file_offset_ - buf_.size(), file_offset_).
        const uint64_t buf_begin = file_offset_ - buf_.size();
        extents_->push_back({buf_begin + line_begin, pos_ - line_begin, 0});
      }
      ++produced;
    }
    return produced;
  }

 private:
  Status Refill() {
    // Keep the unconsumed tail, then append the next block.
    buf_.erase(0, pos_);
    pos_ = 0;
    if (buf_.size() > options_.max_line_bytes) {
      return Status::InvalidInput(fmt::format("{}:{}: line longer than {} bytes", file_->path(),
                                              line_no_ + 1, options_.max_line_bytes));
    }
    constexpr uint64_t kBlockBytes = uint64_t{4} << 20;
    const uint64_t n = std::min(kBlockBytes, file_->size_bytes() - file_offset_);
    const size_t old = buf_.size();
    buf_.resize(old + static_cast<size_t>(n));
    WW_RETURN_IF_ERROR(file_->ReadAt(file_offset_, static_cast<size_t>(n), buf_.data() + old));
    file_offset_ += n;
    bytes_read_ += n;
    return Status::Ok();
  }

  Result<uint32_t> ParseLine(std::string_view line) {
    handler_->Reset();
    const bool ok =
        nlohmann::json::sax_parse(line.begin(), line.end(), handler_.get(),
                                  nlohmann::json::input_format_t::json, /*strict=*/true);
    if (text_ && (!ok || !handler_->error().empty())) {
      // Strict JSON refuses a lone surrogate escape ("\ud800"), which Python's json and the
      // tokenizers the training runs read as U+FFFD; `wattwatch tokenize` repairs it the same way,
      // so the gate counts what training will count instead of refusing the corpus.
      auto repaired = ExtractJsonlText(line, options_.field);
      if (repaired.ok()) return EncodeText(*repaired);
    }
    if (!ok || !handler_->error().empty()) {
      return Status::InvalidInput(
          fmt::format("{}:{}: {}", file_->path(), line_no_,
                      handler_->error().empty() ? "invalid JSON" : handler_->error()));
    }
    if (!handler_->found()) {
      return Status::InvalidInput(fmt::format("{}:{}: no field '{}' in this line", file_->path(),
                                              line_no_, options_.field));
    }
    if (!text_) {
      if (handler_->count() > UINT32_MAX) {
        return Status::InvalidInput(fmt::format("{}:{}: sample too long", file_->path(), line_no_));
      }
      return static_cast<uint32_t>(handler_->count());
    }
    return EncodeText(handler_->text_value());
  }

  Result<uint32_t> EncodeText(const std::string& text) {
    Status st = options_.tokenizer->Encode(text, &ids_);
    if (!st.ok()) {
      return Status::InvalidInput(
          fmt::format("{}:{}: tokenizer: {}", file_->path(), line_no_, st.message()));
    }
    for (uint32_t id : ids_) token_ids_.Add(id);
    return static_cast<uint32_t>(ids_.size());
  }

  const bool text_;
  ReaderOptions options_;
  std::unique_ptr<RandomAccessFile> file_;
  std::unique_ptr<LineHandler> handler_;
  std::string buf_;
  size_t pos_ = 0;
  uint64_t file_offset_ = 0, line_no_ = 0;
  std::vector<uint32_t> ids_;
};

}  // namespace

Result<std::unique_ptr<SampleLengthReader>> OpenJsonlReader(Env* env, const std::string& path,
                                                            const ReaderOptions& options,
                                                            bool text) {
  auto reader = std::make_unique<JsonlReader>(text);
  WW_RETURN_IF_ERROR(reader->Open(env, path, options));
  return std::unique_ptr<SampleLengthReader>(std::move(reader));
}

}  // namespace ww::dataset
