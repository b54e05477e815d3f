#include "evidence/incident.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

#include "core/env.h"
#include "core/timefmt.h"

namespace ww::evidence {
namespace {

namespace fs = std::filesystem;

// An evidence.json is a few kB (summary, culprits, notes): 64 MiB is far past any real one.
constexpr uint64_t kMaxEvidenceJsonBytes = uint64_t{64} << 20;

Status WriteText(const fs::path& path, const std::string& text) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) return Status::IoError(fmt::format("cannot write {}", path.string()));
  return Status::Ok();
}

// A name a file system takes: py-spy dump names come from the caller.
std::string SafeName(const std::string& name) {
  std::string s;
  for (char c : name) {
    s.push_back((std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')
                    ? c
                    : '_');
  }
  if (s.empty() || s[0] == '.') s.insert(s.begin(), '_');
  return s.substr(0, 100);
}

std::string StampForName(int64_t unix_ms) {
  const std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

std::string Slot(bool present, const std::string& file, const std::string& what) {
  return present ? fmt::format("- `{}`: {}\n", file, what)
                 : fmt::format("- `{}`: not provided ({})\n", file, what);
}

nlohmann::json ContextJson(const HangContext& c) {
  return {{"confirmed_unix_ms", c.confirmed_unix_ms},
          {"confirmed_utc", FormatIsoMs(c.confirmed_unix_ms, true)},
          {"job", c.job},
          {"hang_reason", c.hang_reason},
          {"actions", c.actions},
          {"telemetry_culprits", c.telemetry_culprits}};
}

}  // namespace

std::string RenderIncidentMarkdown(const HangContext& c, const EvidenceReport& r) {
  std::string md;
  md += fmt::format("# Hang incident: {}\n\n", c.job.empty() ? "job" : c.job);
  md += fmt::format("**What.** The job hung: {}.\n\n",
                    c.hang_reason.empty() ? "confirmed by the watcher" : c.hang_reason);
  md += fmt::format("**When.** Confirmed at {}; the evidence took {:.1f} s to gather.\n\n",
                    FormatIsoMs(c.confirmed_unix_ms, true), r.elapsed_s);
  md += "**Which ranks.**";
  if (r.culprits.empty()) {
    md += " None named. ";
    md += r.summary + ".";
    if (!c.telemetry_culprits.empty()) {
      md += fmt::format(" Telemetry alone said: {}.", fmt::join(c.telemetry_culprits, "; "));
    }
    md += "\n\n";
  } else {
    md += "\n\n";
    for (const Culprit& k : r.culprits) md += fmt::format("- {} (from {})\n", k.reason, k.source);
    md += "\n";
  }
  md += "**Why.** ";
  if (r.ras_verdict) {
    md +=
        "NCCL RAS was asked twice: only counts that stay the same across queries point at a "
        "stuck communicator.\n\n";
    for (const std::string& l : r.ras_verdict->lines) md += "- RAS: " + l + "\n";
  } else {
    md += "NCCL RAS gave no comparison (see notes).\n";
  }
  if (r.fr_analysis) {
    md += "\nFlight Recorder dumps, per process group, compared by collective_seq_id:\n\n";
    for (const std::string& l : r.fr_analysis->lines) md += "- FR: " + l + "\n";
  } else {
    md += "\nNo Flight Recorder dump was read (see notes).\n";
  }
  md += fmt::format(
      "\n**What was done.** {}\n\n",
      c.actions.empty() ? "Nothing yet: the evidence was gathered before any action." : c.actions);
  if (!r.notes.empty()) {
    md += "**Notes.**\n\n";
    for (const std::string& n : r.notes) md += "- " + n + "\n";
    md += "\n";
  }
  md += "## Files\n\n";
  md += Slot(true, "evidence.json", "this report as JSON (`wattwatch incident DIR --json`)");
  md += Slot(!c.triage_json.empty(), "triage.json", "the triage verdict at confirmation");
  md += Slot(!c.telemetry_csv.empty(), "telemetry-10min.csv",
             "the last 10 minutes of telemetry as nvidia-smi CSV");
  md += Slot(!c.pyspy_dumps.empty(), "pyspy/", "py-spy dumps of the job's processes");
  md += Slot(!c.events_jsonl.empty(), "events.jsonl", "the watcher's events");
  md += Slot(!r.ras_replies.empty(), "ras/",
             fmt::format("{} NCCL RAS replies and the handshake transcript", r.ras_replies.size()));
  size_t dumps = 0;
  for (const FrDumpFile& d : r.fr_dumps) dumps += d.bytes.empty() ? 0 : 1;
  md +=
      Slot(dumps > 0, "fr/",
           fmt::format("{} Flight Recorder dumps as the ranks wrote them, and reading.txt", dumps));
  return md;
}

Result<std::string> WriteIncidentFolder(const std::string& root, const HangContext& c,
                                        const EvidenceReport& report) {
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) return Status::IoError(fmt::format("cannot create {}: {}", root, ec.message()));
  const std::string base = fmt::format("{}/incident-{}", root, StampForName(c.confirmed_unix_ms));
  std::string dir = base;
  for (int n = 2; mkdir(dir.c_str(), 0755) != 0; ++n) {
    if (errno != EEXIST || n > 1000) {
      return Status::IoError(fmt::format("cannot create {}: {}", dir, std::strerror(errno)));
    }
    dir = fmt::format("{}-{}", base, n);
  }
  EvidenceReport r = report;
  r.incident_dir = dir;
  const fs::path d(dir);
  std::vector<Status> results;
  results.push_back(WriteText(d / "INCIDENT.md", RenderIncidentMarkdown(c, r)));
  nlohmann::json ev = r.ToJson();
  ev["context"] = ContextJson(c);
  results.push_back(
      WriteText(d / "evidence.json",
                ev.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"));
  if (!c.triage_json.empty()) results.push_back(WriteText(d / "triage.json", c.triage_json));
  if (!c.telemetry_csv.empty()) {
    results.push_back(WriteText(d / "telemetry-10min.csv", c.telemetry_csv));
  }
  for (const auto& [name, text] : c.pyspy_dumps) {
    results.push_back(WriteText(d / "pyspy" / (SafeName(name) + ".txt"), text));
  }
  if (!c.events_jsonl.empty()) results.push_back(WriteText(d / "events.jsonl", c.events_jsonl));
  std::string transcript;
  for (size_t i = 0; i < r.ras_replies.size(); ++i) {
    const RasReply& rr = r.ras_replies[i];
    results.push_back(WriteText(d / "ras" / fmt::format("query{}.{}", i + 1, rr.format), rr.body));
    transcript += fmt::format("# query {}\n{}", i + 1, rr.transcript);
  }
  if (!transcript.empty()) results.push_back(WriteText(d / "ras" / "transcript.txt", transcript));
  std::string reading;
  for (const FifoPoke& p : r.fr_pokes) {
    reading += fmt::format("poke rank {} {}: {}\n", p.rank, p.path, p.detail);
  }
  for (const FrDumpFile& f : r.fr_dumps) {
    if (!f.bytes.empty()) {
      results.push_back(
          WriteText(d / "fr" / SafeName(fs::path(f.path).filename().string()), f.bytes));
    }
    reading += f.dump ? fmt::format("rank {}: {} entries, version {}\n", f.rank,
                                    f.dump->entries.size(), f.dump->version)
                      : fmt::format("{}\n", f.error);
  }
  if (r.fr_analysis) {
    for (const std::string& l : r.fr_analysis->lines) reading += l + "\n";
  }
  if (!reading.empty()) results.push_back(WriteText(d / "fr" / "reading.txt", reading));
  for (const Status& s : results) {
    if (!s.ok()) return s;
  }
  return dir;
}

Result<std::string> IncidentSummary(const std::string& dir, bool as_json) {
  const std::string path = (fs::path(dir) / "evidence.json").string();
  // Through Env: a regular file of bounded size only, so a FIFO named evidence.json is refused
  // without waiting for a writer and a symlink to /dev/zero without reading it forever.
  auto text = DefaultEnv()->ReadFileToString(path, kMaxEvidenceJsonBytes);
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound) {
      return Status::NotFound(fmt::format("{}: no evidence.json (not an incident folder?)", dir));
    }
    return Status::InvalidInput(text.status().message());
  }
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::InvalidInput(fmt::format("{}: not valid JSON", path));
  }
  if (as_json) return j.dump(2) + "\n";
  // Every field is checked for its type before use (a wrong type is a message, never an abort);
  // the two that every wattwatch incident has are required.
  auto bad_type = [&](const std::string& key, const char* want) {
    return Status::InvalidInput(
        fmt::format("{}: '{}' is not {} (not an evidence.json written by wattwatch, or damaged)",
                    path, key, want));
  };
  for (const auto& [key, is_type, want] :
       {std::tuple{"summary", &nlohmann::json::is_string, "a string"},
        std::tuple{"context", &nlohmann::json::is_object, "an object"}}) {
    if (!j.contains(key)) {
      return Status::InvalidInput(fmt::format(
          "{}: no '{}' (not an evidence.json written by wattwatch, or damaged)", path, key));
    }
    if (!(j[key].*is_type)()) return bad_type(key, want);
  }
  const nlohmann::json& ctx = j["context"];
  auto str = [&](const nlohmann::json& obj, const char* key, const std::string& where,
                 std::string* out) -> Status {
    out->clear();
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return Status::Ok();
    if (!it->is_string()) return bad_type(where + key, "a string");
    *out = it->get<std::string>();
    return Status::Ok();
  };
  std::string job, when, what, actions, summary;
  WW_RETURN_IF_ERROR(str(ctx, "job", "context.", &job));
  WW_RETURN_IF_ERROR(str(ctx, "confirmed_utc", "context.", &when));
  WW_RETURN_IF_ERROR(str(ctx, "hang_reason", "context.", &what));
  WW_RETURN_IF_ERROR(str(ctx, "actions", "context.", &actions));
  WW_RETURN_IF_ERROR(str(j, "summary", "", &summary));
  double elapsed_s = 0;
  if (auto it = j.find("elapsed_s"); it != j.end() && !it->is_null()) {
    if (!it->is_number()) return bad_type("elapsed_s", "a number");
    elapsed_s = it->get<double>();
  }
  std::string out;
  out += fmt::format("incident {}\n", dir);
  out += fmt::format("job:      {}\n", job);
  out += fmt::format("when:     {}\n", when);
  out += fmt::format("what:     {}\n", what);
  out += fmt::format("{}\n", summary);
  if (auto it = j.find("culprits"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) return bad_type("culprits", "a list");
    for (size_t i = 0; i < it->size(); ++i) {
      const nlohmann::json& k = (*it)[i];
      const std::string where = fmt::format("culprits[{}].", i);
      if (!k.is_object()) return bad_type(fmt::format("culprits[{}]", i), "an object");
      std::string source, reason;
      WW_RETURN_IF_ERROR(str(k, "source", where, &source));
      WW_RETURN_IF_ERROR(str(k, "reason", where, &reason));
      out += fmt::format("  - [{}] {}\n", source, reason);
    }
  }
  if (auto it = j.find("notes"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) return bad_type("notes", "a list");
    for (const auto& n : *it) {
      if (n.is_string()) out += fmt::format("  note: {}\n", n.get<std::string>());
    }
  }
  out += fmt::format("done:     {}\n", actions);
  out += fmt::format("evidence step: {:.2f} s; details in {}/INCIDENT.md\n", elapsed_s, dir);
  return out;
}

}  // namespace ww::evidence
