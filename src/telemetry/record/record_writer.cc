#include "telemetry/record/record_writer.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <nlohmann/json.hpp>

namespace ww::record {
namespace {

constexpr std::string_view kHeader =
    "timestamp, index, name, uuid, power.draw [W], power.limit [W], utilization.gpu [%], "
    "utilization.memory [%], clocks.current.sm [MHz], clocks.current.memory [MHz], "
    "temperature.gpu, memory.used [MiB], memory.total [MiB], pstate, "
    "clocks_event_reasons.sw_power_cap\n";

// NVML's clocksEventReasonSwPowerCap bit.
constexpr uint64_t kSwPowerCapBit = 0x4;

void LocalPrefix(int64_t secs, std::string* out) {
  const time_t t = static_cast<time_t>(secs);
  struct tm tm {};
  localtime_r(&t, &tm);
  char buf[32];
  const size_t n = std::strftime(buf, sizeof(buf), "%Y/%m/%d %H:%M:%S", &tm);
  out->assign(buf, n);
}

int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

}  // namespace

std::string_view NvsmiCsvHeader() { return kHeader; }

void AppendLocalNvsmiTimestamp(std::string& out, int64_t unix_ms) {
  const int64_t secs = FloorDiv(unix_ms, 1000);
  std::string prefix;
  LocalPrefix(secs, &prefix);
  out += prefix;
  fmt::format_to(std::back_inserter(out), ".{:03d}", static_cast<int>(unix_ms - secs * 1000));
}

Result<std::unique_ptr<RecordWriter>> RecordWriter::Open(const RecordWriterOptions& options) {
  std::unique_ptr<RecordWriter> w(new RecordWriter(options));
  WW_RETURN_IF_ERROR(w->OpenFile());
  return w;
}

RecordWriter::~RecordWriter() {
  if (fd_ >= 0) ::close(fd_);
}

Status RecordWriter::OpenFile() {
  fd_ = ::open(options_.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    return Status::IoError(
        fmt::format("cannot create {}: {}", options_.path, std::strerror(errno)));
  }
  size_ = 0;
  header_size_ = 0;
  if (options_.format == RecordFormat::kCsv) {
    WW_RETURN_IF_ERROR(WriteAll(kHeader));
    header_size_ = kHeader.size();
  }
  return Status::Ok();
}

Status RecordWriter::WriteAll(std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd_, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::IoError(fmt::format("writing {}: {}", options_.path, std::strerror(errno)));
    }
    data.remove_prefix(static_cast<size_t>(n));
    size_ += static_cast<uint64_t>(n);
  }
  return Status::Ok();
}

Status RecordWriter::Rotate() {
  ::close(fd_);
  fd_ = -1;
  const int keep = std::max(1, options_.keep_files);
  const std::string& p = options_.path;
  std::remove(fmt::format("{}.{}", p, keep).c_str());
  for (int k = keep - 1; k >= 1; --k) {
    std::rename(fmt::format("{}.{}", p, k).c_str(), fmt::format("{}.{}", p, k + 1).c_str());
  }
  if (std::rename(p.c_str(), fmt::format("{}.1", p).c_str()) != 0) {
    return Status::IoError(fmt::format("rotating {}: {}", p, std::strerror(errno)));
  }
  ++rotations_;
  return OpenFile();
}

Status RecordWriter::WriteTick(const std::vector<RecordRow>& rows) {
  buf_.clear();
  for (const RecordRow& row : rows) {
    const GpuSample& s = *row.sample;
    const int64_t secs = FloorDiv(s.timestamp_ms, 1000);
    if (secs != cached_second_) {
      LocalPrefix(secs, &cached_prefix_);
      cached_second_ = secs;
    }
    const int ms = static_cast<int>(s.timestamp_ms - secs * 1000);
    const std::string_view name = row.info != nullptr ? std::string_view(row.info->name) : "";
    const std::string_view uuid = row.info != nullptr ? std::string_view(row.info->uuid) : "";

    if (options_.format == RecordFormat::kCsv) {
      auto out = std::back_inserter(buf_);
      fmt::format_to(out, "{}.{:03d}, {}, {}, {}", cached_prefix_, ms, s.key.gpu, name, uuid);
      auto value = [&](const std::optional<double>& v, uint32_t col, const char* spec,
                       const char* unit) {
        buf_ += ", ";
        if (row.lost) {
          buf_ += "[GPU is lost]";
        } else if (v) {
          fmt::format_to(out, fmt::runtime(spec), *v);
          buf_ += unit;
        } else if (!row.stale && (row.unsupported_mask & col) != 0) {
          buf_ += "[Not Supported]";
        } else {
          buf_ += "[N/A]";
        }
      };
      value(s.power_w, kColPowerDraw, "{:.2f}", " W");
      value(s.power_limit_w, kColPowerLimit, "{:.2f}", " W");
      value(s.util_gpu_pct, kColUtilGpu, "{:.0f}", " %");
      value(s.util_mem_pct, kColUtilMem, "{:.0f}", " %");
      value(s.sm_clock_mhz, kColSmClock, "{:.0f}", " MHz");
      value(s.mem_clock_mhz, kColMemClock, "{:.0f}", " MHz");
      value(s.temperature_c, kColTemperature, "{:.0f}", "");
      value(s.mem_used_mib, kColMemUsed, "{:.0f}", " MiB");
      value(s.mem_total_mib, kColMemTotal, "{:.0f}", " MiB");
      std::optional<double> pstate;
      if (s.pstate) pstate = *s.pstate;
      value(pstate, kColPstate, "P{:.0f}", "");
      buf_ += ", ";
      if (row.lost) {
        buf_ += "[GPU is lost]";
      } else if (s.clock_event_reasons) {
        buf_ += (*s.clock_event_reasons & kSwPowerCapBit) != 0 ? "Active" : "Not Active";
      } else if (!row.stale && (row.unsupported_mask & kColSwPowerCap) != 0) {
        buf_ += "[Not Supported]";
      } else {
        buf_ += "[N/A]";
      }
      buf_ += '\n';
      continue;
    }

    nlohmann::ordered_json j;
    j["timestamp"] = fmt::format("{}.{:03d}", cached_prefix_, ms);
    j["timestamp_ms"] = s.timestamp_ms;
    j["host"] = row.host;
    j["index"] = s.key.gpu;
    j["name"] = name;
    j["uuid"] = uuid;
    auto put = [&](const char* key, const auto& v) {
      if (v) {
        j[key] = *v;
      } else {
        j[key] = nullptr;
      }
    };
    put("power_w", s.power_w);
    put("power_instant_w", s.power_instant_w);
    put("power_mean_w", s.power_mean_w);
    put("power_limit_w", s.power_limit_w);
    put("energy_mj", s.energy_mj);
    put("util_gpu_pct", s.util_gpu_pct);
    put("util_mem_pct", s.util_mem_pct);
    put("sm_clock_mhz", s.sm_clock_mhz);
    put("mem_clock_mhz", s.mem_clock_mhz);
    put("clock_event_reasons", s.clock_event_reasons);
    put("temperature_c", s.temperature_c);
    put("mem_used_mib", s.mem_used_mib);
    put("mem_total_mib", s.mem_total_mib);
    put("pstate", s.pstate);
    put("pcie_tx_bytes_per_s", s.pcie_tx_bytes_per_s);
    put("pcie_rx_bytes_per_s", s.pcie_rx_bytes_per_s);
    put("nvlink_tx_bytes_per_s", s.nvlink_tx_bytes_per_s);
    put("nvlink_rx_bytes_per_s", s.nvlink_rx_bytes_per_s);
    put("sm_activity_ratio", s.sm_activity_ratio);
    put("sm_occupancy_ratio", s.sm_occupancy_ratio);
    put("tensor_activity_ratio", s.tensor_activity_ratio);
    put("dram_bw_util_ratio", s.dram_bw_util_ratio);
    j["stale"] = row.stale;
    if (row.stale) {
      j["stale_reason"] = row.stale_reason;
    } else {
      j["stale_reason"] = nullptr;
    }
    j["lost"] = row.lost;
    j["xids"] = row.xids != nullptr ? nlohmann::json(*row.xids) : nlohmann::json::array();
    buf_ += j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    buf_ += '\n';
  }
  if (options_.max_size_bytes > 0 && size_ > header_size_ &&
      size_ + buf_.size() > options_.max_size_bytes) {
    WW_RETURN_IF_ERROR(Rotate());
  }
  return WriteAll(buf_);
}

}  // namespace ww::record
