#include "telemetry/ingest/dcgmi_dmon.h"

#include <fmt/format.h>

#include <cmath>

#include "core/strings.h"
#include "core/timefmt.h"
#include "telemetry/fields.h"
#include "telemetry/ingest/format.h"

namespace ww::ingest {
namespace {

enum class Target : uint8_t { kIgnore, kDouble, kEnergy };

struct Column {
  std::string name;
  Target target = Target::kIgnore;
  std::optional<double> GpuSample::*member = nullptr;
  double lo = 0, hi = 0;  // the field's plausible range
};

// A column by its tag, through the DCGM field table: a field with a sample member is read into
// it, the energy counter into energy_mj, anything else is ignored.
Column MapTag(std::string_view tag) {
  Column c;
  c.name = std::string(tag);
  const std::string upper = [&] {
    std::string u(tag);
    for (char& ch : u) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    return u;
  }();
  const DcgmFieldDef* f = DcgmFieldByDmonTag(upper);
  if (f == nullptr) return c;
  c.lo = f->range.lo;
  c.hi = f->range.hi;
  if (f->kind == DcgmFieldKind::kEnergy) {
    c.target = Target::kEnergy;
  } else if (f->member != nullptr) {
    c.target = Target::kDouble;
    c.member = f->member;
  }
  return c;
}

class DcgmiDmonSource final : public FileSource {
 public:
  DcgmiDmonSource(std::unique_ptr<LineReader> reader, const std::string& host, uint16_t host_index,
                  const ReaderOptions& options)
      : FileSource(std::move(reader), host, host_index, options.limits), options_(options) {}

  Status Init() {
    std::string_view line;
    auto found = NextLineWhere(reader(), &line, IsDcgmiDmonHeader);
    if (!found.ok()) return found.status();
    if (!*found) {
      return Status::InvalidInput(fmt::format("{}:{}: no `# Entity ...` header of a dcgmi dmon log",
                                              path(), reader().line_number()));
    }
    header_line_ = reader().line_number();
    SetHeader(line);
    if (!has_reading_) {
      return Status::InvalidInput(fmt::format(
          "{}:{}: dcgmi dmon header has none of POWER, GPUTL, GRACT (fields 155, 203, 1001): "
          "nothing to triage; log with `dcgmi dmon -e 155,203,1001,...`",
          path(), header_line_));
    }
    return Status::Ok();
  }

  std::string Describe() const override {
    std::string read, ignored;
    for (const Column& c : columns_) {
      std::string& dst = c.target == Target::kIgnore ? ignored : read;
      if (!dst.empty()) dst += ' ';
      dst += c.name;
    }
    return fmt::format("dcgmi dmon: fields {}{}{}", read, ignored.empty() ? "" : "; ignored ",
                       ignored);
  }

 protected:
  Status ReadBatch(std::vector<GpuSample>* out, bool* at_end) override {
    std::string_view line;
    bool complete;
    for (;;) {
      auto r = reader().Next(&line, &complete);
      if (!r.ok()) return r.status();
      if (!*r) {
        FlushTick(out);
        *at_end = true;
        return Status::Ok();
      }
      const int64_t n = reader().line_number();
      std::string_view t = TrimSpace(line);
      if (t.empty()) continue;
      if (t.front() == '#') {
        if (IsDcgmiDmonHeader(t)) SetHeader(t);
        continue;
      }
      if (line.find('\0') != std::string_view::npos) {
        return Status::InvalidInput(
            fmt::format("{}:{}: binary data in a dcgmi dmon log", path(), n));
      }
      tokens_ = SplitWhitespace(t);
      if (!tokens_.empty() && (tokens_[0] == "Id" || tokens_[0] == "ID")) continue;  // units
      CountRecord();
      const size_t want = 2 + columns_.size();
      if (tokens_.size() < want || tokens_.size() > want + 2) {
        if (!complete) {
          Skip("truncated last line skipped", fmt::format("line {}", n));
          continue;
        }
        WW_RETURN_IF_ERROR(Bad("row with wrong number of fields skipped",
                               fmt::format("line {}: {} fields, header (line {}) has {}", n,
                                           tokens_.size(), header_line_, want)));
        continue;
      }
      const size_t lead = tokens_.size() - want;
      std::optional<int64_t> row_ms;
      if (lead > 0) {
        row_ms = ParseLeadingTime(lead);
        if (!row_ms) {
          WW_RETURN_IF_ERROR(
              Bad("row with unparseable timestamp skipped",
                  fmt::format("line {}: '{}' is not a timestamp", n, Excerpt(tokens_[0]))));
          continue;
        }
      } else if (options_.interval_ms <= 0) {
        return Status::InvalidInput(fmt::format(
            "{}:{}: dcgmi dmon rows carry no timestamps; pass --interval-ms with the -d of the "
            "dcgmi dmon command (its default is 1000)",
            path(), n));
      }
      const std::string_view entity = tokens_[lead];
      if (entity != "GPU") {
        Skip("rows of other DCGM entities skipped (only GPU rows are read)",
             fmt::format("line {}: {} {}", n, Excerpt(entity, 16), Excerpt(tokens_[lead + 1], 8)));
        continue;
      }
      double idx = 0;
      if (ParseNumber(tokens_[lead + 1], &idx) != Parse::kOk || idx < 0 || idx >= 4096 ||
          idx != std::floor(idx)) {
        WW_RETURN_IF_ERROR(
            Bad("row with a bad GPU id skipped",
                fmt::format("line {}: '{}' is not a GPU id", n, Excerpt(tokens_[lead + 1], 16))));
        continue;
      }
      GpuSample s;
      s.key.host = host_index();
      s.key.gpu = static_cast<uint16_t>(idx);
      bool row_bad = false;
      std::string bad_msg;
      for (size_t i = 0; i < columns_.size(); ++i) {
        const Column& c = columns_[i];
        if (c.target == Target::kIgnore) continue;
        const std::string_view f = tokens_[lead + 2 + i];
        double v = 0;
        Parse p = ParseNumber(f, &v);
        if (p == Parse::kOk && c.target == Target::kEnergy) {
          if (v < c.lo || v > c.hi) {
            p = Parse::kImplausible;
          } else {
            s.energy_mj = static_cast<uint64_t>(v);
            continue;
          }
        }
        if (p == Parse::kOk) {
          if (v < c.lo || v > c.hi) p = Parse::kImplausible;
        }
        if (p == Parse::kOk) {
          s.*c.member = v;
        } else if (p != Parse::kMissing) {
          row_bad = true;
          bad_msg = fmt::format("line {}: {}: '{}' is {}", n, c.name, Excerpt(f, 24),
                                p == Parse::kBad ? "not a number" : "out of the plausible range");
        }
      }
      // Without GPUTL, GRACT (the engine's busy share of the interval) stands in for utilization.
      if (gract_is_util_ && !s.util_gpu_pct && s.gr_engine_active_ratio) {
        s.util_gpu_pct = std::min(100.0, *s.gr_engine_active_ratio * 100);
      }
      if (row_bad) {
        if (!complete) {
          Skip("truncated last line skipped", fmt::format("line {}", n));
          continue;
        }
        WW_RETURN_IF_ERROR(Bad("malformed value (field left absent)", bad_msg));
      }
      // Tick boundaries: a new timestamp, or (without timestamps) a GPU seen again in this tick.
      bool new_tick = false;
      if (row_ms) {
        new_tick = !tick_.empty() && *row_ms != tick_ms_;
      } else {
        for (const auto& [p, l] : tick_) new_tick |= p.key.gpu == s.key.gpu;
      }
      bool flushed = false;
      if (new_tick) {
        FlushTick(out);
        flushed = true;
      }
      if (tick_.empty()) {
        if (row_ms) {
          tick_ms_ = *row_ms;
        } else {
          tick_ms_ = synthetic_ticks_++ * options_.interval_ms;
        }
      }
      s.timestamp_ms = tick_ms_;
      tick_.emplace_back(s, n);
      if (flushed) return Status::Ok();
    }
  }

 private:
  void SetHeader(std::string_view line) {
    std::string_view t = TrimSpace(line);
    t.remove_prefix(1);  // '#'
    auto tokens = SplitWhitespace(t);
    if (!tokens.empty()) tokens.erase(tokens.begin());  // "Entity"
    bool has_gputl = false;
    for (auto tok : tokens) has_gputl |= AsciiLower(tok) == "gputl";
    columns_.clear();
    has_reading_ = false;
    gract_is_util_ = false;
    for (auto tok : tokens) {
      columns_.push_back(MapTag(tok));
      const Column& c = columns_.back();
      has_reading_ |= c.member == &GpuSample::power_w || c.member == &GpuSample::util_gpu_pct;
      if (c.member == &GpuSample::gr_engine_active_ratio && !has_gputl) {
        gract_is_util_ = true;
        has_reading_ = true;
      }
    }
  }

  std::optional<int64_t> ParseLeadingTime(size_t lead) {
    std::string text(tokens_[0]);
    for (size_t i = 1; i < lead; ++i) text += ' ' + std::string(tokens_[i]);
    double v = 0;
    if (lead == 1 && ParseNumber(text, &v) == Parse::kOk && v > 0 && v < 1e14) {
      return static_cast<int64_t>(std::llround(v < 1e11 ? v * 1000 : v));
    }
    auto t = ParseTimestamp(text);
    if (!t) return std::nullopt;
    return t->unix_ms;
  }

  void FlushTick(std::vector<GpuSample>* out) {
    for (const auto& [s, line] : tick_) Accept(s, line, out);
    tick_.clear();
  }

  ReaderOptions options_;
  std::vector<Column> columns_;
  std::vector<std::string_view> tokens_;
  bool has_reading_ = false;
  bool gract_is_util_ = false;  // the header has GRACT but no GPUTL
  int64_t header_line_ = 0;
  std::vector<std::pair<GpuSample, int64_t>> tick_;
  int64_t tick_ms_ = 0;
  int64_t synthetic_ticks_ = 0;
};

}  // namespace

bool IsDcgmiDmonHeader(std::string_view line) {
  std::string_view t = TrimSpace(line);
  if (t.empty() || t.front() != '#') return false;
  t.remove_prefix(1);
  t = TrimSpace(t);
  return t.size() >= 6 && AsciiLower(t.substr(0, 6)) == "entity";
}

// --format dcgmi-dmon: recognized by its header (`#Entity ...`).
namespace {
constexpr DetectRule kDcgmiDmonDetect[] = {
    {20, DetectRule::kLine,
     [](const DetectLine& l) { return l.index == 0 && IsDcgmiDmonHeader(l.text); }},
};
}  // namespace

extern const Format kDcgmiDmonFormat;
const Format kDcgmiDmonFormat{"dcgmi-dmon", "dcgmi dmon text", kDcgmiDmonDetect,
                              OpenLines<OpenFileSource<DcgmiDmonSource>>, write::kDcgmiDmonWriters};

}  // namespace ww::ingest
