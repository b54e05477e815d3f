#include "evidence/flight_recorder.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <unordered_map>

#include "evidence/pickle.h"

namespace ww::evidence {
namespace {

using K = PickleValue::Kind;

// Frames from PyTorch's own Python files are not where the user should look first.
bool IsTorchFrame(std::string_view filename) {
  return filename.find("/torch/") != std::string_view::npos || filename.rfind("torch/", 0) == 0 ||
         filename.empty() || filename[0] == '<';
}

// Reads a parsed dump within FrReadLimits: every dict lookup and list walk is charged to a work
// budget, results for values shared by memo reference (an entry, a frames list) are computed
// once, and strings are cut at max_field_chars.
class DumpReader {
 public:
  DumpReader(const PickleDoc& doc, const FrReadLimits& limits) : doc_(doc), limits_(limits) {}

  bool exhausted() const { return exhausted_; }

  const PickleValue* Get(const PickleValue& dict, std::string_view key) {
    if (!Charge(dict.pairs.size() + 1)) return nullptr;
    return doc_.Get(dict, key);
  }
  std::optional<int64_t> GetInt(const PickleValue& dict, std::string_view key) {
    const PickleValue* v = Get(dict, key);
    if (v == nullptr || v->kind != K::kInt) return std::nullopt;
    return v->int_value;
  }
  std::string GetStr(const PickleValue& dict, std::string_view key, std::string fallback = "") {
    const PickleValue* v = Get(dict, key);
    if (v == nullptr || v->kind != K::kStr) return fallback;
    return Cut(v->text);
  }
  std::string Cut(std::string_view s) const {
    if (s.size() <= limits_.max_field_chars) return std::string(s);
    // Cut on a UTF-8 boundary, so the JSON that quotes it stays valid.
    size_t n = limits_.max_field_chars;
    while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
    return std::string(s.substr(0, n)) + "...";
  }
  std::string IntOrStr(const PickleValue& dict, std::string_view key) {
    const PickleValue* v = Get(dict, key);
    if (v == nullptr) return "";
    if (v->kind == K::kInt) return std::to_string(v->int_value);
    if (v->kind == K::kStr) return Cut(v->text);
    return "";
  }

  std::string TopUserFrame(const PickleValue& entry) {
    const PickleValue* frames = Get(entry, "frames");
    if (frames == nullptr || frames->kind != K::kList) return "";
    // The same frames list under many entries (a memo reference) is read once.
    const uint32_t key = static_cast<uint32_t>(frames - &doc_.at(0));
    if (const auto it = frames_seen_.find(key); it != frames_seen_.end()) return it->second;
    std::string first_any, found;
    size_t looked = 0;
    for (uint32_t idx : frames->items) {
      if (++looked > limits_.max_frames_per_entry || !Charge(1)) break;
      const PickleValue& f = doc_.at(idx);
      const std::string file = GetStr(f, "filename");
      const std::string name = GetStr(f, "name", "?");
      const int64_t line = GetInt(f, "line").value_or(0);
      std::string text = fmt::format("{}:{} in {}", file, line, name);
      if (first_any.empty()) first_any = text;
      if (!IsTorchFrame(file)) {
        found = std::move(text);
        break;
      }
    }
    std::string out = found.empty() ? first_any : found;
    frames_seen_.emplace(key, out);
    return out;
  }

  // False (and exhausted() true) once the work budget or the deadline is spent.
  bool Charge(uint64_t units) {
    if (exhausted_) return false;
    work_ += units;
    if (work_ > limits_.max_work) {
      exhausted_ = true;
      why_ = fmt::format("over the work budget ({} dict pairs and list items visited)",
                         limits_.max_work);
      return false;
    }
    if (limits_.deadline_steady_ms > 0 && work_ - last_clock_check_ > 65536) {
      last_clock_check_ = work_;
      if (SteadyNowMs() >= limits_.deadline_steady_ms) {
        exhausted_ = true;
        why_ = "not read by the evidence deadline";
        return false;
      }
    }
    return true;
  }
  const std::string& why() const { return why_; }

 private:
  const PickleDoc& doc_;
  const FrReadLimits& limits_;
  uint64_t work_ = 0;
  uint64_t last_clock_check_ = 0;
  bool exhausted_ = false;
  std::string why_;
  std::unordered_map<uint32_t, std::string> frames_seen_;
};

}  // namespace

Result<FrRankDump> ReadFrDump(std::string_view bytes, int rank, const FrReadLimits& limits) {
  Result<PickleDoc> parsed = ParsePickle(bytes);
  if (!parsed.ok()) return parsed.status();
  const PickleDoc& doc = *parsed;
  DumpReader rd(doc, limits);
  FrRankDump dump;
  dump.rank = rank;
  const PickleValue* entries = nullptr;
  if (doc.root().kind == K::kDict) {
    dump.version = rd.GetStr(doc.root(), "version");
    entries = rd.Get(doc.root(), "entries");
    if (entries == nullptr) {
      return Status::InvalidInput(
          "dump is a dict without \"entries\" (not a Flight Recorder dump)");
    }
  } else if (doc.root().kind == K::kList) {
    entries = &doc.root();  // the first dumps (2024) were the entries list alone
    dump.version = "0";
  } else {
    return Status::InvalidInput("dump is neither a dict nor a list (not a Flight Recorder dump)");
  }
  if (entries->kind != K::kList) return Status::InvalidInput("\"entries\" is not a list");
  const size_t n = entries->items.size();
  const size_t first = n > limits.max_entries ? n - limits.max_entries : 0;
  dump.entries_skipped = first;
  dump.entries.reserve(n - first);
  // An entry dict shared by memo reference is read once and copied (bounded by the cuts).
  std::unordered_map<uint32_t, size_t> entry_seen;
  for (size_t i = first; i < n; ++i) {
    const uint32_t index = entries->items[i];
    const PickleValue& e = doc.at(index);
    if (e.kind != K::kDict) {
      return Status::InvalidInput(fmt::format("entries[{}] is not a dict", i));
    }
    if (!rd.Charge(1)) break;
    if (const auto seen = entry_seen.find(index); seen != entry_seen.end()) {
      FrEntry copy = dump.entries[seen->second];
      copy.record_id = static_cast<int64_t>(i);
      dump.entries.push_back(std::move(copy));
      continue;
    }
    FrEntry out;
    out.record_id = rd.GetInt(e, "record_id").value_or(static_cast<int64_t>(i));
    out.pg_id = rd.IntOrStr(e, "pg_id");
    if (const PickleValue* pg = rd.Get(e, "process_group");
        pg != nullptr && (pg->kind == K::kTuple || pg->kind == K::kList)) {
      if (!pg->items.empty() && doc.at(pg->items[0]).kind == K::kStr) {
        out.pg_name = rd.Cut(doc.at(pg->items[0]).text);
      }
      if (pg->items.size() > 1 && doc.at(pg->items[1]).kind == K::kStr) {
        out.pg_desc = rd.Cut(doc.at(pg->items[1]).text);
      }
    }
    out.collective_seq_id = rd.GetInt(e, "collective_seq_id");
    if (!out.collective_seq_id) out.collective_seq_id = rd.GetInt(e, "seq_id");
    out.p2p_seq_id = rd.GetInt(e, "p2p_seq_id");
    if (const PickleValue* p = rd.Get(e, "is_p2p"); p != nullptr && p->kind == K::kBool) {
      out.is_p2p = p->bool_value;
    }
    out.profiling_name = rd.GetStr(e, "profiling_name");
    out.state = rd.GetStr(e, "state");
    out.top_user_frame = rd.TopUserFrame(e);
    entry_seen.emplace(index, dump.entries.size());
    dump.entries.push_back(std::move(out));
  }
  if (rd.exhausted()) {
    return Status::InvalidInput(fmt::format("Flight Recorder dump {} after {} of {} entries",
                                            rd.why(), dump.entries.size(), n - first));
  }
  if (doc.root().kind == K::kDict) {
    if (const PickleValue* st = rd.Get(doc.root(), "pg_status"); st && st->kind == K::kDict) {
      for (const auto& [k, v] : st->pairs) {
        const PickleValue& key = doc.at(k);
        const PickleValue& val = doc.at(v);
        if (key.kind != K::kStr || val.kind != K::kDict) continue;
        if (!rd.Charge(val.pairs.size() + 1) || dump.pg_status.size() >= limits.max_entries) break;
        for (const auto& [fk, fv] : val.pairs) {
          if (doc.at(fk).kind == K::kStr && doc.at(fv).kind == K::kInt) {
            dump.pg_status[rd.Cut(key.text)][rd.Cut(doc.at(fk).text)] = doc.at(fv).int_value;
          }
        }
      }
    }
  }
  return dump;
}

namespace {

struct RankProgress {
  int rank = -1;
  int64_t entered = -1;    // highest seq id in the buffer (any state)
  int64_t started = -1;    // started or completed
  int64_t completed = -1;  // completed
  const FrEntry* last = nullptr;
};

std::string PgLabel(const FrEntry& e) {
  const std::string name = !e.pg_name.empty() ? e.pg_name : e.pg_id;
  return e.pg_desc.empty() ? name : fmt::format("{} ({})", name, e.pg_desc);
}

std::string ShortCollective(std::string_view profiling_name) {
  const size_t colon = profiling_name.find(':');
  return std::string(colon == std::string_view::npos ? profiling_name
                                                     : profiling_name.substr(colon + 1));
}

}  // namespace

FrAnalysis AnalyzeFlightRecorder(const std::vector<FrRankDump>& dumps) {
  FrAnalysis out;
  // pg label -> rank -> progress
  std::map<std::string, std::map<int, RankProgress>> groups;
  for (const FrRankDump& d : dumps) {
    for (const FrEntry& e : d.entries) {
      if (e.is_p2p || !e.collective_seq_id) continue;
      const std::string pg = PgLabel(e);
      RankProgress& p = groups[pg][d.rank];
      p.rank = d.rank;
      const int64_t seq = *e.collective_seq_id;
      if (seq >= p.entered) {
        p.entered = seq;
        p.last = &e;
      }
      if (e.state == "started" || e.state == "completed") p.started = std::max(p.started, seq);
      if (e.state == "completed") p.completed = std::max(p.completed, seq);
    }
  }
  if (groups.empty()) {
    out.lines.push_back(dumps.empty() ? "no Flight Recorder dump was read"
                                      : "the dumps hold no collectives");
    return out;
  }
  for (const auto& [pg, ranks] : groups) {
    int64_t max_entered = -1, max_started = -1, max_completed = -1;
    for (const auto& [r, p] : ranks) {
      max_entered = std::max(max_entered, p.entered);
      max_started = std::max(max_started, p.started);
      max_completed = std::max(max_completed, p.completed);
    }
    std::vector<const RankProgress*> behind;
    for (const auto& [r, p] : ranks) {
      if (p.entered < max_entered || p.started < max_started || p.completed < max_completed) {
        behind.push_back(&p);
      }
    }
    if (ranks.size() < 2) {
      out.lines.push_back(fmt::format("process group {}: only rank {} dumped; nothing to compare",
                                      pg, ranks.begin()->first));
      continue;
    }
    if (behind.empty()) {
      const RankProgress& any = ranks.begin()->second;
      out.lines.push_back(fmt::format(
          "process group {}: all {} ranks entered #{} ({}), last completed #{}; none is behind", pg,
          ranks.size(), max_entered, any.last ? any.last->profiling_name : "?", max_completed));
      continue;
    }
    // What the ranks ahead are in: the entry at max_entered on any rank that reached it.
    std::string others_collective;
    for (const auto& [r, p] : ranks) {
      if (p.entered == max_entered && p.last != nullptr) {
        others_collective = fmt::format("{} #{} ({})", ShortCollective(p.last->profiling_name),
                                        max_entered, p.last->state);
        break;
      }
    }
    for (const RankProgress* p : behind) {
      FrLaggard lag;
      lag.pg = pg;
      lag.rank = p->rank;
      lag.last_started = p->started;
      lag.last_completed = p->completed;
      lag.others_at = max_entered;
      lag.others_count = static_cast<int>(ranks.size()) - 1;
      lag.own_collective = p->last ? p->last->profiling_name : "";
      lag.others_collective = others_collective;
      lag.top_user_frame = p->last ? p->last->top_user_frame : "";
      const std::string own =
          p->last ? fmt::format("{} #{} ({})", ShortCollective(p->last->profiling_name), p->entered,
                                p->last->state)
                  : "nothing";
      lag.sentence = fmt::format(
          "rank {} is behind in process group {}: its last collective is {}; the others reached "
          "{}{}",
          p->rank, pg, own, others_collective,
          lag.top_user_frame.empty()
              ? ""
              : fmt::format("; its last call came from {}", lag.top_user_frame));
      out.lines.push_back(lag.sentence);
      out.laggards.push_back(std::move(lag));
    }
  }
  return out;
}

std::vector<FifoPoke> PokeFifos(const std::string& pipe_prefix,
                                const std::function<void(int rank)>& before_poke) {
  std::vector<FifoPoke> pokes;
  const std::filesystem::path prefix(pipe_prefix);
  std::string dir = prefix.parent_path().string();
  if (dir.empty()) dir = ".";
  const std::string stem = prefix.filename().string();
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return pokes;
  while (dirent* de = readdir(d)) {
    const std::string name = de->d_name;
    if (name.size() <= stem.size() + 5 || name.rfind(stem, 0) != 0 ||
        name.substr(name.size() - 5) != ".pipe") {
      continue;
    }
    const std::string digits = name.substr(stem.size(), name.size() - stem.size() - 5);
    if (digits.empty() || digits.size() > 7 ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      continue;
    }
    FifoPoke poke;
    poke.rank = std::stoi(digits);
    poke.path = fmt::format("{}/{}", dir, name);
    struct stat st {};
    if (lstat(poke.path.c_str(), &st) != 0 || !S_ISFIFO(st.st_mode)) {
      poke.outcome = FifoPoke::Outcome::kNotFifo;
      poke.detail = "not a FIFO; left alone";
      pokes.push_back(std::move(poke));
      continue;
    }
    if (before_poke) before_poke(poke.rank);
    // O_NONBLOCK: open fails at once with ENXIO when no process holds the read end, instead of
    // blocking until one does (a dead or never-started rank must not stall the watcher).
    const int fd = open(poke.path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
      const int err = errno;
      poke.outcome = err == ENXIO ? FifoPoke::Outcome::kNoReader : FifoPoke::Outcome::kError;
      poke.detail = err == ENXIO ? "no process is reading it (rank gone?); skipped"
                                 : fmt::format("open: {}", std::strerror(err));
    } else {
      struct stat fst {};
      if (fstat(fd, &fst) != 0 || !S_ISFIFO(fst.st_mode)) {
        poke.outcome = FifoPoke::Outcome::kNotFifo;
        poke.detail = "changed into a non-FIFO; left alone";
      } else if (write(fd, "1", 1) == 1) {
        poke.outcome = FifoPoke::Outcome::kPoked;
        poke.detail = "poked";
      } else {
        poke.outcome = FifoPoke::Outcome::kError;
        poke.detail = fmt::format("write: {}", std::strerror(errno));  // EAGAIN: pipe full
      }
      close(fd);
    }
    pokes.push_back(std::move(poke));
  }
  closedir(d);
  std::sort(pokes.begin(), pokes.end(),
            [](const FifoPoke& a, const FifoPoke& b) { return a.rank < b.rank; });
  return pokes;
}

FileStamp StampFile(const std::string& path) {
  FileStamp s;
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return s;
  s.exists = true;
  s.mtime_ns = int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  s.size = st.st_size;
  s.inode = st.st_ino;
  return s;
}

namespace {

// A dump of TORCH_FR_BUFFER_SIZE=2000 entries with frames is a few MB; 20k entries tens of MB.
constexpr size_t kMaxDumpBytes = 64u << 20;

bool SameStamp(const FileStamp& a, const FileStamp& b) {
  return a.exists == b.exists && a.mtime_ns == b.mtime_ns && a.size == b.size && a.inode == b.inode;
}

std::string ReadCapped(const std::string& path, int64_t size, bool* too_big) {
  *too_big = size > static_cast<int64_t>(kMaxDumpBytes);
  if (*too_big || size <= 0) return "";
  std::ifstream in(path, std::ios::binary);
  std::string bytes(static_cast<size_t>(size), '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  bytes.resize(static_cast<size_t>(in.gcount()));
  return bytes;
}

}  // namespace

std::vector<FrDumpFile> WaitForDumps(const std::string& dump_prefix, const std::vector<int>& ranks,
                                     const std::map<int, FileStamp>& before,
                                     int64_t deadline_mono_ns, Clock* clock,
                                     int64_t read_deadline_steady_ms) {
  FrReadLimits limits;
  limits.deadline_steady_ms = read_deadline_steady_ms;
  std::vector<FrDumpFile> files;
  for (int r : ranks) {
    FrDumpFile f;
    f.rank = r;
    f.path = dump_prefix + std::to_string(r);
    files.push_back(std::move(f));
  }
  std::set<int> pending(ranks.begin(), ranks.end());
  for (;;) {
    for (FrDumpFile& f : files) {
      if (!pending.count(f.rank)) continue;
      const FileStamp now = StampFile(f.path);
      auto it = before.find(f.rank);
      if (!now.exists || (it != before.end() && SameStamp(it->second, now))) {
        f.error = fmt::format("rank {}: no new dump at {}", f.rank, f.path);
        continue;
      }
      bool too_big = false;
      f.bytes = ReadCapped(f.path, now.size, &too_big);
      if (too_big) {
        f.error =
            fmt::format("rank {}: {} is over {} bytes; not read", f.rank, f.path, kMaxDumpBytes);
        pending.erase(f.rank);
        continue;
      }
      Result<FrRankDump> d = ReadFrDump(f.bytes, f.rank, limits);
      if (d.ok()) {
        f.dump = std::move(*d);
        f.error.clear();
        pending.erase(f.rank);
      } else {
        // Possibly still being written (DebugInfoWriter streams into the file): retry until the
        // deadline, then keep the last error. A dump over the work budget is final.
        f.error = fmt::format("rank {}: {}: {}", f.rank, f.path, d.status().message());
        if (d.status().message().find("work budget") != std::string::npos ||
            d.status().message().find("evidence deadline") != std::string::npos) {
          pending.erase(f.rank);
        }
      }
    }
    if (pending.empty() || clock->NowMonotonicNs() >= deadline_mono_ns) break;
    clock->SleepUntilMonotonicNs(
        std::min<int64_t>(deadline_mono_ns, clock->NowMonotonicNs() + int64_t{100} * 1000000));
  }
  return files;
}

}  // namespace ww::evidence
