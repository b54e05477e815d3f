#include "evidence/evidence.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "evidence/incident.h"

namespace ww::evidence {
namespace {

struct RasPart {
  std::vector<RasReply> replies;
  std::optional<RasVerdict> verdict;
  std::vector<std::string> notes;
};

RasPart CollectRas(const EvidenceOptions& o, int64_t deadline_ms, Clock* clock) {
  RasPart part;
  const std::string where = fmt::format("{}:{}", o.ras_host, o.ras_port);
  if (!o.ras_enabled) {
    part.notes.push_back("NCCL RAS not asked (--no-nccl-ras)");
    return part;
  }
  RasQueryOptions q;
  q.host = o.ras_host;
  q.port = o.ras_port;
  auto query = [&]() -> Result<RasReply> {
    q.timeout_ms = static_cast<int>(std::max<int64_t>(
        100, std::min<int64_t>(o.ras_query_timeout_ms, deadline_ms - SteadyNowMs())));
    return QueryRas(q);
  };
  Result<RasReply> first = query();
  if (!first.ok()) {
    part.notes.push_back(first.status().message());
    return part;
  }
  part.replies.push_back(*first);
  // The second query must still fit before the deadline, or the first stands alone.
  const int64_t interval_ms = std::min<int64_t>(
      o.ras_interval_ms, std::max<int64_t>(0, deadline_ms - SteadyNowMs() - 1000));
  clock->SleepUntilMonotonicNs(clock->NowMonotonicNs() + interval_ms * 1000000);
  Result<RasReply> second = query();
  Result<RasSnapshot> s1 = ParseRasReply(*first);
  if (!s1.ok()) {
    part.notes.push_back(
        fmt::format("NCCL RAS {}: first reply unreadable: {}", where, s1.status().message()));
    return part;
  }
  if (!second.ok()) {
    part.notes.push_back(
        fmt::format("NCCL RAS {}: second query failed ({}); with one query, "
                    "counts cannot be told stuck from moving, so nobody is named",
                    where, second.status().message()));
    return part;
  }
  part.replies.push_back(*second);
  Result<RasSnapshot> s2 = ParseRasReply(*second);
  if (!s2.ok()) {
    part.notes.push_back(
        fmt::format("NCCL RAS {}: second reply unreadable: {}", where, s2.status().message()));
    return part;
  }
  part.verdict = CompareRasSnapshots(*s1, *s2);
  part.notes.push_back(
      fmt::format("NCCL RAS {} {} answered two queries {} ms apart ({})", where,
                  s2->nccl_version.empty() ? "" : "(NCCL " + s2->nccl_version + ")", interval_ms,
                  first->format));
  return part;
}

struct FrPart {
  std::vector<FifoPoke> pokes;
  std::vector<FrDumpFile> dumps;
  std::optional<FrAnalysis> analysis;
  std::vector<std::string> notes;
};

FrPart CollectFr(const EvidenceOptions& o, int64_t deadline_ms, Clock* clock) {
  FrPart part;
  if (o.fr_pipe_prefix.empty()) {
    part.notes.push_back(
        "Flight Recorder not asked: no FIFO prefix (--fr-pipe, or TORCH_NCCL_DEBUG_INFO_PIPE_FILE "
        "set by run)");
    return part;
  }
  // The job's own prefix, else PyTorch's defaults (which changed between releases): each is
  // stamped before the poke, and the first whose dump changes afterwards is the one read.
  std::vector<std::string> prefixes;
  if (!o.fr_dump_prefix.empty()) {
    prefixes.push_back(o.fr_dump_prefix);
  } else if (!o.fr_default_dump_prefixes.empty()) {
    prefixes = o.fr_default_dump_prefixes;
  } else {
    prefixes.push_back("/tmp/nccl_trace_rank_");
  }
  std::vector<std::map<int, FileStamp>> before_per_prefix(prefixes.size());
  part.pokes = PokeFifos(o.fr_pipe_prefix, [&](int rank) {
    for (size_t i = 0; i < prefixes.size(); ++i) {
      before_per_prefix[i][rank] = StampFile(prefixes[i] + std::to_string(rank));
    }
  });
  std::vector<int> poked;
  for (const FifoPoke& p : part.pokes) {
    if (p.outcome == FifoPoke::Outcome::kPoked) {
      poked.push_back(p.rank);
    } else {
      part.notes.push_back(
          fmt::format("Flight Recorder FIFO {} (rank {}): {}", p.path, p.rank, p.detail));
    }
  }
  if (part.pokes.empty()) {
    part.notes.push_back(fmt::format("no Flight Recorder FIFOs {}<rank>.pipe exist; no dumps asked",
                                     o.fr_pipe_prefix));
    return part;
  }
  if (poked.empty()) return part;
  const int64_t wait_ms =
      std::min<int64_t>(o.fr_wait_ms, std::max<int64_t>(0, deadline_ms - SteadyNowMs()));
  const int64_t wait_deadline_ns = clock->NowMonotonicNs() + wait_ms * 1000000;
  size_t chosen = 0;
  if (prefixes.size() > 1) {
    auto changed = [&](size_t i) {
      for (int rank : poked) {
        const FileStamp now = StampFile(prefixes[i] + std::to_string(rank));
        const FileStamp& was = before_per_prefix[i][rank];
        if (now.exists && (!was.exists || now.mtime_ns != was.mtime_ns || now.size != was.size ||
                           now.inode != was.inode)) {
          return true;
        }
      }
      return false;
    };
    bool found = false;
    while (!found) {
      for (size_t i = 0; i < prefixes.size() && !found; ++i) {
        if (changed(i)) {
          chosen = i;
          found = true;
        }
      }
      if (found || clock->NowMonotonicNs() >= wait_deadline_ns) break;
      clock->SleepUntilMonotonicNs(
          std::min<int64_t>(wait_deadline_ns, clock->NowMonotonicNs() + int64_t{100} * 1000000));
    }
    if (!found) {
      part.notes.push_back(fmt::format(
          "Flight Recorder: no dump appeared under PyTorch's default locations ({}<rank>); give "
          "the job's TORCH_FR_DUMP_TEMP_FILE / TORCH_NCCL_DEBUG_INFO_TEMP_FILE with --fr-dump",
          fmt::join(prefixes, "<rank>, ")));
    }
  }
  part.dumps = WaitForDumps(prefixes[chosen], poked, before_per_prefix[chosen], wait_deadline_ns,
                            clock, deadline_ms);
  std::vector<FrRankDump> read;
  for (const FrDumpFile& f : part.dumps) {
    if (f.dump) {
      read.push_back(*f.dump);
    } else {
      part.notes.push_back("Flight Recorder dump unreadable or absent: " + f.error);
    }
  }
  part.notes.push_back(fmt::format("Flight Recorder: poked {} of {} FIFOs, read {} dumps",
                                   poked.size(), part.pokes.size(), read.size()));
  if (!read.empty()) part.analysis = AnalyzeFlightRecorder(read);
  return part;
}

std::string RankLabel(const Culprit& c) {
  std::vector<std::string> parts;
  if (!c.host.empty() && c.gpu >= 0) parts.push_back(fmt::format("{} GPU{}", c.host, c.gpu));
  if (c.pid >= 0) parts.push_back(fmt::format("pid {}", c.pid));
  std::string s = fmt::format("rank {}", c.rank);
  if (!parts.empty()) s += fmt::format(" ({})", fmt::join(parts, ", "));
  return s;
}

}  // namespace

EvidenceReport CollectHangEvidence(const EvidenceOptions& options, const HangContext& context,
                                   Clock* clock) {
  const int64_t start_ms = SteadyNowMs();
  const int64_t deadline_ms = start_ms + options.overall_deadline_ms;
  EvidenceReport report;
  // RAS takes two queries and an interval, the Flight Recorder a wait for the dumps: run both at
  // once so the step costs the longer of the two, not the sum.
  auto ras_future = std::async(std::launch::async, CollectRas, options, deadline_ms, clock);
  FrPart fr = CollectFr(options, deadline_ms, clock);
  RasPart ras = ras_future.get();

  report.ras_replies = std::move(ras.replies);
  report.ras_verdict = std::move(ras.verdict);
  report.fr_pokes = std::move(fr.pokes);
  report.fr_dumps = std::move(fr.dumps);
  report.fr_analysis = std::move(fr.analysis);
  report.notes = std::move(ras.notes);
  report.notes.insert(report.notes.end(), fr.notes.begin(), fr.notes.end());

  if (report.ras_verdict) {
    for (const RasCulprit& k : report.ras_verdict->culprits) {
      report.culprits.push_back(
          {"nccl-ras", k.who.rank, k.who.host, k.who.pid, k.who.gpu, k.sentence});
    }
  }
  if (report.fr_analysis) {
    for (const FrLaggard& l : report.fr_analysis->laggards) {
      Culprit c{"flight-recorder", l.rank, "", -1, -1, l.sentence};
      // RAS knows where the rank runs; the dump does not.
      for (const Culprit& r : report.culprits) {
        if (r.source == "nccl-ras" && r.rank == l.rank) {
          c.host = r.host;
          c.pid = r.pid;
          c.gpu = r.gpu;
        }
      }
      report.culprits.push_back(c);
    }
  }
  // The summary names each rank once with the sources that agree on it.
  std::map<int, std::set<std::string>> sources;
  std::map<int, const Culprit*> first;
  for (const Culprit& c : report.culprits) {
    sources[c.rank].insert(c.source);
    if (!first.count(c.rank) || c.source == "nccl-ras") first[c.rank] = &c;
  }
  if (sources.empty()) {
    std::vector<std::string> why;
    for (const std::string& n : report.notes) {
      if (n.find("nothing listening") != std::string::npos) why.push_back("no RAS listening");
      if (n.find("no Flight Recorder FIFOs") != std::string::npos) why.push_back("no FIFOs");
      if (n.find("Flight Recorder not asked") != std::string::npos) why.push_back("no FR prefix");
    }
    report.summary = why.empty() ? "culprit: none named by NCCL RAS or the Flight Recorder"
                                 : fmt::format("culprit: none named ({})", fmt::join(why, "; "));
  } else {
    std::vector<std::string> parts;
    parts.reserve(sources.size());
    for (const auto& [rank, srcs] : sources) {
      parts.push_back(fmt::format("{} [{}]: {}", RankLabel(*first[rank]), fmt::join(srcs, ", "),
                                  first[rank]->reason));
    }
    report.summary = "culprit: " + fmt::format("{}", fmt::join(parts, " | "));
  }
  report.elapsed_s = (SteadyNowMs() - start_ms) / 1000.0;
  if (!options.incident_root.empty()) {
    Result<std::string> dir = WriteIncidentFolder(options.incident_root, context, report);
    if (dir.ok()) {
      report.incident_dir = *dir;
    } else {
      report.notes.push_back("incident folder not written: " + dir.status().message());
    }
  }
  return report;
}

nlohmann::json EvidenceReport::ToJson() const {
  using nlohmann::json;
  json j;
  j["incident_dir"] = incident_dir;
  j["summary"] = summary;
  j["elapsed_s"] = elapsed_s;
  j["notes"] = notes;
  j["culprits"] = json::array();
  for (const Culprit& c : culprits) {
    j["culprits"].push_back({{"source", c.source},
                             {"rank", c.rank},
                             {"host", c.host},
                             {"pid", c.pid},
                             {"gpu", c.gpu},
                             {"reason", c.reason}});
  }
  json ras = json::object();
  ras["replies"] = json::array();
  for (const RasReply& r : ras_replies) {
    ras["replies"].push_back({{"format", r.format}, {"bytes", r.body.size()}});
  }
  if (ras_verdict) {
    ras["stuck_communicators"] = ras_verdict->stuck_communicators;
    ras["lines"] = ras_verdict->lines;
  }
  j["nccl_ras"] = ras;
  json fr = json::object();
  fr["pokes"] = json::array();
  for (const FifoPoke& p : fr_pokes) {
    static const char* kOutcome[] = {"poked", "no_reader", "not_fifo", "error"};
    fr["pokes"].push_back({{"rank", p.rank},
                           {"path", p.path},
                           {"outcome", kOutcome[static_cast<int>(p.outcome)]},
                           {"detail", p.detail}});
  }
  fr["dumps"] = json::array();
  for (const FrDumpFile& d : fr_dumps) {
    fr["dumps"].push_back({{"rank", d.rank},
                           {"path", d.path},
                           {"read", d.dump.has_value()},
                           {"entries", d.dump ? d.dump->entries.size() : 0},
                           {"error", d.error}});
  }
  if (fr_analysis) fr["lines"] = fr_analysis->lines;
  j["flight_recorder"] = fr;
  return j;
}

nlohmann::json EvidenceReport::EventFields() const {
  nlohmann::json j = {{"summary", summary}, {"incident_dir", incident_dir}};
  j["culprits"] = nlohmann::json::array();
  for (const Culprit& c : culprits) {
    j["culprits"].push_back({{"rank", c.rank},
                             {"host", c.host},
                             {"pid", c.pid},
                             {"gpu", c.gpu},
                             {"source", c.source},
                             {"reason", c.reason}});
  }
  return j;
}

std::vector<std::pair<std::string, std::string>> EvidenceReport::HookEnv() const {
  return HookEnvFromEventFields(EventFields());
}

std::vector<std::pair<std::string, std::string>> HookEnvFromEventFields(
    const nlohmann::json& evidence) {
  auto text = [&](const char* key) {
    if (!evidence.is_object()) return std::string();
    const auto it = evidence.find(key);
    return it != evidence.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  std::set<int64_t> ranks;
  if (evidence.is_object()) {
    if (const auto cs = evidence.find("culprits"); cs != evidence.end() && cs->is_array()) {
      for (const auto& c : *cs) {
        if (c.is_object() && c.contains("rank") && c["rank"].is_number_integer()) {
          ranks.insert(c["rank"].get<int64_t>());
        }
      }
    }
  }
  return {{"WATTWATCH_INCIDENT_DIR", text("incident_dir")},
          {"WATTWATCH_CULPRIT_RANKS", fmt::format("{}", fmt::join(ranks, ","))},
          {"WATTWATCH_CULPRIT_REASON", text("summary")}};
}

// The thread and the task share this; the thread's copy keeps it alive after an abandoned task
// is destroyed, and the report it then sets is dropped with it.
struct EvidenceTask::Shared {
  std::mutex mu;
  std::condition_variable cv;
  std::optional<EvidenceReport> report;
};

EvidenceTask::EvidenceTask(EvidenceOptions options, HangContext context, Clock* clock)
    : shared_(std::make_shared<Shared>()),
      deadline_steady_ms_(SteadyNowMs() + options.overall_deadline_ms) {
  std::thread([shared = shared_, o = std::move(options), c = std::move(context), clock]() {
    EvidenceReport r;
    try {
      r = CollectHangEvidence(o, c, clock);
    } catch (const std::exception& e) {
      // Nothing a peer sends may take the hang's action down with it.
      r.summary = "culprit: none named (the evidence step failed)";
      r.notes.push_back(fmt::format("evidence step failed: {}", e.what()));
    } catch (...) {
      r.summary = "culprit: none named (the evidence step failed)";
      r.notes.push_back("evidence step failed");
    }
    std::lock_guard<std::mutex> lock(shared->mu);
    shared->report = std::move(r);
    shared->cv.notify_all();
  }).detach();
}

EvidenceTask::~EvidenceTask() = default;

bool EvidenceTask::Ready() const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  return shared_->report.has_value() && !taken_;
}

bool EvidenceTask::Overdue() const { return SteadyNowMs() >= deadline_steady_ms_; }

std::optional<EvidenceReport> EvidenceTask::Take(int64_t timeout_ms) {
  if (taken_) return std::nullopt;
  // Never past the overall deadline, whatever the caller asks.
  const int64_t until =
      std::min(SteadyNowMs() + std::max<int64_t>(0, timeout_ms), deadline_steady_ms_);
  std::unique_lock<std::mutex> lock(shared_->mu);
  shared_->cv.wait_for(lock, std::chrono::milliseconds(std::max<int64_t>(0, until - SteadyNowMs())),
                       [&] { return shared_->report.has_value(); });
  if (!shared_->report) return std::nullopt;
  taken_ = true;
  return std::move(shared_->report);
}

}  // namespace ww::evidence
