#include "watch/probes.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <fcntl.h>
#include <fmt/format.h>
#include <httplib.h>
#include <pcre2.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "watch/http_error.h"

namespace ww::watch {
namespace {

constexpr size_t kMaxLineBytes = 64 * 1024;
constexpr size_t kMaxReadPerPoll = 16 * 1024 * 1024;  // bounds one poll's work on a log flood

std::string Shorten(std::string_view s, size_t n = 160) {
  std::string out(s.substr(0, n));
  for (char& c : out) {
    if (c == '\r' || c == '\t') c = ' ';
  }
  if (s.size() > n) out += "...";
  return out;
}

class LogProbe final : public ProgressProbe {
 public:
  LogProbe(std::string path, pcre2_code* code) : path_(std::move(path)), code_(code) {
    match_ = pcre2_match_data_create_from_pattern(code_, nullptr);
    // Existing content is history: follow from the current end.
    OpenCurrent(/*from_end=*/true);
  }
  ~LogProbe() override {
    if (fd_ >= 0) ::close(fd_);
    pcre2_match_data_free(match_);
    pcre2_code_free(code_);
  }
  std::string kind() const override { return "progress-log"; }

  ProbeReading Poll(double) override {
    ProbeReading r;
    matched_ = false;
    if (fd_ >= 0) Drain();
    // Rotation: the path now names another file (or none). Finish the old one
    // first (done above), then follow the new one from its start.
    struct stat st {};
    if (::stat(path_.c_str(), &st) == 0) {
      if (fd_ < 0 || st.st_ino != ino_ || st.st_dev != dev_) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
        OpenCurrent(/*from_end=*/false);
        if (fd_ >= 0) Drain();
      }
    }
    r.available = fd_ >= 0;
    r.moved = matched_;
    if (matched_) {
      r.detail = fmt::format("{}: '{}'", path_, Shorten(last_line_));
    } else if (!r.available) {
      r.detail = fmt::format("{}: not there", path_);
    }
    return r;
  }

 private:
  void OpenCurrent(bool from_end) {
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) return;
    struct stat st {};
    ::fstat(fd_, &st);
    ino_ = st.st_ino;
    dev_ = st.st_dev;
    offset_ = from_end ? static_cast<uint64_t>(st.st_size) : 0;
    partial_.clear();
  }

  void Drain() {
    struct stat st {};
    if (::fstat(fd_, &st) == 0 && static_cast<uint64_t>(st.st_size) < offset_) {
      offset_ = 0;  // truncated (copytruncate rotation, or `> file`): start over
      partial_.clear();
    }
    char buf[65536];
    size_t total = 0;
    while (total < kMaxReadPerPoll) {
      const ssize_t n = ::pread(fd_, buf, sizeof buf, static_cast<off_t>(offset_));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      offset_ += static_cast<uint64_t>(n);
      total += static_cast<size_t>(n);
      Feed(std::string_view(buf, static_cast<size_t>(n)));
    }
  }

  void Feed(std::string_view data) {
    while (!data.empty()) {
      const size_t nl = data.find('\n');
      const std::string_view part = data.substr(0, nl);
      if (partial_.size() < kMaxLineBytes) {
        partial_.append(part.substr(0, kMaxLineBytes - partial_.size()));
      }
      if (nl == std::string_view::npos) return;
      Match(partial_);
      partial_.clear();
      data.remove_prefix(nl + 1);
    }
  }

  void Match(const std::string& line) {
    const int rc = pcre2_match(code_, reinterpret_cast<PCRE2_SPTR>(line.data()), line.size(), 0, 0,
                               match_, nullptr);
    if (rc >= 0) {
      matched_ = true;
      last_line_ = line;
    }
  }

  std::string path_;
  pcre2_code* code_;
  pcre2_match_data* match_ = nullptr;
  int fd_ = -1;
  ino_t ino_ = 0;
  dev_t dev_ = 0;
  uint64_t offset_ = 0;
  std::string partial_;
  std::string last_line_;
  bool matched_ = false;
};

class HeartbeatProbe final : public ProgressProbe {
 public:
  explicit HeartbeatProbe(std::string path) : path_(std::move(path)) {}
  std::string kind() const override { return "heartbeat"; }
  ProbeReading Poll(double) override {
    ProbeReading r;
    struct stat st {};
    if (::stat(path_.c_str(), &st) != 0) {
      r.detail = fmt::format("{}: not there", path_);
      return r;
    }
    r.available = true;
    const int64_t mtime_ns =
        static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    if (have_ && mtime_ns != mtime_ns_) {
      r.moved = true;
      r.detail = fmt::format("{}: touched", path_);
    }
    have_ = true;
    mtime_ns_ = mtime_ns;
    return r;
  }

 private:
  std::string path_;
  bool have_ = false;
  int64_t mtime_ns_ = 0;
};

template <typename T>
bool ParseNumber(std::string_view s, T* v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

bool ParseProcStat(std::string_view text, pid_t* ppid, uint64_t* cpu_ticks) {
  const size_t close = text.rfind(')');
  if (close == std::string_view::npos) return false;
  std::vector<std::string_view> f;
  std::string_view rest = text.substr(close + 1);
  size_t pos = 0;
  while (pos < rest.size() && f.size() < 16) {
    while (pos < rest.size() && (rest[pos] == ' ' || rest[pos] == '\n')) ++pos;
    size_t end = rest.find_first_of(" \n", pos);
    if (end == std::string_view::npos) end = rest.size();
    if (end > pos) f.push_back(rest.substr(pos, end - pos));
    pos = end;
  }
  // After the comm: f[0]=state f[1]=ppid ... f[11]=utime f[12]=stime (proc(5)
  // fields 3, 4, 14, 15)
  if (f.size() < 13) return false;
  uint64_t ut = 0, st = 0;
  int pp = 0;
  if (!ParseNumber(f[1], &pp) || !ParseNumber(f[11], &ut) || !ParseNumber(f[12], &st)) {
    return false;
  }
  if (ut > UINT64_MAX - st) return false;
  *ppid = pp;
  *cpu_ticks = ut + st;
  return true;
}

std::optional<ProcIo> ParseProcIo(std::string_view text) {
  ProcIo io;
  bool seen_read = false, seen_write = false;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view key = line.substr(0, colon);
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    uint64_t v = 0;
    if (!ParseNumber(value, &v)) continue;
    if (key == "read_bytes") {
      io.read_bytes = v;
      seen_read = true;
    } else if (key == "write_bytes") {
      io.write_bytes = v;
      seen_write = true;
    }
  }
  if (!seen_read || !seen_write) return std::nullopt;
  return io;
}

ProcessTreeTotals ReadProcessTree(const std::string& proc_root, pid_t root) {
  return ReadProcessTree(DefaultEnv(), proc_root, root);
}

ProcessTreeTotals ReadProcessTree(Env* env, const std::string& proc_root, pid_t root) {
  if (env == nullptr) env = DefaultEnv();
  // /proc/PID/stat and io are a few hundred bytes; the bound only guards a fake tree.
  constexpr uint64_t kMaxProcFileBytes = uint64_t{1} << 20;
  ProcessTreeTotals t;
  std::map<pid_t, std::pair<pid_t, uint64_t>> procs;  // pid -> (ppid, cpu ticks)
  auto entries = env->GetChildren(proc_root);
  if (!entries.ok()) return t;
  for (const std::string& name : *entries) {
    pid_t pid = 0;
    if (!ParseNumber(std::string_view(name), &pid) || pid <= 0) continue;
    // A process that exits between the listing and the read is simply not in the tree.
    auto text =
        env->ReadFileToString(fmt::format("{}/{}/stat", proc_root, name), kMaxProcFileBytes);
    if (!text.ok()) continue;
    pid_t ppid = 0;
    uint64_t ticks = 0;
    if (ParseProcStat(*text, &ppid, &ticks)) procs[pid] = {ppid, ticks};
  }
  if (!procs.count(root)) return t;
  std::multimap<pid_t, pid_t> children;
  for (const auto& [pid, info] : procs) children.emplace(info.first, pid);
  static const double ticks_per_s = static_cast<double>(::sysconf(_SC_CLK_TCK));
  std::deque<pid_t> todo{root};
  uint64_t rb = 0, wb = 0;
  bool any_io = false;
  while (!todo.empty() && t.processes < 100000) {
    const pid_t pid = todo.front();
    todo.pop_front();
    ++t.processes;
    t.cpu_s += static_cast<double>(procs[pid].second) / ticks_per_s;
    if (auto text =
            env->ReadFileToString(fmt::format("{}/{}/io", proc_root, pid), kMaxProcFileBytes);
        text.ok()) {
      if (auto io = ParseProcIo(*text)) {
        rb += io->read_bytes;
        wb += io->write_bytes;
        any_io = true;
      }
    }
    auto range = children.equal_range(pid);
    for (auto it = range.first; it != range.second; ++it) {
      if (it->second != pid) todo.push_back(it->second);
    }
  }
  if (any_io) {
    t.read_bytes = rb;
    t.write_bytes = wb;
  }
  return t;
}

namespace {

class ProcessProbe final : public ProgressProbe {
 public:
  ProcessProbe(pid_t pid, ProcessProbeOptions o) : pid_(pid), o_(std::move(o)) {}
  std::string kind() const override { return "process"; }
  bool watches_process() const override { return true; }

  ProbeReading Poll(double elapsed_s) override {
    ProbeReading r;
    const ProcessTreeTotals t = ReadProcessTree(o_.env, o_.proc_root, pid_);
    if (t.processes == 0) {
      r.detail = fmt::format("process {} is gone", pid_);
      have_ = false;
      return r;
    }
    // Without I/O counters (another user's process) the tree shows no progress
    // signal, so it must not speed up confirmation: only CPU, which a spin-wait
    // keeps busy.
    r.available = t.read_bytes.has_value() || o_.cpu_progress_cores > 0;
    if (have_) {
      const double cpu_cores = elapsed_s > 0 ? std::max(0.0, t.cpu_s - prev_.cpu_s) / elapsed_s : 0;
      const uint64_t dr = t.read_bytes && prev_.read_bytes && *t.read_bytes > *prev_.read_bytes
                              ? *t.read_bytes - *prev_.read_bytes
                              : 0;
      const uint64_t dw = t.write_bytes && prev_.write_bytes && *t.write_bytes > *prev_.write_bytes
                              ? *t.write_bytes - *prev_.write_bytes
                              : 0;
      r.writes = dw > 0;
      r.moved =
          dr > 0 || dw > 0 || (o_.cpu_progress_cores > 0 && cpu_cores > o_.cpu_progress_cores);
      const std::string io = t.read_bytes ? fmt::format("read {} B, wrote {} B", dr, dw)
                                          : std::string("I/O counters not readable");
      r.detail = fmt::format("process tree of {} ({} processes): {}, CPU {:.2f} cores", pid_,
                             t.processes, io, cpu_cores);
    } else {
      r.detail = fmt::format("process tree of {} ({} processes)", pid_, t.processes);
    }
    prev_ = t;
    have_ = true;
    return r;
  }

 private:
  pid_t pid_;
  ProcessProbeOptions o_;
  ProcessTreeTotals prev_;
  bool have_ = false;
};

class PeerProbe final : public ProgressProbe {
 public:
  PeerProbe(const std::string& address, PeerProbeOptions o)
      : target_(address),
        o_(std::move(o)),
        client_(address.find("://") == std::string::npos ? "http://" + address : address) {
    o_.interval_ms = std::max<int64_t>(50, o_.interval_ms);
    // The target as a user wrote it, without a scheme: "127.0.0.1:9401".
    if (const size_t scheme = target_.find("://"); scheme != std::string::npos) {
      target_ = target_.substr(scheme + 3);
    }
    client_.set_connection_timeout(std::chrono::milliseconds(o_.connect_timeout_ms));
    client_.set_read_timeout(std::chrono::milliseconds(o_.read_timeout_ms));
    client_.set_write_timeout(std::chrono::milliseconds(o_.read_timeout_ms));
    if (!o_.bearer_token.empty()) client_.set_bearer_token_auth(o_.bearer_token);
    detail_ = fmt::format("peer {}: no answer yet", target_);
    thread_ = std::thread([this] { Loop(); });
  }
  ~PeerProbe() override {
    std::unique_lock<std::mutex> lock(mu_);
    stop_ = true;
    cv_.notify_all();
    // A request in flight to a peer that does not answer would hold the watcher's exit for the
    // whole read timeout: cut it. Again until the thread is out, as a request may start between
    // its check of stop_ and the first stop().
    while (!finished_) {
      lock.unlock();
      client_.stop();
      lock.lock();
      cv_.wait_for(lock, std::chrono::milliseconds(20), [this] { return finished_; });
    }
    lock.unlock();
    thread_.join();
  }
  std::string kind() const override { return "peer"; }
  bool sees_other_hosts() const override { return true; }

  ProbeReading Poll(double) override {
    std::lock_guard<std::mutex> lock(mu_);
    ProbeReading r;
    r.available = ok_;
    r.detail = detail_;
    // Only a fresh answer counts, so one old reading is not progress forever.
    r.moved = ok_ && working_ > 0 && seq_ != seen_seq_;
    seen_seq_ = seq_;
    return r;
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      lock.unlock();
      bool ok = false;
      int working = 0;
      std::string detail;
      auto res = client_.Get("/state");
      if (!res) {
        detail = fmt::format("peer {}: {}", target_,
                             DescribeHttpError(res.error(), o_.read_timeout_ms / 1000.0));
      } else if (res->status == 401) {
        detail = fmt::format(
            "peer {}: HTTP 401, /state needs a token (--state-token-file, the same on every "
            "host){}",
            target_, o_.bearer_token.empty() ? "" : "; this one was refused");
      } else if (res->status != 200) {
        detail = fmt::format("peer {}: HTTP {} from /state", target_, res->status);
      } else {
        const auto j = nlohmann::json::parse(res->body, nullptr, false);
        if (j.is_discarded() || !j.is_object()) {
          detail = fmt::format("peer {}: /state is not JSON", target_);
        } else {
          ok = true;
          std::map<std::string, int> counts;
          const auto gpus = j.find("gpus");
          if (gpus != j.end() && gpus->is_array()) {
            for (const auto& g : *gpus) {
              if (!g.is_object()) continue;
              const auto st = g.find("state");
              if (st == g.end() || !st->is_string()) continue;
              const std::string state = st->get<std::string>();
              ++counts[state];
              if (state == "compute" || state == "data_starved" || state == "checkpoint") ++working;
            }
          }
          std::string summary;
          for (const auto& [state, n] : counts) {
            summary += fmt::format("{}{} {}", summary.empty() ? "" : ", ", n, state);
          }
          const auto host = j.find("host");
          detail =
              fmt::format("peer {} ({}): {}", target_,
                          host != j.end() && host->is_string() ? host->get<std::string>() : "?",
                          summary.empty() ? "no GPUs yet" : summary);
        }
      }
      lock.lock();
      ok_ = ok;
      working_ = working;
      detail_ = std::move(detail);
      ++seq_;
      cv_.wait_for(lock, std::chrono::milliseconds(o_.interval_ms), [this] { return stop_; });
    }
    finished_ = true;
    cv_.notify_all();
  }

  std::string target_;
  PeerProbeOptions o_;
  httplib::Client client_;  // used by the thread; stop() from the destructor
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool finished_ = false;
  bool ok_ = false;
  int working_ = 0;
  std::string detail_;
  uint64_t seq_ = 0;
  uint64_t seen_seq_ = 0;
  std::thread thread_;
};

}  // namespace

std::unique_ptr<ProgressProbe> MakePeerProbe(const std::string& address, PeerProbeOptions options) {
  return std::make_unique<PeerProbe>(address, std::move(options));
}

Result<std::unique_ptr<ProgressProbe>> MakeLogProbe(const std::string& path,
                                                    const std::string& regex) {
  int err = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(regex.data()), regex.size(),
                                   PCRE2_UTF | PCRE2_MATCH_INVALID_UTF, &err, &offset, nullptr);
  if (!code) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    return Status::InvalidInput(fmt::format("--progress-regex '{}': {} at offset {}", regex,
                                            reinterpret_cast<const char*>(msg), offset));
  }
  return std::unique_ptr<ProgressProbe>(new LogProbe(path, code));
}

std::unique_ptr<ProgressProbe> MakeHeartbeatProbe(const std::string& path) {
  return std::make_unique<HeartbeatProbe>(path);
}

std::unique_ptr<ProgressProbe> MakeProcessProbe(pid_t pid, ProcessProbeOptions options) {
  return std::make_unique<ProcessProbe>(pid, std::move(options));
}

}  // namespace ww::watch
