#include "telemetry/ingest/file_source.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/timefmt.h"

namespace ww::ingest {

FileSource::FileSource(std::unique_ptr<LineReader> reader, const std::string& host,
                       uint16_t host_index, FileSourceLimits limits)
    : reader_(std::move(reader)),
      hosts_{ValidUtf8(host)},
      host_index_(host_index),
      budget_(limits, "records") {}

Status FileSource::Next(std::vector<GpuSample>* out) {
  if (finished_) return Status::Ok();
  const size_t before = out->size();
  for (;;) {
    bool at_end = false;
    WW_RETURN_IF_ERROR(ReadBatch(out, &at_end));
    if (out->size() > before) {
      emitted_ += static_cast<int64_t>(out->size() - before);
      return Status::Ok();
    }
    if (at_end) break;
  }
  finished_ = true;
  if (reader_->nul_tail_bytes() > 0) Skip("NUL bytes at the end skipped", reader_->NulTailNote());
  if (!reader_->truncated_note().empty()) {
    Skip("truncated compressed stream", reader_->truncated_note());
  }
  return budget_.Finish(path(), emitted_, reader_->line_number());
}

Status MalformedBudget::Bad(const std::string& path, Warnings* warnings, const std::string& kind,
                            const std::string& message) {
  warnings->Add(kind, message);
  return Bad(path, message);
}

Status MalformedBudget::Bad(const std::string& path, const std::string& message) {
  ++bad_;
  if (!first_bad_) first_bad_ = message;
  const double limit = std::max<double>(
      static_cast<double>(limits_.max_bad_floor),
      limits_.max_bad_fraction * static_cast<double>(std::max<int64_t>(records_, 1000)));
  if (static_cast<double>(bad_) > limit) {
    return Status::InvalidInput(
        fmt::format("{}: too many malformed {} ({} of {} so far); first: {}", path, noun_, bad_,
                    records_, *first_bad_));
  }
  return Status::Ok();
}

Status MalformedBudget::Check(const std::string& path) const {
  const double limit = std::max<double>(static_cast<double>(limits_.max_bad_floor),
                                        limits_.max_bad_fraction * static_cast<double>(records_));
  if (static_cast<double>(bad_) > limit) {
    return Status::InvalidInput(fmt::format("{}: too many malformed {} ({} of {}); first: {}", path,
                                            noun_, bad_, records_, *first_bad_));
  }
  return Status::Ok();
}

Status MalformedBudget::Finish(const std::string& path, int64_t emitted, int64_t lines) const {
  WW_RETURN_IF_ERROR(Check(path));
  if (emitted == 0) {
    if (first_bad_) {
      return Status::InvalidInput(
          fmt::format("{}: no usable samples; first problem: {}", path, *first_bad_));
    }
    return Status::InvalidInput(
        fmt::format("{}:{}: no samples in the file (it ends at line {})", path, lines, lines));
  }
  return Status::Ok();
}

bool FileSource::Admit(const GpuSample& s, int64_t line) {
  const size_t g = s.key.gpu;
  if (g >= last_ms_.size()) {
    last_ms_.resize(g + 1, INT64_MIN);
    has_info_.resize(g + 1, false);
  }
  if (g >= jump_ms_.size()) jump_ms_.resize(g + 1, INT64_MIN);
  int64_t& last = last_ms_[g];
  if (s.timestamp_ms <= last) {
    warnings_.Add(
        s.timestamp_ms == last ? "duplicate timestamp skipped" : "out-of-order timestamp skipped",
        fmt::format("line {}: GPU {} at {}", line, s.key.gpu, FormatIsoMs(s.timestamp_ms)));
    return false;
  }
  // A reading far ahead of the one before (its GPU's, else the file's newest) is a stray clock
  // (a row stamped 2100): taken, it would make every later reading "out of order", or split a
  // hang by decades. Dropped; a second reading that agrees with it is a real gap, taken.
  const int64_t ref = last != INT64_MIN ? last : newest_ms_;
  int64_t& jump = jump_ms_[g];
  if (ref != INT64_MIN && s.timestamp_ms - ref > kMaxJumpMs &&
      !(jump != INT64_MIN && s.timestamp_ms > jump && s.timestamp_ms - jump <= kMaxJumpMs)) {
    jump = s.timestamp_ms;
    warnings_.Add("reading stamped more than a day after the one before skipped (clock jump?)",
                  fmt::format("line {}: GPU {} at {} after {}", line, s.key.gpu,
                              FormatIsoMs(s.timestamp_ms), FormatIsoMs(ref)));
    return false;
  }
  jump = INT64_MIN;
  last = s.timestamp_ms;
  newest_ms_ = std::max(newest_ms_, last);
  if (!has_info_[g]) {
    Info(s.key.gpu);
    has_info_[g] = true;
  }
  return true;
}

void FileSource::Accept(const GpuSample& s, int64_t line, std::vector<GpuSample>* out) {
  if (Admit(s, line)) out->push_back(s);
}

void FileSource::AcceptTick(std::vector<GpuSample>* tick, const std::vector<int64_t>& lines,
                            std::vector<GpuSample>* out) {
  size_t kept = 0;
  for (size_t i = 0; i < tick->size(); ++i) {
    if (!Admit((*tick)[i], i < lines.size() ? lines[i] : 0)) continue;
    if (kept != i) (*tick)[kept] = (*tick)[i];
    ++kept;
  }
  tick->resize(kept);
  if (out->empty()) {
    out->swap(*tick);
  } else {
    out->insert(out->end(), tick->begin(), tick->end());
  }
  tick->clear();
}

GpuInfo& FileSource::Info(uint16_t gpu) {
  auto [it, inserted] = infos_.try_emplace(gpu);
  if (inserted) {
    it->second.key.host = host_index_;
    it->second.key.gpu = gpu;
  }
  return it->second;
}

void FileSource::SetLabel(uint16_t gpu, const std::string& key, const std::string& value) {
  labels_[gpu][key] = ValidUtf8(value);
}

std::vector<std::string> FileSource::warnings() const {
  auto lines = warnings_.Render();
  for (auto& l : lines) l = ValidUtf8(fmt::format("{}: {}", path(), l));
  return lines;
}

std::vector<GpuInfo> FileSource::gpus() const {
  std::vector<GpuInfo> out;
  for (const auto& [gpu, info] : infos_) out.push_back(info);
  return out;
}

std::vector<GpuLabels> FileSource::gpu_labels() const {
  std::vector<GpuLabels> out;
  for (const auto& [gpu, labels] : labels_) {
    GpuLabels l;
    l.key = GpuKey{host_index_, gpu};
    l.labels = labels;
    out.push_back(std::move(l));
  }
  return out;
}

std::string OpenedFile::Describe() const { return file ? file->Describe() : description; }

OpenedFile OpenedFileOf(std::unique_ptr<FileSource> source) {
  OpenedFile f;
  f.file = source.get();
  f.source = std::move(source);
  return f;
}

OpenedFile OpenedFileOf(std::unique_ptr<TelemetrySource> source, std::string description) {
  OpenedFile f;
  f.source = std::move(source);
  f.description = std::move(description);
  return f;
}

std::string FileSource::Where(int64_t line) const { return fmt::format("{}:{}", path(), line); }

}  // namespace ww::ingest
