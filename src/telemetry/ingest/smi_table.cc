#include "telemetry/ingest/smi_table.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "core/sample_ranges.h"
#include "core/strings.h"
#include "core/timefmt.h"
#include "telemetry/ingest/format.h"

namespace ww::ingest {
namespace {

// The cells of a `| a | b | c |` row, without the outer bars.
void SplitBars(std::string_view t, std::vector<std::string_view>* cells) {
  cells->clear();
  if (t.empty() || t.front() != '|') return;
  t.remove_prefix(1);
  if (!t.empty() && t.back() == '|') t.remove_suffix(1);
  size_t pos = 0;
  for (;;) {
    const size_t bar = t.find('|', pos);
    if (bar == std::string_view::npos) {
      cells->push_back(t.substr(pos));
      return;
    }
    cells->push_back(t.substr(pos, bar - pos));
    pos = bar + 1;
  }
}

// "62W / 149W", "1MiB /  46068MiB", "N/A /  N/A": the two readings of a "used / cap" cell.
void ParsePair(std::string_view cell, std::optional<double>* a, std::optional<double>* b,
               bool* bad) {
  const size_t slash = cell.find(" / ");
  const size_t at = slash != std::string_view::npos ? slash : cell.find('/');
  if (at == std::string_view::npos) {
    *bad = true;
    return;
  }
  // "N/A / N/A": the first '/' of "N/A" is not the separator.
  const std::string_view left = cell.substr(0, at);
  const std::string_view right = cell.substr(at + (slash != std::string_view::npos ? 3 : 1));
  double v = 0;
  Parse p = ParseNumber(left, &v);
  if (p == Parse::kOk) {
    *a = v;
  } else if (p != Parse::kMissing) {
    *bad = true;
  }
  p = ParseNumber(right, &v);
  if (p == Parse::kOk) {
    *b = v;
  } else if (p != Parse::kMissing) {
    *bad = true;
  }
}

class SmiTableSource final : public FileSource {
 public:
  SmiTableSource(std::unique_ptr<LineReader> reader, const std::string& host, uint16_t host_index,
                 const ReaderOptions& options)
      : FileSource(std::move(reader), host, host_index, options.limits), options_(options) {}

  std::string Describe() const override {
    return fmt::format(
        "nvidia-smi tables: {} table{}{}{}", tables_, tables_ == 1 ? "" : "s",
        driver_.empty() ? "" : ", driver " + driver_,
        dated_ ? ", times from the date lines"
               : fmt::format(", no date lines: {} ms apart (--interval-ms)", options_.interval_ms));
  }

 protected:
  Status ReadBatch(std::vector<GpuSample>* out, bool* at_end) override {
    std::string_view line;
    bool complete;
    for (;;) {
      auto r = reader().Next(&line, &complete);
      if (!r.ok()) return r.status();
      if (!*r) {
        WW_RETURN_IF_ERROR(EndTable(out));
        *at_end = true;
        return Status::Ok();
      }
      const int64_t n = reader().line_number();
      const std::string_view t = TrimSpace(line);
      const bool table_line = !t.empty() && (t.front() == '|' || t.front() == '+');
      if (state_ != State::kOutside && (!table_line || IsSmiTableBanner(t))) {
        const size_t before = out->size();
        WW_RETURN_IF_ERROR(EndTable(out));
        state_ = State::kOutside;
        if (out->size() > before) {
          Consider(t, n);
          return Status::Ok();
        }
      }
      if (state_ == State::kOutside) {
        Consider(t, n);
        continue;
      }
      if (line.find('\0') != std::string_view::npos) {
        return Status::InvalidInput(fmt::format("{}:{}: binary data in a log", path(), n));
      }
      if (t.front() == '+') continue;
      if (t.rfind("|=", 0) == 0) {
        if (state_ == State::kHeader) state_ = State::kGpus;
        continue;
      }
      SplitBars(t, &cells_);
      if (state_ == State::kHeader) continue;
      if (state_ == State::kGpus) {
        const std::string_view first = cells_.empty() ? "" : TrimSpace(cells_[0]);
        if (first.rfind("Processes:", 0) == 0 || first.rfind("MIG devices:", 0) == 0) {
          const size_t before = out->size();
          WW_RETURN_IF_ERROR(EndTable(out));
          state_ = State::kOther;
          if (out->size() > before) return Status::Ok();
          continue;
        }
        WW_RETURN_IF_ERROR(GpuRow(n, complete));
      }
      // kOther: rows of the processes / MIG tables.
    }
  }

 private:
  enum class State { kOutside, kHeader, kGpus, kOther };

  // A line outside a table: a date line, or the banner that opens a table.
  void Consider(std::string_view t, int64_t n) {
    if (auto ms = ParseSmiDateLine(t)) {
      date_ms_ = *ms;
      date_line_ = n;
      return;
    }
    if (IsSmiTableBanner(t)) {
      state_ = State::kHeader;
      table_line_ = n;
      expect_second_ = false;
      const size_t dv = t.find("Driver Version:");
      if (dv != std::string_view::npos) {
        auto toks = SplitWhitespace(t.substr(dv + 15));
        if (!toks.empty()) driver_ = ValidUtf8(toks[0]);
      }
      // The date line nvidia-smi prints right above its banner (blank lines allowed).
      table_ms_.reset();
      if (date_line_ > 0 && n - date_line_ <= 3) table_ms_ = date_ms_;
      date_line_ = 0;
      return;
    }
  }

  Status GpuRow(int64_t n, bool complete) {
    if (cells_.size() < 3) {
      if (!complete) Skip("truncated last line skipped", fmt::format("line {}", n));
      return Status::Ok();
    }
    const std::string_view c0 = TrimSpace(cells_[0]);
    if (!expect_second_) {
      // "0  Tesla K80           Off": index, name, persistence mode.
      auto toks = SplitWhitespace(c0);
      double idx = 0;
      if (toks.size() < 2 || ParseNumber(toks[0], &idx) != Parse::kOk || idx < 0 || idx >= 4096 ||
          idx != std::floor(idx) ||
          toks[0].find_first_not_of("0123456789") != std::string_view::npos) {
        return Status::Ok();  // a blank or MIG M. row
      }
      CountRecord();
      cur_ = GpuSample{};
      cur_.key = GpuKey{host_index(), static_cast<uint16_t>(idx)};
      std::string_view name = c0.substr(toks[0].size());
      name = TrimSpace(name);
      const auto name_toks = SplitWhitespace(name);
      if (!name_toks.empty() && (name_toks.back() == "On" || name_toks.back() == "Off")) {
        name = TrimSpace(name.substr(0, name.size() - name_toks.back().size()));
      }
      cur_name_ = ValidUtf8(name);
      auto bus = SplitWhitespace(cells_[1]);
      cur_bus_ = bus.empty() ? "" : ValidUtf8(bus[0]);
      cur_line_ = n;
      expect_second_ = true;
      return Status::Ok();
    }
    expect_second_ = false;
    // "N/A   50C    P0    62W / 149W": fan, temperature, perf state, power used / cap.
    bool bad = false;
    auto toks = SplitWhitespace(c0);
    if (toks.size() < 3) {
      bad = true;
    } else {
      double v = 0;
      if (ParseNumber(toks[1], &v) == Parse::kOk && v > -60 && v < 200) cur_.temperature_c = v;
      if (toks[2].size() >= 2 && toks[2][0] == 'P') {
        int ps = std::atoi(std::string(toks[2].substr(1)).c_str());
        if (ps >= 0 && ps <= 15) cur_.pstate = ps;
      }
      const size_t perf_at = c0.find(toks[2]);
      ParsePair(c0.substr(perf_at + toks[2].size()), &cur_.power_w, &cur_.power_limit_w, &bad);
    }
    ParsePair(TrimSpace(cells_[1]), &cur_.mem_used_mib, &cur_.mem_total_mib, &bad);
    auto util = SplitWhitespace(cells_[2]);
    double u = 0;
    const Parse up = util.empty() ? Parse::kMissing : ParseNumber(util[0], &u);
    if (up == Parse::kOk && u >= 0 && u <= 100) {
      cur_.util_gpu_pct = u;
    } else if (up != Parse::kMissing) {
      bad = true;
    }
    for (auto* f : {&cur_.power_w, &cur_.power_limit_w}) {
      if (*f && (**f < kPowerRangeW.lo || **f > kPowerRangeW.hi)) {
        f->reset();
        bad = true;
      }
    }
    if (bad) {
      if (!complete) {
        Skip("truncated last line skipped", fmt::format("line {}", n));
        return Status::Ok();
      }
      WW_RETURN_IF_ERROR(Bad("malformed nvidia-smi table row (fields left absent)",
                             fmt::format("line {}: '{}'", n, Excerpt(TrimSpace(cells_[0]), 60))));
    }
    GpuInfo& info = Info(cur_.key.gpu);
    if (info.name.empty()) info.name = cur_name_;
    if (info.pci_bus_id.empty()) info.pci_bus_id = cur_bus_;
    tick_.emplace_back(cur_, cur_line_);
    return Status::Ok();
  }

  Status EndTable(std::vector<GpuSample>* out) {
    if (tick_.empty()) return Status::Ok();
    int64_t at = 0;
    if (table_ms_) {
      at = *table_ms_;
      dated_ = true;
    } else if (options_.interval_ms > 0) {
      at = tables_ * options_.interval_ms;
    } else {
      return Status::InvalidInput(fmt::format(
          "{}:{}: an nvidia-smi table without a date line above it; pass --interval-ms with the "
          "interval of the loop (nvidia-smi -l SECONDS)",
          path(), table_line_));
    }
    ++tables_;
    for (auto& [s, line] : tick_) {
      s.timestamp_ms = at;
      Accept(s, line, out);
    }
    tick_.clear();
    return Status::Ok();
  }

  ReaderOptions options_;
  State state_ = State::kOutside;
  std::vector<std::string_view> cells_;
  int64_t date_ms_ = 0;
  int64_t date_line_ = 0;
  int64_t table_line_ = 0;
  std::optional<int64_t> table_ms_;
  bool expect_second_ = false;
  GpuSample cur_;
  std::string cur_name_, cur_bus_;
  int64_t cur_line_ = 0;
  std::vector<std::pair<GpuSample, int64_t>> tick_;
  int64_t tables_ = 0;
  bool dated_ = false;
  std::string driver_;
};

}  // namespace

bool IsSmiTableBanner(std::string_view line) {
  return line.find("NVIDIA-SMI ") != std::string_view::npos &&
         line.find("Driver Version") != std::string_view::npos;
}

std::optional<int64_t> ParseSmiDateLine(std::string_view line) {
  // "Tue Oct 27 06:02:13 2020": weekday, month, day, time, year.
  auto toks = SplitWhitespace(TrimSpace(line));
  if (toks.size() != 5 || toks[0].size() != 3 || toks[1].size() != 3) return std::nullopt;
  static const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                  "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  int mon = 0;
  for (int i = 0; i < 12; ++i) {
    if (toks[1] == kMonths[i]) mon = i + 1;
  }
  if (mon == 0 || toks[2].size() > 2 || toks[3].size() != 8 || toks[4].size() != 4) {
    return std::nullopt;
  }
  const std::string iso = fmt::format("{}-{:02d}-{:0>2} {}", toks[4], mon, toks[2], toks[3]);
  auto t = ParseTimestamp(iso);
  if (!t) return std::nullopt;
  return t->unix_ms;
}

// --format smi-table: recognized by the table's banner anywhere in the first lines (a Slurm .out
// prints the job's own output first).
namespace {
constexpr DetectRule kSmiTableDetect[] = {
    {130, DetectRule::kLine, [](const DetectLine& l) { return IsSmiTableBanner(l.text); }},
};
}  // namespace

extern const Format kSmiTableFormat;
const Format kSmiTableFormat{"smi-table", "the nvidia-smi table in a loop (a Slurm .out)",
                             kSmiTableDetect, OpenLines<OpenFileSource<SmiTableSource>>,
                             write::kSmiTableWriters};

}  // namespace ww::ingest
