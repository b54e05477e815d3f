// The DCGM field table (telemetry/fields.h) is the one list of fields: its names are unique, the
// Prometheus client fetches every row, what the DCGM writers write the readers read back, and
// every range is one a reading can fall in.
#include "telemetry/fields.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "telemetry/ingest/dcgm_exporter.h"
#include "telemetry/ingest/prom_client.h"
#include "telemetry/ingest/prom_json.h"
#include "telemetry/sim/output_format.h"
#include "telemetry/write/sample_writers.h"

namespace ww {
namespace {

using ::testing::HasSubstr;

TEST(DcgmFields, EveryNameIsUniqueAndFoundByIndex) {
  std::set<std::string> names;
  const auto fields = DcgmFields();
  ASSERT_FALSE(fields.empty());
  for (size_t i = 0; i < fields.size(); ++i) {
    const std::string name = fields[i].name;
    EXPECT_TRUE(names.insert(name).second) << name << " is in the table twice";
    EXPECT_EQ(name.rfind(kDcgmFieldPrefix, 0), 0u) << name;
    EXPECT_EQ(DcgmFieldIndex(name), static_cast<int>(i)) << name;
    EXPECT_GT(fields[i].id, 0) << name;
    EXPECT_NE(std::string(fields[i].unit), "") << name;
  }
  EXPECT_EQ(DcgmFieldIndex("DCGM_FI_DEV_NOT_A_FIELD"), -1);
  EXPECT_EQ(DcgmFieldIndex(""), -1);
}

TEST(DcgmFields, MembersAndKindsAgree) {
  for (const DcgmFieldDef& f : DcgmFields()) {
    const bool needs_member =
        f.kind != DcgmFieldKind::kEnergy && f.kind != DcgmFieldKind::kReasons &&
        f.kind != DcgmFieldKind::kFbFree && f.kind != DcgmFieldKind::kFbReserved;
    EXPECT_EQ(f.member != nullptr, needs_member) << f.name;
    if (f.member != nullptr) {
      // The first row of a member is the one fetched and written for it.
      const DcgmFieldDef& first = DcgmFieldOf(f.member);
      EXPECT_EQ(first.member, f.member) << f.name;
      EXPECT_LE(&first, &f) << f.name;
    }
    EXPECT_LE(&DcgmFieldById(f.id), &f) << f.name;
  }
}

TEST(DcgmFields, DmonTagsAreUniqueAndFindTheirRow) {
  std::set<std::string> tags;
  for (const DcgmFieldDef& f : DcgmFields()) {
    if (f.dmon_tag == nullptr) continue;
    EXPECT_TRUE(tags.insert(f.dmon_tag).second) << f.dmon_tag;
    EXPECT_EQ(DcgmFieldByDmonTag(f.dmon_tag), &f) << f.dmon_tag;
    // A dmon column is read into a member or is the energy counter.
    EXPECT_TRUE(f.member != nullptr || f.kind == DcgmFieldKind::kEnergy) << f.dmon_tag;
  }
  EXPECT_EQ(DcgmFieldByDmonTag("NOPE"), nullptr);
  EXPECT_EQ(DcgmFieldByDmonTag("power"), nullptr);  // callers pass the tag upper case
}

// A field added to the table is fetched by `triage --prometheus` and by fleet: the query's
// __name__ alternation is exactly the table's names.
TEST(DcgmFields, PrometheusQueryFetchesExactlyTheTable) {
  const std::string regex = ingest::DcgmMetricRegex();
  std::set<std::string> fetched;
  size_t start = 0;
  for (;;) {
    const size_t bar = regex.find('|', start);
    const std::string name = regex.substr(start, bar - start);
    EXPECT_TRUE(fetched.insert(name).second) << name << " fetched twice";
    if (bar == std::string::npos) break;
    start = bar + 1;
  }
  std::set<std::string> table;
  for (const DcgmFieldDef& f : DcgmFields()) table.insert(f.name);
  EXPECT_EQ(fetched, table);
}

TEST(DcgmFields, RangesAreSaneAndThereIsOnePowerCap) {
  for (const DcgmFieldDef& f : DcgmFields()) {
    EXPECT_TRUE(std::isfinite(f.range.lo) && std::isfinite(f.range.hi)) << f.name;
    EXPECT_LT(f.range.lo, f.range.hi) << f.name;
    EXPECT_LE(f.range.lo, 0) << f.name << ": 0 (idle, off) must be plausible";
    EXPECT_GT(f.range.hi, 1) << f.name;
    if (std::string(f.unit) == "W") {
      EXPECT_EQ(f.range.lo, kPowerRangeW.lo) << f.name;
      EXPECT_EQ(f.range.hi, kPowerRangeW.hi) << f.name;
    }
  }
  EXPECT_EQ(DcgmFieldOf(&GpuSample::power_w).range.hi, 5000);
  EXPECT_EQ(DcgmFieldOf(&GpuSample::util_gpu_pct).range.hi, 100);
}

TEST(DcgmFields, ExporterOrderIsContiguousWithAHelpTextEach) {
  const auto written = DcgmExporterFields();
  ASSERT_FALSE(written.empty());
  for (size_t i = 0; i < written.size(); ++i) {
    EXPECT_EQ(written[i]->exporter_order, static_cast<int>(i + 1)) << written[i]->name;
    ASSERT_NE(written[i]->help, nullptr) << written[i]->name;
    EXPECT_NE(std::string(written[i]->help), "") << written[i]->name;
  }
  size_t unwritten = 0;
  for (const DcgmFieldDef& f : DcgmFields()) {
    if (f.exporter_order == 0) {
      ++unwritten;
      EXPECT_EQ(f.help, nullptr) << f.name;
    }
  }
  EXPECT_EQ(written.size() + unwritten, DcgmFields().size());
}

// Writes one tick with every reading the DCGM writers write, in the simulate --format `name`.
std::string WriteOneTick(const char* name, const GpuSample& s) {
  auto format = sim::ParseOutputFormat(name);
  EXPECT_TRUE(format.ok()) << name;
  if (!format.ok()) return "";
  char* buf = nullptr;
  size_t len = 0;
  std::FILE* out = open_memstream(&buf, &len);
  write::WriterContext ctx;
  ctx.hosts = {"node1"};
  ctx.model_name = "NVIDIA H100 80GB HBM3";
  ctx.interval_ms = 1000;
  ctx.uuid = [](GpuKey k) { return "GPU-" + std::to_string(k.gpu); };
  auto w = (*format)->writer->make(out, ctx);
  EXPECT_NE(w, nullptr);
  w->WriteTick({s});
  EXPECT_TRUE(w->Finish().ok());
  std::fclose(out);
  std::string text(buf, len);
  std::free(buf);
  return text;
}

// A reading for every field the DCGM writers write, each a value its printed form carries
// exactly (integers for integer fields, sixteenths for doubles) and inside its range.
GpuSample FullSample() {
  GpuSample s;
  s.timestamp_ms = 1763465360000;
  for (const DcgmFieldDef* f : DcgmExporterFields()) {
    if (f->member == nullptr) continue;
    s.*f->member =
        f->printed == DcgmPrinted::kInt ? 40.0 + f->exporter_order : f->exporter_order / 16.0;
  }
  s.mem_total_mib = 81559;  // written as free = total - used
  s.clock_event_reasons = 4;
  return s;
}

// What the dcgm-exporter writer writes, the dcgm-exporter reader reads back: every name the
// writer uses is a row the reader knows, with the same value.
TEST(DcgmFields, ExporterWriterNamesRoundTripThroughTheReader) {
  const GpuSample in = FullSample();
  const std::string text = WriteOneTick("dcgm-exporter", in);
  for (const DcgmFieldDef* f : DcgmExporterFields()) {
    EXPECT_THAT(text, HasSubstr(fmt::format("# HELP {} {}\n", f->name, f->help)));
  }
  ingest::DcgmScrapeDecoder decoder(0);
  size_t pos = 0;
  int read = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    const std::string_view line(text.data() + pos, nl - pos);
    pos = nl + 1;
    std::string why;
    const auto r = decoder.Line(line, &why);
    if (line.rfind(kDcgmFieldPrefix, 0) == 0) {
      EXPECT_EQ(r, ingest::DcgmScrapeDecoder::LineResult::kRead) << line << ": " << why;
      ++read;
    }
  }
  EXPECT_EQ(read, static_cast<int>(DcgmExporterFields().size()));
  std::vector<GpuSample> out;
  decoder.End(in.timestamp_ms, &out);
  ASSERT_EQ(out.size(), 1u);
  const GpuSample& back = out[0];
  for (const DcgmFieldDef* f : DcgmExporterFields()) {
    if (f->member == nullptr) continue;
    EXPECT_EQ(back.*f->member, in.*f->member) << f->name;
  }
  EXPECT_EQ(back.clock_event_reasons, in.clock_event_reasons);
  EXPECT_EQ(back.mem_total_mib, in.mem_total_mib);  // used + free
  const std::vector<std::string> fields_read = decoder.fields_read();
  EXPECT_EQ(fields_read.size(), DcgmExporterFields().size());
}

// The same through Prometheus: the prometheus-json writer's series read back by the Prometheus
// API reader, every written field with the value written.
TEST(DcgmFields, PrometheusJsonWriterRoundTripsThroughTheReader) {
  const GpuSample in = FullSample();
  const std::string text = WriteOneTick("prometheus-json", in);
  ingest::PromJsonDecoder decoder;
  ASSERT_TRUE(decoder.AddDocuments(text, "written").ok());
  EXPECT_EQ(decoder.dcgm_series(), DcgmExporterFields().size());
  auto source = decoder.Finish("node1");
  ASSERT_TRUE(source.ok()) << source.status().message();
  std::vector<GpuSample> out;
  for (int i = 0; i < 4; ++i) ASSERT_TRUE((*source)->Next(&out).ok());
  ASSERT_EQ(out.size(), 1u);
  for (const DcgmFieldDef* f : DcgmExporterFields()) {
    if (f->member == nullptr) continue;
    EXPECT_EQ(out[0].*f->member, in.*f->member) << f->name;
  }
  EXPECT_EQ(out[0].clock_event_reasons, in.clock_event_reasons);
  EXPECT_EQ(out[0].mem_total_mib, in.mem_total_mib);
}

// The dmon writer's column tags are the dmon reader's: every tag in its header is a table row
// read into the member the writer took the value from.
TEST(DcgmFields, DmonWriterTagsAreTheReadersTags) {
  const std::string text = WriteOneTick("dcgmi-dmon", FullSample());
  const std::string header = text.substr(0, text.find('\n'));
  ASSERT_EQ(header.rfind("# Entity", 0), 0u) << header;
  size_t tags = 0;
  size_t pos = std::string("# Entity").size();
  while (pos < header.size()) {
    const size_t start = header.find_first_not_of(' ', pos);
    if (start == std::string::npos) break;
    const size_t end = std::min(header.find(' ', start), header.size());
    const std::string tag = header.substr(start, end - start);
    pos = end;
    const DcgmFieldDef* f = DcgmFieldByDmonTag(tag);
    ASSERT_NE(f, nullptr) << tag;
    EXPECT_NE(f->member, nullptr) << tag;
    ++tags;
  }
  EXPECT_GE(tags, 9u);
}

}  // namespace
}  // namespace ww
