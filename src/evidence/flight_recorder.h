// PyTorch Flight Recorder: poking each rank's dump FIFO, collecting the dumps and reading them.
// A job started with TORCH_NCCL_DEBUG_INFO_PIPE_FILE=<prefix> (and a trace buffer,
// TORCH_FR_BUFFER_SIZE / TORCH_NCCL_TRACE_BUFFER_SIZE > 0) makes every rank create the FIFO
// `<prefix><rank>.pipe` (ProcessGroupNCCL's DumpPipe: mkfifo, then open O_RDONLY|O_NONBLOCK and
// poll it from the watchdog); a byte written there makes the rank pickle its recent collectives
// to `<TORCH_NCCL_DEBUG_INFO_TEMP_FILE><rank>` (DebugInfoWriter) and carry on.
// Pure parts (ReadFrDump, AnalyzeFlightRecorder) do no I/O; PokeFifos/WaitForDumps touch the
// file system with bounded, non-blocking calls only.
// Thread-safety: free functions on caller-owned values.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/status.h"

namespace ww::evidence {

struct FrEntry {
  int64_t record_id = -1;
  std::string pg_id;                         // str of the pg_id int, or the process_group name
  std::string pg_name;                       // process_group[0]
  std::string pg_desc;                       // process_group[1], e.g. "default_pg"
  std::optional<int64_t> collective_seq_id;  // "seq_id" in dumps before version 2
  std::optional<int64_t> p2p_seq_id;
  bool is_p2p = false;
  std::string profiling_name;  // "nccl:all_reduce"
  std::string state;           // scheduled | started | completed
  std::string top_user_frame;  // "train.py:42 in step" (first frame outside torch/), may be ""
};

struct FrRankDump {
  int rank = -1;
  std::string version;
  std::vector<FrEntry> entries;
  // pg_status[pg] = {last_enqueued_collective, last_started_collective, last_completed_collective}
  std::map<std::string, std::map<std::string, int64_t>> pg_status;
  size_t entries_skipped = 0;  // the oldest, over FrReadLimits::max_entries
};

// What reading one dump may cost, whatever the dump holds: a dump is a peer's file, and one
// that shares a frames list (or a huge dict) across millions of entries must not make the reader
// loop for hours or copy one string a million times.
struct FrReadLimits {
  size_t max_entries = 1u << 18;      // the newest kept (TORCH_FR_BUFFER_SIZE defaults to 2000)
  size_t max_field_chars = 256;       // a name, state or frame copied into FrEntry is cut there
  size_t max_frames_per_entry = 256;  // frames looked at for the top user frame
  uint64_t max_work = 256u << 20;     // dict pairs and list items visited in total
  int64_t deadline_steady_ms = 0;     // 0: none; else give up at this steady_clock time (ms)
};

// Reads one dump (a pickle of plain dicts). Bad, truncated or refused input gives a clear error;
// so does a dump over the work budget or the deadline. Entries shared by memo reference are
// read once. Memory: the pickle's (PickleLimits) plus ~400 bytes per entry kept.
Result<FrRankDump> ReadFrDump(std::string_view bytes, int rank, const FrReadLimits& limits = {});

struct FrLaggard {
  std::string pg;  // "0 (default_pg)"
  int rank = -1;
  int64_t last_started = -1;    // highest collective_seq_id started or completed on this rank
  int64_t last_completed = -1;  // highest completed
  int64_t others_at = -1;       // highest seq id entered by the others
  int others_count = 0;
  std::string own_collective;     // the rank's last collective, "nccl:all_reduce"
  std::string others_collective;  // the collective the others are in
  std::string top_user_frame;     // of the rank's last entry
  std::string sentence;           // one line for the event and INCIDENT.md
};

struct FrAnalysis {
  std::vector<FrLaggard> laggards;
  std::vector<std::string> lines;  // per process group, in words
};

// Per process group, the ranks whose last started/entered or completed collective_seq_id is
// behind the others'. Pure.
FrAnalysis AnalyzeFlightRecorder(const std::vector<FrRankDump>& dumps);

struct FifoPoke {
  int rank = -1;
  std::string path;
  enum class Outcome { kPoked, kNoReader, kNotFifo, kError } outcome = Outcome::kError;
  std::string detail;
};

// Lists `<prefix><rank>.pipe` in the prefix's folder and writes one byte to each, opening
// O_WRONLY|O_NONBLOCK: a FIFO with no reader (ENXIO) is skipped, never waited on; a path that is
// not a FIFO is never written.
// `before_poke(rank)` runs just before each write (the caller stamps the dump file there, so a
// dump left by an earlier poke is not taken for the new one).
std::vector<FifoPoke> PokeFifos(const std::string& pipe_prefix,
                                const std::function<void(int rank)>& before_poke = nullptr);

struct FrDumpFile {
  int rank = -1;
  std::string path;
  std::string bytes;  // as read (capped)
  std::optional<FrRankDump> dump;
  std::string error;  // when not read: "rank 2: /x/dump2: pickle truncated ..."
};

// Identity of a file before the poke, so a dump left from an earlier incident is not taken.
struct FileStamp {
  bool exists = false;
  int64_t mtime_ns = 0;
  int64_t size = 0;
  ino_t inode = 0;
};
FileStamp StampFile(const std::string& path);

// Waits until each rank's `<dump_prefix><rank>` is new (differs from `before`) and reads as a
// complete pickle, or until deadline_mono_ns; polls every 100 ms through `clock`.
// Each read gets `read_deadline_steady_ms` (0: none) as its FrReadLimits deadline.
std::vector<FrDumpFile> WaitForDumps(const std::string& dump_prefix, const std::vector<int>& ranks,
                                     const std::map<int, FileStamp>& before,
                                     int64_t deadline_mono_ns, Clock* clock,
                                     int64_t read_deadline_steady_ms = 0);

}  // namespace ww::evidence
