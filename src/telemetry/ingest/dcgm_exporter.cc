#include "telemetry/ingest/dcgm_exporter.h"

#include <fmt/format.h>

#include <cmath>

#include "core/strings.h"
#include "telemetry/fields.h"
#include "telemetry/ingest/format.h"

namespace ww::ingest {
namespace {

// A sample line of one of the other vendors' exporter series (fields.h, ExporterSeries).
bool IsOtherVendorSampleLine(std::string_view line) {
  if (!IsPromSampleLine(line, "gpu_") && !IsPromSampleLine(line, "habanalabs_")) return false;
  const std::string_view t = TrimSpace(line);
  const size_t end = t.find_first_of("{ \t");
  return ExporterSeriesByName(t.substr(0, end)) != nullptr;
}

using Kind = DcgmFieldKind;

}  // namespace

const DcgmScrapeDecoder::Slot& DcgmScrapeDecoder::Resolve(std::string_view block) {
  auto it = slots_.find(std::string(block));
  if (it != slots_.end()) return it->second;
  Slot slot;
  std::string err;
  scratch_.clear();
  if (!ParsePromLabels(block, &label_buf_, &scratch_, &err)) {
    slot.skip = true;
    slot.skip_reason = "malformed labels: " + err;
    return slots_.emplace(std::string(block), slot).first->second;
  }
  std::string_view gpu, uuid, model, bus, host, mig;
  std::map<std::string, std::string> extra;
  for (const PromLabel& l : label_buf_) {
    if (l.name == "gpu" || l.name == "gpu_id") gpu = l.value;  // gpu_id: AMD's exporter
    if (l.name == "UUID") uuid = l.value;
    if (l.name == "modelName" || l.name == "card_model") model = l.value;
    if (l.name == "pci_bus_id") bus = l.value;
    if (l.name == "Hostname" || l.name == "hostname") host = l.value;
    if (l.name == "GPU_I_ID") mig = l.value;
    for (const std::string& k : kept_labels_) {
      if (l.name == k && !l.value.empty()) extra[k] = std::string(l.value);
    }
  }
  if (!mig.empty()) {
    slot.skip = true;
    slot.skip_reason = "series of MIG instances skipped (GPU_I_ID label)";
    return slots_.emplace(std::string(block), slot).first->second;
  }
  if (!host.empty()) {
    if (hostname_.empty()) hostname_ = ValidUtf8(host);
    if (ValidUtf8(host) != hostname_) {
      slot.skip = true;
      slot.skip_reason = fmt::format(
          "series of another host skipped (file is host '{}'; give each host a file)", hostname_);
      return slots_.emplace(std::string(block), slot).first->second;
    }
  }
  // Identity, per host: the gpu label when it is an index, else the UUID, else the PCI bus id.
  double idx = 0;
  const bool gpu_usable = !gpu.empty() && ParseNumber(gpu, &idx) == Parse::kOk && idx >= 0 &&
                          idx < kMaxGpuIndex && idx == std::floor(idx);
  std::string identity;
  if (gpu_usable) {
    identity = fmt::format("gpu:{}", static_cast<int>(idx));
  } else if (!uuid.empty()) {
    identity = "uuid:" + std::string(uuid);
  } else if (!bus.empty()) {
    identity = "bus:" + std::string(bus);
  } else {
    slot.skip = true;
    slot.skip_reason = "series without a gpu or UUID label skipped";
    return slots_.emplace(std::string(block), slot).first->second;
  }
  auto [known, fresh] = gpu_by_identity_.try_emplace(identity, 0);
  if (fresh) {
    const bool own_index = gpu_usable && !index_taken_[static_cast<size_t>(idx)];
    if (!own_index) {
      // Numbered from the top down, where no gpu label of a real host reaches: a GPU known by
      // UUID must not share an index (and so every sample) with a labelled one.
      while (next_unlabelled_index_ >= 0 && index_taken_[next_unlabelled_index_]) {
        --next_unlabelled_index_;
      }
      if (next_unlabelled_index_ < 0) {
        gpu_by_identity_.erase(known);
        slot.skip = true;
        slot.skip_reason = "series of a GPU beyond 4096 on one host skipped";
        return slots_.emplace(std::string(block), slot).first->second;
      }
    }
    known->second =
        static_cast<uint16_t>(own_index ? static_cast<int>(idx) : next_unlabelled_index_);
    index_taken_[known->second] = true;
    if (!own_index) {
      const std::string label =
          gpu.empty()
              ? std::string("no gpu label")
              : fmt::format("gpu label '{}' {}", ValidUtf8(gpu),
                            gpu_usable ? "already taken by another GPU" : "not an index 0..4095");
      notes_.emplace_back(
          "GPU without a usable gpu label identified by UUID or PCI bus id",
          fmt::format("{}{} ({}): named GPU{}", host.empty() ? "" : ValidUtf8(host) + ": ",
                      !uuid.empty()  ? "UUID " + ValidUtf8(uuid)
                      : !bus.empty() ? "pci_bus_id " + ValidUtf8(bus)
                                     : std::string("a GPU"),
                      label, known->second));
    }
  }
  slot.gpu = known->second;
  GpuInfo& info = infos_[slot.gpu];
  info.key = GpuKey{host_index_, slot.gpu};
  if (!model.empty()) info.name = ValidUtf8(model);
  if (!uuid.empty()) info.uuid = ValidUtf8(uuid);
  if (!bus.empty()) info.pci_bus_id = ValidUtf8(bus);
  auto& labels = labels_[slot.gpu];
  if (!host.empty()) labels["hostname"] = ValidUtf8(host);
  for (auto& [k, v] : extra) labels[k] = ValidUtf8(v);
  return slots_.emplace(std::string(block), slot).first->second;
}

DcgmScrapeDecoder::LineResult DcgmScrapeDecoder::Series(std::string_view line, SeriesRef* ref,
                                                        std::string* why) {
  const bool dcgm = IsPromSampleLine(line, kDcgmFieldPrefix);
  if (!dcgm && !IsOtherVendorSampleLine(line)) return LineResult::kIgnored;
  std::string err;
  if (!ParsePromLine(line, &sample_, &err)) {
    *why = err;
    return LineResult::kMalformed;
  }
  int field = -1;
  ref->scale = 1;
  if (dcgm) {
    field = DcgmFieldIndex(sample_.name);
  } else if (const ExporterSeriesDef* other = ExporterSeriesByName(sample_.name)) {
    field = DcgmFieldIndex(other->dcgm_name);
    ref->scale = other->scale;
  }
  if (field < 0) return LineResult::kIgnored;
  const Slot& slot = Resolve(sample_.label_block);
  if (slot.skip) {
    *why = slot.skip_reason;
    return slot.skip_reason.rfind("malformed", 0) == 0 ? LineResult::kMalformed
                                                       : LineResult::kSkipped;
  }
  ref->field = field;
  ref->gpu = slot.gpu;
  return LineResult::kRead;
}

DcgmScrapeDecoder::LineResult DcgmScrapeDecoder::Line(std::string_view line, std::string* why) {
  SeriesRef ref;
  const LineResult r = Series(line, &ref, why);
  if (r != LineResult::kRead) return r;
  std::optional<int64_t> ts = sample_.timestamp_ms;
  // The exposition format stamps in ms; 1e8..1e11 is 1970-01-02..1973-03-03 as ms but 1973..5138
  // as seconds: a writer that used seconds (a script's `date +%s`). Read as seconds, and said.
  if (ts && *ts >= 100'000'000 && *ts < 100'000'000'000) {
    if (!seconds_noted_) {
      seconds_noted_ = true;
      notes_.emplace_back("line timestamps in seconds (the format's unit is ms) read as seconds",
                          fmt::format("{} read as {} ms", *ts, *ts * 1000));
    }
    *ts *= 1000;
  }
  return Store(ref, ts, sample_.value, why);
}

DcgmScrapeDecoder::LineResult DcgmScrapeDecoder::Store(const SeriesRef& ref,
                                                       std::optional<int64_t> timestamp_ms,
                                                       double value, std::string* why) {
  const int field = ref.field;
  if (!slots_in_scrape_.empty() && timestamp_ms != scrape_ts_) {
    return LineResult::kNewTimestamp;
  }
  auto [pit, inserted] = partial_.try_emplace(ref.gpu);
  Partial& p = pit->second;
  const uint64_t bit = uint64_t{1} << field;
  if (p.seen & bit) return LineResult::kRepeated;
  if (slots_in_scrape_.empty()) scrape_ts_ = timestamp_ms;
  if (p.seen == 0) slots_in_scrape_.push_back(ref.gpu);
  p.seen |= bit;
  const DcgmFieldDef& def = DcgmFields()[static_cast<size_t>(field)];
  const double v = value * ref.scale;
  if (std::isnan(v)) return LineResult::kRead;  // no reading: absent, never 0
  if (!(v >= def.range.lo && v <= def.range.hi)) {
    *why = fmt::format("{}: {} is out of the plausible range", def.name, v);
    return LineResult::kMalformed;
  }
  fields_used_ |= bit;
  GpuSample& s = p.sample;
  switch (def.kind) {
    case Kind::kValue:
      s.*def.member = v;
      break;
    case Kind::kUtil:
      s.*def.member = v;
      p.util_seen = true;
      break;
    case Kind::kEnforcedLimit:
      s.*def.member = v;
      p.enforced_limit = true;
      break;
    case Kind::kMgmtLimit:
      if (!p.enforced_limit) s.*def.member = v;
      break;
    case Kind::kEnergy:
      s.energy_mj = static_cast<uint64_t>(v);
      scrape_had_energy_ = true;
      break;
    case Kind::kReasons:
      s.clock_event_reasons = static_cast<uint64_t>(v);
      break;
    case Kind::kFbFree:
      p.fb_free = v;
      break;
    case Kind::kFbReserved:
      p.fb_reserved = v;
      break;
    case Kind::kGrActive:
      p.gr_active = v;
      s.*def.member = v;
      break;
  }
  return LineResult::kRead;
}

void DcgmScrapeDecoder::End(int64_t at_ms, std::vector<GpuSample>* out) {
  for (auto& [gpu, p] : partial_) {
    if (p.seen == 0) continue;
    GpuSample s = p.sample;
    s.key = GpuKey{host_index_, gpu};
    s.timestamp_ms = at_ms;
    if (!s.mem_total_mib && s.mem_used_mib && p.fb_free) {
      s.mem_total_mib = *s.mem_used_mib + *p.fb_free + p.fb_reserved.value_or(0);
    }
    if (!p.util_seen && p.gr_active) s.util_gpu_pct = std::min(100.0, *p.gr_active * 100);
    out->push_back(s);
  }
  partial_.clear();
  slots_in_scrape_.clear();
  scrape_ts_.reset();
  scrape_had_energy_ = false;
}

std::vector<std::string> DcgmScrapeDecoder::fields_read() const {
  std::vector<std::string> out;
  const auto fields = DcgmFields();
  for (size_t i = 0; i < fields.size(); ++i) {
    if (fields_used_ & (uint64_t{1} << i)) {
      out.push_back(std::string(fields[i].name).substr(kDcgmFieldPrefix.size()));
    }
  }
  return out;
}

namespace {

bool SameReadings(const std::vector<GpuSample>& a, const std::vector<GpuSample>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const GpuSample& x = a[i];
    const GpuSample& y = b[i];
    if (x.key != y.key || x.energy_mj != y.energy_mj || x.power_w != y.power_w ||
        x.util_gpu_pct != y.util_gpu_pct || x.mem_used_mib != y.mem_used_mib ||
        x.temperature_c != y.temperature_c || x.sm_clock_mhz != y.sm_clock_mhz ||
        x.pcie_tx_bytes_per_s != y.pcie_tx_bytes_per_s) {
      return false;
    }
  }
  return true;
}

class DcgmExporterSource final : public FileSource {
 public:
  DcgmExporterSource(std::unique_ptr<LineReader> reader, const std::string& host,
                     uint16_t host_index, const ReaderOptions& options)
      : FileSource(std::move(reader), host, host_index, options.limits),
        options_(options),
        decoder_(host_index) {}

  std::string Describe() const override {
    std::string fields;
    for (const auto& f : decoder_.fields_read()) fields += (fields.empty() ? "" : " ") + f;
    return fmt::format("dcgm-exporter text: {}{}",
                       fields.empty() ? "(fields found as read)" : fields,
                       options_.interval_ms > 0
                           ? fmt::format("; scrapes without timestamps {} ms apart (--interval-ms)",
                                         options_.interval_ms)
                           : std::string());
  }

 protected:
  Status ReadBatch(std::vector<GpuSample>* out, bool* at_end) override {
    for (;;) {
      std::string_view line;
      bool complete = true;
      if (held_) {
        line = held_line_;
      } else {
        auto r = reader().Next(&line, &complete);
        if (!r.ok()) return r.status();
        if (!*r) {
          *at_end = true;
          return CloseScrape(out);
        }
        line_ = reader().line_number();
      }
      const bool was_held = held_;
      held_ = false;
      std::string why;
      const auto res = decoder_.Line(line, &why);
      for (auto& [kind, detail] : decoder_.TakeNotes()) {
        Skip(kind, fmt::format("line {}: {}", line_, detail));
      }
      switch (res) {
        case DcgmScrapeDecoder::LineResult::kIgnored:
          if (!was_held && line.find('\0') != std::string_view::npos) {
            return Status::InvalidInput(
                fmt::format("{}:{}: binary data in a dcgm-exporter log", path(), line_));
          }
          break;
        case DcgmScrapeDecoder::LineResult::kRead:
          if (!was_held) CountRecord();
          break;
        case DcgmScrapeDecoder::LineResult::kSkipped:
          CountRecord();
          Skip(why, fmt::format("line {}", line_));
          break;
        case DcgmScrapeDecoder::LineResult::kMalformed:
          CountRecord();
          if (!complete) {
            Skip("truncated last line skipped", fmt::format("line {}", line_));
            break;
          }
          WW_RETURN_IF_ERROR(Bad("malformed DCGM line skipped",
                                 fmt::format("line {}: {}: '{}'", line_, why, Excerpt(line, 60))));
          break;
        case DcgmScrapeDecoder::LineResult::kRepeated:
        case DcgmScrapeDecoder::LineResult::kNewTimestamp: {
          CountRecord();
          held_line_.assign(line);
          held_ = true;
          const size_t before = out->size();
          WW_RETURN_IF_ERROR(CloseScrape(out));
          if (out->size() > before) return Status::Ok();
          break;
        }
      }
    }
  }

 private:
  Status CloseScrape(std::vector<GpuSample>* out) {
    if (decoder_.empty()) return Status::Ok();
    const auto ts = decoder_.scrape_timestamp_ms();
    const bool had_energy = decoder_.scrape_had_energy();
    int64_t at_ms = 0;
    if (ts) {
      at_ms = *ts;
    } else {
      if (scrapes_ > 0 && options_.interval_ms <= 0) {
        // Might still be the same body printed twice; decide after decoding it.
      }
      at_ms = scrapes_ * std::max<int64_t>(options_.interval_ms, 0);
    }
    std::vector<GpuSample> scrape;
    decoder_.End(at_ms, &scrape);
    if (!ts && had_energy && scrapes_ > 0 && SameReadings(scrape, last_scrape_)) {
      Skip("scrape identical to the one before skipped (the same body printed twice)",
           fmt::format("line {}", scrape_start_line_));
      scrape_start_line_ = line_;
      return Status::Ok();
    }
    if (!ts && scrapes_ > 0 && options_.interval_ms <= 0) {
      return Status::InvalidInput(fmt::format(
          "{}:{}: a second dcgm-exporter scrape without timestamps; pass --interval-ms with the "
          "scrape interval (dcgm-exporter collects every 30000 ms by default)",
          path(), scrape_start_line_));
    }
    ++scrapes_;
    scrape_start_line_ = line_;
    last_scrape_ = scrape;
    for (GpuSample& s : scrape) {
      Accept(s, line_, out);
      const auto& infos = decoder_.infos();
      if (auto it = infos.find(s.key.gpu); it != infos.end()) {
        GpuInfo& info = Info(s.key.gpu);
        if (info.name.empty()) info = it->second;
      }
      const auto& labels = decoder_.labels();
      if (auto it = labels.find(s.key.gpu); it != labels.end()) {
        for (const auto& [k, v] : it->second) SetLabel(s.key.gpu, k, v);
      }
    }
    return Status::Ok();
  }

  ReaderOptions options_;
  DcgmScrapeDecoder decoder_;
  bool held_ = false;
  std::string held_line_;
  int64_t line_ = 0;
  int64_t scrapes_ = 0;
  int64_t scrape_start_line_ = 1;
  std::vector<GpuSample> last_scrape_;
};

}  // namespace

Result<OpenedFile> OpenDcgmExporter(std::unique_ptr<LineReader> reader, const std::string& host,
                                    uint16_t host_index, const ReaderOptions& options) {
  auto src = std::make_unique<DcgmExporterSource>(std::move(reader), host, host_index, options);
  OpenedFile f;
  f.file = src.get();
  f.source = std::move(src);
  return f;
}

// --format dcgm-exporter: recognized by a DCGM field's sample line anywhere in the first lines (a
// scrape may follow a page of other output), or one of another vendor's exporter series.
namespace {
constexpr DetectRule kDcgmExporterDetect[] = {
    {120, DetectRule::kLine,
     [](const DetectLine& l) { return IsPromSampleLine(l.text, kDcgmFieldPrefix); }},
    {121, DetectRule::kLine, [](const DetectLine& l) { return IsOtherVendorSampleLine(l.text); }},
};
}  // namespace

extern const Format kDcgmExporterFormat;
const Format kDcgmExporterFormat{"dcgm-exporter",
                                 "dcgm-exporter /metrics text (also AMD's device-metrics-exporter "
                                 "and Intel Gaudi's metric exporter)",
                                 kDcgmExporterDetect, OpenLines<OpenDcgmExporter>,
                                 write::kDcgmExporterWriters};

}  // namespace ww::ingest
