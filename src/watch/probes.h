// Progress probes: signals outside the GPUs that tell a slow or checkpointing job from a dead one.
// The watcher polls each probe every --probe-interval-ms (in watch time) and keeps, per probe, when
// it last saw movement; the hang policy (hang_policy.h) weighs that against the GPUs.
//
//   LogProbe        a line matching --progress-regex appended to --progress-log
//   (followed across
//                   rotation and truncation, like `tail -F`)
//   HeartbeatProbe  --heartbeat FILE's mtime changed
//   ProcessProbe    the job's process tree (--pid, or the child in run mode):
//   bytes read or written
//                   to storage (/proc/PID/io read_bytes, write_bytes) moved.
//                   Writes growing while the GPUs wait is a checkpoint. CPU
//                   time is reported but does not count as progress by default:
//                   a rank blocked in a CUDA synchronize spin-waits a core.
//
// File access goes through the paths given; the process probe reads /proc through core's Env
// (ProcessProbeOptions::env), so tests point it at a temporary tree or fake it in memory.
// Ownership: a probe owns its open files; the Env must outlive the probe. Thread-safety: one thread
// polls a probe.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/env.h"
#include "core/status.h"

namespace ww::watch {

struct ProbeReading {
  bool available = false;  // the probe could read its signal this time
  bool moved = false;      // progress since the previous poll
  bool writes = false;     // ProcessProbe: storage writes grew (checkpoint-like)
  std::string detail;      // what it saw, for reasons and events ("line 'step 1200
                           // loss 1.9'")
};

class ProgressProbe {
 public:
  virtual ~ProgressProbe() = default;
  virtual std::string kind() const = 0;  // "progress-log", "heartbeat", "process"
  // Reads the signal; `elapsed_s` is the watch time since the previous poll (for rates).
  virtual ProbeReading Poll(double elapsed_s) = 0;
  // A process probe watches the job itself: when it sees nothing move the hang policy may confirm
  // sooner (--confirm-proc-s).
  virtual bool watches_process() const { return false; }
  // A probe that sees other hosts (a peer) is the only view of a remote checkpoint: while it cannot
  // be read, the hang policy takes it as unknown, not as quiet (hang_policy.h).
  virtual bool sees_other_hosts() const { return false; }
};

// Follows `path` from its current end; lines longer than 64 KiB are cut. kInvalidInput when the
// regex does not compile (PCRE2's message and offset).
Result<std::unique_ptr<ProgressProbe>> MakeLogProbe(const std::string& path,
                                                    const std::string& regex);
std::unique_ptr<ProgressProbe> MakeHeartbeatProbe(const std::string& path);

struct ProcessProbeOptions {
  std::string proc_root = "/proc";
  // > 0: CPU use above this many cores also counts as progress (off by default; see above).
  double cpu_progress_cores = 0;
  Env* env = nullptr;  // where /proc is read; DefaultEnv() when null
};
// Watches `pid` and all its descendants (found through /proc/*/stat parent links each poll).
std::unique_ptr<ProgressProbe> MakeProcessProbe(pid_t pid, ProcessProbeOptions options = {});

// Another host's watcher of the same job (`--peer HOST:PORT`), read from its /state on a background
// thread every `interval_ms` (a slow peer never delays sampling). Progress is a GPU there in
// compute, data_starved or checkpoint: the job is alive on that host, e.g. rank 0 saving while
// every rank here waits for it. `communication` is not: spinning peers of a real hang show it until
// their own watchers confirm. A peer that does not answer is unavailable, its detail saying why
// ("peer 10.0.0.2:9401: cannot connect (...) [Connection]"). Destroying the probe cuts a request in
// flight, so it never holds the watcher's exit.
struct PeerProbeOptions {
  int64_t interval_ms = 1000;  // real time between requests
  int64_t connect_timeout_ms = 1000;
  int64_t read_timeout_ms = 2000;
  std::string bearer_token;  // non-empty: sent as "Authorization: Bearer ..." (--state-token-file)
};
std::unique_ptr<ProgressProbe> MakePeerProbe(const std::string& address,
                                             PeerProbeOptions options = {});

// Totals over a process tree, exposed for tests and `run`'s reasons.
struct ProcessTreeTotals {
  int processes = 0;
  double cpu_s = 0;
  std::optional<uint64_t> read_bytes;  // absent when /proc/PID/io is not readable
  std::optional<uint64_t> write_bytes;
};
// Reads proc_root/*/stat and proc_root/PID/io through `env` (DefaultEnv() when null).
ProcessTreeTotals ReadProcessTree(Env* env, const std::string& proc_root, pid_t root);
ProcessTreeTotals ReadProcessTree(const std::string& proc_root, pid_t root);

// Parsers of /proc/PID/stat ("pid (comm) state ppid ... utime stime ...", comm may hold spaces and
// parentheses) and /proc/PID/io ("read_bytes: N" lines). false / nullopt on anything else.
bool ParseProcStat(std::string_view text, pid_t* ppid, uint64_t* cpu_ticks);
struct ProcIo {
  uint64_t read_bytes = 0;
  uint64_t write_bytes = 0;
};
std::optional<ProcIo> ParseProcIo(std::string_view text);

}  // namespace ww::watch
