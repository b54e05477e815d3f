// The nvidia-smi reader's ticks (nvsmi_source.h): parsed rows to GPUs (by index, uuid or bus id,
// else by position within a tick, calibrated from the first rows' timestamps) and to ticks, with
// the per-GPU time order and the end-of-file checks.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "telemetry/ingest/nvsmi_source.h"

namespace ww::ingest::nvsmi {

Status NvsmiLogSource::Next(std::vector<GpuSample>* out) {
  if (positional_ && !positional_ready_) WW_RETURN_IF_ERROR(CalibratePositional());
  for (;;) {
    // One Row reused for every row (a GpuSample is ~400 bytes: each copy shows at 10^7 rows).
    Row& row = scratch_row_;
    bool have = true;
    if (!lookahead_.empty()) {
      row = std::move(lookahead_.front());
      lookahead_.pop_front();
    } else {
      auto r = ReadRow(&row);
      if (!r.ok()) return r.status();
      have = *r;
    }
    if (!have) {
      if (!pending_tick_.empty()) {
        // The last tick, if short, is dropped like any other in a re-split stretch.
        if (resync_ && position_ != tick_rows_) drop_pending_ = true;
        FlushTick(out);
        if (!out->empty()) return Status::Ok();
      }
      return Finish();
    }
    const bool tick_done = AssignGpu(row);
    if (snapshot_only_ && synthetic_ticks_ > 1) {
      return Status::InvalidInput(fmt::format(
          "{}: no timestamp column and more than one reading per GPU; pass --interval-ms with "
          "the logging interval (one reading per GPU is read as a snapshot)",
          *snapshot_only_));
    }
    if (tick_done && !pending_tick_.empty()) {
      const size_t before = out->size();
      FlushTick(out);
      AcceptIntoTick(row);
      // A dropped tick gave nothing: an empty batch would read as the end of the source.
      if (out->size() > before) return Status::Ok();
      continue;
    }
    AcceptIntoTick(row);
  }
}

Status NvsmiLogSource::Finish() {
  WW_RETURN_IF_ERROR(budget_.Check(reader_->path()));
  if (emitted_ == 0) {
    if (budget_.first_bad()) {
      return Status::InvalidInput(fmt::format("{}: no usable samples; first problem: {}",
                                              reader_->path(), *budget_.first_bad()));
    }
    return Status::InvalidInput(fmt::format("{}: no data rows after the header", reader_->path()));
  }
  return Status::Ok();
}

// Without index/uuid/bus-id columns the GPU is the row's position within its tick. Find how
// many rows a tick has from the timestamps of the first rows: gaps inside a tick are a few ms,
// gaps between ticks are about one interval.
Status NvsmiLogSource::CalibratePositional() {
  positional_ready_ = true;
  while (lookahead_.size() < 512) {
    Row row;
    auto r = ReadRow(&row);
    if (!r.ok()) return r.status();
    if (!*r) break;
    lookahead_.push_back(std::move(row));
  }
  if (ts_col_ < 0 && time_col_ < 0) {
    tick_rows_ = 1;  // synthetic time: one GPU per tick unless the log says otherwise
    return Status::Ok();
  }
  std::vector<int64_t> diffs;
  for (size_t i = 1; i < lookahead_.size(); ++i) {
    diffs.push_back(
        std::max<int64_t>(0, lookahead_[i].timestamp_ms - lookahead_[i - 1].timestamp_ms));
  }
  if (diffs.size() < 2) {
    tick_rows_ = std::max<int>(1, static_cast<int>(lookahead_.size()));
    return Status::Ok();
  }
  auto pct = [](std::vector<int64_t> v, double q) {
    std::sort(v.begin(), v.end());
    return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
  };
  double best_score = 0;
  int best_n = 0;
  const int max_n = std::min<int>(64, static_cast<int>(diffs.size() + 1) / 2);
  for (int n = 1; n <= max_n; ++n) {
    std::vector<int64_t> between, within;
    for (size_t i = 0; i < diffs.size(); ++i) {
      ((i + 1) % static_cast<size_t>(n) == 0 ? between : within).push_back(diffs[i]);
    }
    if (between.empty()) continue;
    const double lo_between = static_cast<double>(pct(between, 0.05));
    const double hi_within = within.empty() ? 0.0 : static_cast<double>(pct(within, 0.95));
    const double score = lo_between / (hi_within + 1.0);
    if (score > best_score * 1.5 || (best_n == 0 && score > 0)) {
      best_score = score;
      best_n = n;
      // Halfway (geometrically) between the rows of one tick and the step to the next.
      tick_split_ms_ = std::max<int64_t>(
          1, static_cast<int64_t>(std::sqrt((hi_within + 1.0) * std::max(lo_between, 1.0))));
    }
  }
  if (best_n == 0 || best_score < 3) {
    // Say why when it is the stamps: whole seconds at a sub-second rate (a logger's own
    // strftime, or nvidia-smi's table) put several ticks of rows on one stamp.
    size_t whole = 0, most_on_one = 0, run = 0;
    for (size_t i = 0; i < lookahead_.size(); ++i) {
      if (lookahead_[i].timestamp_ms % 1000 == 0) ++whole;
      run = i > 0 && lookahead_[i].timestamp_ms == lookahead_[i - 1].timestamp_ms ? run + 1 : 1;
      most_on_one = std::max(most_on_one, run);
    }
    const std::string stamps =
        whole == lookahead_.size() && most_on_one > 1
            ? fmt::format(
                  " (the timestamps have whole seconds only and up to {} rows share one, so "
                  "the ticks within a second cannot be told apart)",
                  most_on_one)
            : std::string();
    return Status::InvalidInput(fmt::format(
        "{}: no index, uuid or pci.bus_id column, and the rows do not fall into ticks by "
        "timestamp{}, so GPUs cannot be told apart; log with --query-gpu=timestamp,index,...",
        reader_->path(), stamps));
  }
  tick_rows_ = best_n;
  return Status::Ok();
}

// Sets row.sample.key; returns true when this row starts a new tick.
bool NvsmiLogSource::AssignGpu(Row& row) {
  row.sample.key.host = host_index_;
  if (row.index_lost) {
    // The GPU after the previous row's, wrapping after the highest index seen.
    int next = last_row_index_ + 1;
    if (next > max_index_) next = 0;
    row.index = next;
  }
  if (!row.has_time) {
    // Synthetic time: one tick per interval.
    bool new_tick = false;
    if (row.index) {
      new_tick = pending_tick_.empty() ? false : *row.index <= last_index_;
      last_index_ = *row.index;
    } else {
      new_tick = !pending_tick_.empty();
    }
    if (new_tick || synthetic_ticks_ == 0) ++synthetic_ticks_;
    row.timestamp_ms = (synthetic_ticks_ - 1) * options_.interval_ms;
  }
  row.sample.timestamp_ms = row.timestamp_ms;
  if (row.index) {
    last_row_index_ = *row.index;
    max_index_ = std::max(max_index_, *row.index);
    row.sample.key.gpu = static_cast<uint16_t>(*row.index);
    return TickHas(row.sample.key.gpu);
  }
  if (!row.id.empty()) {
    auto [it, inserted] = id_to_gpu_.try_emplace(row.id, static_cast<uint16_t>(id_to_gpu_.size()));
    row.sample.key.gpu = it->second;
    return TickHas(row.sample.key.gpu);
  }
  // Positional: nvidia-smi writes every GPU's row each tick, in index order, so rows are
  // counted off in ticks of the size found at the start. (Timestamps alone can't split ticks:
  // nvidia-smi sometimes stalls between two rows of one tick for longer than the interval.)
  const bool has_prev = prev_row_ms_.has_value();
  const bool looks_new =
      row.has_time && has_prev && row.timestamp_ms - *prev_row_ms_ >= tick_split_ms_;
  if (row.has_time) prev_row_ms_ = row.timestamp_ms;
  bool new_tick = false;
  if (!resync_) {
    new_tick = position_ >= tick_rows_;
    // Counting off is right while every tick has tick_rows_ rows. When a GPU's rows go missing,
    // the count runs into the next tick: a counted boundary then falls between rows logged
    // together. Twice in a row is not a stall (one late row): re-split ticks by time.
    if (new_tick && tick_rows_ > 1 && row.has_time && has_prev && !looks_new) {
      // The tick just counted may mix two ticks: dropped rather than put on wrong GPUs (after a
      // stall that ends right before the next tick, one good tick is lost).
      drop_pending_ = true;
      warnings_.Add(
          "tick without one row per GPU skipped (no index column: rows cannot be placed)",
          fmt::format("before line {}: a tick boundary between rows logged together", row.line));
      if (++misaligned_ticks_ >= 2) {
        resync_ = true;
        good_ticks_ = 0;
        warnings_.Add(
            "tick size changed: ticks re-split by timestamp",
            fmt::format("line {}: rows no longer come {} per timestamp", row.line, tick_rows_));
        // What was counted into the open tick mixes two ticks: dropped. This row sits in the
        // middle of a tick by time, so the rest of that tick is dropped too (short).
        drop_pending_ = true;
        position_ = 0;
        row.sample.key.gpu = static_cast<uint16_t>(position_++);
        return true;
      }
    } else if (new_tick) {
      misaligned_ticks_ = 0;
    }
  }
  if (resync_) {
    new_tick = looks_new || !row.has_time;
    if (new_tick) {
      // Positions only name GPUs in a tick with every GPU's row: a shorter or longer one is
      // dropped, since which GPU is missing cannot be told without an index column.
      if (position_ != tick_rows_) {
        drop_pending_ = true;
        warnings_.Add(
            "tick without one row per GPU skipped (no index column: rows cannot be placed)",
            fmt::format("before line {}: {} rows, {} GPUs", row.line, position_, tick_rows_));
        good_ticks_ = 0;
      } else if (++good_ticks_ >= 3) {
        resync_ = false;  // whole ticks again: back to counting (stalls are tolerated there)
        misaligned_ticks_ = 0;
      }
    }
  }
  if (new_tick) position_ = 0;
  row.sample.key.gpu = static_cast<uint16_t>(position_++);
  return new_tick;
}

bool NvsmiLogSource::TickHas(uint16_t gpu) const {
  for (const GpuSample& s : pending_tick_) {
    if (s.key.gpu == gpu) return true;
  }
  return false;
}

void NvsmiLogSource::AcceptIntoTick(const Row& row) {
  const uint16_t gpu = row.sample.key.gpu;
  if (last_ms_.size() <= gpu) last_ms_.resize(gpu + 1u, INT64_MIN);
  const bool first = !KnownGpu(gpu);
  int64_t& last = last_ms_[gpu];
  if (row.timestamp_ms <= last) {
    warnings_.Add(
        row.timestamp_ms == last ? "duplicate timestamp skipped" : "out-of-order timestamp skipped",
        fmt::format("line {}: GPU {} at {}", row.line, gpu, FormatIsoMs(row.timestamp_ms)));
    return;
  }
  last = row.timestamp_ms;
  if (first) {
    if (known_gpu_.size() <= gpu) known_gpu_.resize(gpu + 1u, false);
    known_gpu_[gpu] = true;
    GpuInfo info;
    info.key = row.sample.key;
    info.name = ValidUtf8(name_);
    if (uuid_col_ >= 0 || bus_col_ >= 0) info.uuid = ValidUtf8(row.id);
    infos_[gpu] = std::move(info);
  }
  pending_tick_.push_back(row.sample);
}

void NvsmiLogSource::FlushTick(std::vector<GpuSample>* out) {
  if (drop_pending_) {
    drop_pending_ = false;
    pending_tick_.clear();
    return;
  }
  emitted_ += static_cast<int64_t>(pending_tick_.size());
  if (out->empty()) {
    out->swap(pending_tick_);  // no copy of the tick; pending_tick_ keeps out's buffer
  } else {
    out->insert(out->end(), pending_tick_.begin(), pending_tick_.end());
  }
  pending_tick_.clear();
}

}  // namespace ww::ingest::nvsmi
