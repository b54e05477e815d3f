#include "evidence/ras.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/strings.h"

namespace ww::evidence {
namespace {

// A peer's bytes quoted in a message: printable ASCII kept, anything else (a stray \xf5, a
// terminal escape, a newline) shown as \xNN, and at most 120 bytes: the message ends up in JSON
// (which needs valid UTF-8) and on the operator's terminal.
std::string Printable(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < 120; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      out.push_back(static_cast<char>(c));
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  if (s.size() > 120) out += "...";
  return out;
}

bool StartsWithIgnoreCase(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && AsciiLower(s.substr(0, prefix.size())) == AsciiLower(prefix);
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

Status WaitFor(int fd, short events, int64_t deadline_ms, const std::string& what) {
  for (;;) {
    const int64_t left = deadline_ms - SteadyNowMs();
    if (left <= 0) return Status::DeadlineExceeded(fmt::format("RAS did not answer {}", what));
    pollfd p{fd, events, 0};
    const int rc = poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (rc > 0) return Status::Ok();
    if (rc < 0 && errno != EINTR) return Status::IoError(fmt::format("poll: {}", strerror(errno)));
  }
}

Status SendAll(int fd, const std::string& line, int64_t deadline_ms) {
  size_t done = 0;
  while (done < line.size()) {
    WW_RETURN_IF_ERROR(WaitFor(fd, POLLOUT, deadline_ms, "(send)"));
    const ssize_t n = send(fd, line.data() + done, line.size() - done, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return Status::IoError(fmt::format("send to RAS: {}", strerror(errno)));
    }
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

// Reads one '\n'-terminated line (the handshake replies), keeping any extra bytes in *pending.
Result<std::string> ReadLine(int fd, std::string* pending, int64_t deadline_ms,
                             const std::string& what) {
  for (;;) {
    const size_t nl = pending->find('\n');
    if (nl != std::string::npos) {
      std::string line = pending->substr(0, nl);
      pending->erase(0, nl + 1);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      return line;
    }
    if (pending->size() > 4096) return Status::InvalidInput("RAS handshake line over 4 KiB");
    WW_RETURN_IF_ERROR(WaitFor(fd, POLLIN, deadline_ms, what));
    char buf[1024];
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n == 0) return Status::IoError(fmt::format("RAS closed the connection {}", what));
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return Status::IoError(fmt::format("recv from RAS: {}", strerror(errno)));
    }
    pending->append(buf, static_cast<size_t>(n));
  }
}

}  // namespace

Result<RasReply> QueryRas(const RasQueryOptions& o) {
  const int64_t deadline = SteadyNowMs() + std::max(o.timeout_ms, 100);
  const std::string where = fmt::format("{}:{}", o.host, o.port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* ai = nullptr;
  const std::string port = std::to_string(o.port);
  if (const int rc = getaddrinfo(o.host.c_str(), port.c_str(), &hints, &ai); rc != 0) {
    return Status::Unavailable(fmt::format("NCCL RAS {}: {}", where, gai_strerror(rc)));
  }
  std::string last_error = "no address";
  int sock = -1;
  for (addrinfo* a = ai; a != nullptr && sock < 0; a = a->ai_next) {
    const int s =
        socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (s < 0) continue;
    if (connect(s, a->ai_addr, a->ai_addrlen) == 0) {
      sock = s;
      break;
    }
    if (errno == EINPROGRESS) {
      Status w = WaitFor(s, POLLOUT, deadline, "the connection");
      int err = 0;
      socklen_t len = sizeof err;
      if (w.ok() && getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) {
        sock = s;
        break;
      }
      last_error = w.ok() ? strerror(err) : "no answer before the deadline";
    } else {
      last_error = strerror(errno);
    }
    close(s);
  }
  freeaddrinfo(ai);
  if (sock < 0) {
    return Status::Unavailable(fmt::format(
        "NCCL RAS: nothing listening on {} ({}); NCCL >= 2.24 serves it unless NCCL_RAS_ENABLE=0, "
        "on the address in NCCL_RAS_ADDR",
        where, last_error));
  }
  Fd fd(sock);
  RasReply reply;
  std::string pending;
  auto exchange = [&](const std::string& cmd) -> Result<std::string> {
    WW_RETURN_IF_ERROR(SendAll(fd.get(), cmd + "\n", deadline));
    Result<std::string> line = ReadLine(fd.get(), &pending, deadline, "to " + cmd);
    if (!line.ok()) return line.status();
    reply.transcript += "> " + cmd + "\n< " + *line + "\n";
    return line;
  };
  // client.cc connectToNCCL(): the protocol handshake; a version mismatch is only a warning there.
  Result<std::string> proto = exchange("CLIENT PROTOCOL 2");
  if (!proto.ok()) return proto.status();
  if (!StartsWithIgnoreCase(*proto, "SERVER PROTOCOL ")) {
    return Status::InvalidInput(
        fmt::format("NCCL RAS {}: unexpected handshake reply \"{}\"", where, Printable(*proto)));
  }
  // The server waits up to TIMEOUT for the other processes; keep a second for ourselves.
  const int server_timeout_s = std::max(1, o.timeout_ms / 1000 - 1);
  Result<std::string> t = exchange(fmt::format("TIMEOUT {}", server_timeout_s));
  if (!t.ok()) return t.status();
  reply.format = "text";
  if (o.prefer_json) {
    // setOutputFormat(): "SET FORMAT json" exists since 2.28.7; older servers answer ERROR.
    Result<std::string> f = exchange("SET FORMAT json");
    if (!f.ok()) return f.status();
    if (AsciiLower(TrimSpace(*f)) == "ok") reply.format = "json";
  }
  // getNCCLStatus(): VERBOSE lists every outlier rank, not only groups of at most 10.
  WW_RETURN_IF_ERROR(SendAll(fd.get(), "VERBOSE STATUS\n", deadline));
  reply.transcript += "> VERBOSE STATUS\n";
  reply.body = std::move(pending);
  for (;;) {
    Status w = WaitFor(fd.get(), POLLIN, deadline, "to VERBOSE STATUS in time");
    if (!w.ok()) {
      return Status(w.code(), fmt::format("NCCL RAS {}: {} ({} bytes so far)", where, w.message(),
                                          reply.body.size()));
    }
    char buf[16384];
    const ssize_t n = recv(fd.get(), buf, sizeof buf, 0);
    if (n == 0) break;  // the server closes after the report
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return Status::IoError(fmt::format("recv from RAS: {}", strerror(errno)));
    }
    reply.body.append(buf, static_cast<size_t>(n));
    if (reply.body.size() > o.max_reply_bytes) {
      return Status::InvalidInput(
          fmt::format("NCCL RAS {}: reply over {} bytes", where, o.max_reply_bytes));
    }
  }
  return reply;
}

namespace {

using nlohmann::json;

// Ranks grouped by count through an index, so a reply of many ranks at distinct counts costs
// n log n, not n^2 (a hostile peer's 32 MB reply holds ~600k ranks).
class Grouper {
 public:
  void Add(RasCommunicator* c, const std::string& collective, uint64_t count, const RasRank& r) {
    std::vector<RasCountGroup>& groups = c->counts[collective];
    auto [it, fresh] = index_[collective].try_emplace(count, groups.size());
    if (fresh) {
      groups.push_back({count, 1, {r}});
      return;
    }
    RasCountGroup& g = groups[it->second];
    g.ranks_total++;
    g.ranks.push_back(r);
  }

 private:
  std::map<std::string, std::map<uint64_t, size_t>> index_;
};

void SortGroups(RasCommunicator* c) {
  for (auto& [name, groups] : c->counts) {
    std::sort(groups.begin(), groups.end(),
              [](const RasCountGroup& a, const RasCountGroup& b) { return a.count > b.count; });
  }
}

// Typed reads of a peer's JSON: a member that is absent or of another type gives the default,
// never an exception (json::value() throws type_error when the member's type differs).
int IntField(const json& o, const char* key, int fallback) {
  const auto it = o.find(key);
  if (it == o.end()) return fallback;
  if (it->is_number_unsigned()) {
    const uint64_t v = it->get<uint64_t>();
    return v <= static_cast<uint64_t>(INT32_MAX) ? static_cast<int>(v) : fallback;
  }
  if (it->is_number_integer()) {
    const int64_t v = it->get<int64_t>();
    return v >= INT32_MIN && v <= INT32_MAX ? static_cast<int>(v) : fallback;
  }
  return fallback;
}

std::string StrField(const json& o, const char* key, std::string fallback) {
  const auto it = o.find(key);
  return it != o.end() && it->is_string() ? Printable(it->get_ref<const std::string&>()) : fallback;
}

bool BoolField(const json& o, const char* key) {
  const auto it = o.find(key);
  return it != o.end() && it->is_boolean() && it->get<bool>();
}

const json* ArrayField(const json& o, const char* key) {
  const auto it = o.find(key);
  return it != o.end() && it->is_array() ? &*it : nullptr;
}

std::string NormalizeHash(std::string h) {
  h = AsciiLower(h);
  if (h.rfind("0x", 0) == 0) h = h.substr(2);
  h.erase(0, std::min(h.find_first_not_of('0'), h.empty() ? 0 : h.size() - 1));
  return "0x" + h;
}

}  // namespace

Result<RasSnapshot> ParseRasJson(std::string_view text) {
  RasSnapshot snap;
  snap.format = "json";
  // Non-throwing parse; every access below checks the type first: a peer decides these bytes.
  const json doc = json::parse(text.begin(), text.end(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    return Status::InvalidInput(
        fmt::format("NCCL RAS JSON reply does not parse as a JSON object (starts \"{}\")",
                    Printable(text.substr(0, 40))));
  }
  snap.nccl_version = StrField(doc, "nccl_version", "");
  const json* comms = ArrayField(doc, "communicators");
  if (comms == nullptr && doc.contains("communicators")) {
    return Status::InvalidInput("NCCL RAS JSON: \"communicators\" not a list");
  }
  auto rank_of = [](const json& r) {
    RasRank out;
    out.rank = IntField(r, "rank", -1);
    out.host = StrField(r, "host", "");
    out.pid = IntField(r, "pid", -1);
    out.gpu = IntField(r, "cuda_dev", -1);
    return out;
  };
  const size_t n = comms == nullptr ? 0 : comms->size();
  for (size_t i = 0; i < n; ++i) {
    const json& c = (*comms)[i];
    if (!c.is_object()) {
      return Status::InvalidInput(fmt::format("NCCL RAS JSON: communicators[{}] not an object", i));
    }
    RasCommunicator comm;
    comm.hash = NormalizeHash(StrField(c, "hash", fmt::format("#{}", i)));
    comm.size = IntField(c, "size", -1);
    Grouper groups;
    if (const json* ranks = ArrayField(c, "ranks")) {
      for (const json& r : *ranks) {
        if (!r.is_object()) continue;
        const RasRank who = rank_of(r);
        const auto counts = r.find("collective_counts");
        if (counts == r.end() || !counts->is_object()) continue;
        for (const auto& [name, v] : counts->items()) {
          if (v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0)) {
            groups.Add(&comm, Printable(name), v.get<uint64_t>(), who);
          }
        }
      }
    }
    if (const json* missing = ArrayField(c, "missing_ranks")) {
      for (const json& r : *missing) {
        if (!r.is_object()) continue;
        RasMissingRank m;
        m.who = rank_of(r);
        if (const auto st = r.find("status"); st != r.end() && st->is_object()) {
          m.unresponsive = BoolField(*st, "unresponsive");
          m.dead = BoolField(*st, "considered_dead");
        }
        comm.missing.push_back(m);
      }
    }
    SortGroups(&comm);
    snap.communicators.push_back(std::move(comm));
  }
  return snap;
}

namespace {

// "GPU 3 managed by process 4711 on node 10.0.0.2" (client_support.cc rasClientRunComms).
void ParseManagedBy(std::string_view rest, RasRank* r) {
  const size_t gpu = rest.find("GPU ");
  if (gpu != std::string_view::npos) r->gpu = std::atoi(std::string(rest.substr(gpu + 4)).c_str());
  const size_t proc = rest.find("process ");
  if (proc != std::string_view::npos) {
    r->pid = std::atoi(std::string(rest.substr(proc + 8)).c_str());
  }
  const size_t node = rest.find(" on node ");
  if (node != std::string_view::npos) r->host = Printable(TrimSpace(rest.substr(node + 9)));
}

}  // namespace

Result<RasSnapshot> ParseRasText(std::string_view text) {
  RasSnapshot snap;
  snap.format = "text";
  std::istringstream in{std::string(text)};
  RasCommunicator* comm = nullptr;
  std::string coll;   // collective whose counts are being listed
  std::string block;  // "INCOMPLETE", "MISMATCH", "DEAD", ...
  bool saw_header = false;
  std::map<std::string, size_t> comm_index;  // hash -> position in snap.communicators
  for (std::string raw; std::getline(in, raw);) {
    const std::string line(TrimSpace(raw));
    if (line.rfind("NCCL version ", 0) == 0) {
      saw_header = true;
      std::istringstream v(line.substr(13));
      v >> snap.nccl_version;
      snap.nccl_version = Printable(snap.nccl_version);
      continue;
    }
    if (line.rfind("Communicators...", 0) == 0 || line.rfind("Job summary", 0) == 0) {
      saw_header = true;
      continue;
    }
    if (line.empty()) continue;
    if (line[0] == '#') {
      // "#0-0 (27a079b828ff1a75) MISMATCH"
      const size_t open = line.find('('), close = line.find(')');
      if (open == std::string::npos || close == std::string::npos || close < open) continue;
      const std::string hash =
          NormalizeHash(Printable(line.substr(open + 1, std::min<size_t>(close - open - 1, 64))));
      auto [at, fresh] = comm_index.try_emplace(hash, snap.communicators.size());
      if (fresh) {
        snap.communicators.push_back({});
        snap.communicators.back().hash = hash;
      }
      comm = &snap.communicators[at->second];
      block = std::string(TrimSpace(line.substr(close + 1)));
      coll.clear();
      continue;
    }
    if (!raw.empty() && raw[0] != ' ') {
      block = line;  // "Errors", "Warnings", "DEAD", "INCOMPLETE", "TIMEOUT", ...
      comm = nullptr;
      coll.clear();
      continue;
    }
    int a = 0;
    unsigned long long v = 0;
    if (line.rfind("Communicator ranks have different ", 0) == 0) {
      const std::string rest = line.substr(34);
      const size_t sp = rest.find(' ');
      coll = Printable(rest.substr(0, sp));
      if (coll == "status") coll.clear();
      continue;
    }
    if (comm != nullptr && !coll.empty() &&
        std::sscanf(line.c_str(), "%d ranks have launched up to operation %llu", &a, &v) == 2) {
      comm->counts[coll].push_back({v, a, {}});
      continue;
    }
    if (comm != nullptr && !coll.empty() &&
        std::sscanf(line.c_str(), "%d ranks have not launched any operations", &a) == 1 &&
        line.find("have not launched") != std::string::npos) {
      comm->counts[coll].push_back({0, a, {}});
      continue;
    }
    if (line.rfind("Rank ", 0) == 0) {
      RasRank r;
      r.rank = std::atoi(line.c_str() + 5);
      const size_t dash = line.find(" -- ");
      if (dash != std::string::npos) ParseManagedBy(std::string_view(line).substr(dash + 4), &r);
      if (comm == nullptr) continue;
      if (!coll.empty()) {
        if (std::sscanf(line.c_str(), "Rank %d has launched up to operation %llu", &a, &v) == 2) {
          comm->counts[coll].push_back({v, 1, {r}});
        } else if (line.find("has not launched any operations") != std::string::npos) {
          comm->counts[coll].push_back({0, 1, {r}});
        } else if (!comm->counts[coll].empty()) {
          comm->counts[coll].back().ranks.push_back(r);
        }
      } else if (block == "INCOMPLETE") {
        RasMissingRank m;
        m.who = r;
        m.unresponsive = true;
        comm->missing.push_back(m);
      }
      continue;
    }
    if (comm != nullptr && block == "INCOMPLETE" && line.rfind("The missing rank", 0) == 0) {
      // Older releases list only the numbers: "The missing rank: 21" / "ranks: 3, 5".
      const size_t colon = line.find(':');
      for (std::string_view f : SplitFields(std::string_view(line).substr(colon + 1), ',')) {
        RasMissingRank m;
        m.who.rank = std::atoi(std::string(TrimSpace(f)).c_str());
        m.unresponsive = true;
        comm->missing.push_back(m);
      }
      continue;
    }
    if (block == "DEAD" && line.rfind("Process ", 0) == 0) {
      RasRank r;
      r.pid = std::atoi(line.c_str() + 8);
      const size_t node = line.find(" on node ");
      const size_t managing = line.find(" managing GPU");
      if (node != std::string::npos) {
        r.host = Printable(line.substr(
            node + 9, managing == std::string::npos ? std::string::npos : managing - node - 9));
      }
      if (managing != std::string::npos) r.gpu = std::atoi(line.c_str() + managing + 13);
      snap.dead_processes.push_back(r);
    }
  }
  if (!saw_header) {
    return Status::InvalidInput(
        "NCCL RAS text reply has neither the \"NCCL version\" line nor a \"Communicators...\" "
        "section");
  }
  std::set<std::pair<int, std::string>> dead;
  for (const RasRank& d : snap.dead_processes) dead.emplace(d.pid, d.host);
  for (RasCommunicator& c : snap.communicators) {
    for (RasMissingRank& m : c.missing) {
      if (m.who.pid >= 0 && dead.count({m.who.pid, m.who.host})) m.dead = true;
    }
    SortGroups(&c);
  }
  return snap;
}

Result<RasSnapshot> ParseRasReply(const RasReply& reply) {
  return reply.format == "json" ? ParseRasJson(reply.body) : ParseRasText(reply.body);
}

namespace {

std::string Who(const RasRank& r) {
  std::string s = fmt::format("rank {}", r.rank);
  std::vector<std::string> parts;
  if (!r.host.empty() && r.gpu >= 0) {
    parts.push_back(fmt::format("{} GPU{}", r.host, r.gpu));
  } else if (!r.host.empty()) {
    parts.push_back(r.host);
  }
  if (r.pid >= 0) parts.push_back(fmt::format("pid {}", r.pid));
  if (!parts.empty()) s += " (" + fmt::format("{}", fmt::join(parts, ", ")) + ")";
  return s;
}

std::vector<std::pair<uint64_t, int>> Shape(const std::vector<RasCountGroup>& groups) {
  std::vector<std::pair<uint64_t, int>> s;
  s.reserve(groups.size());
  for (const RasCountGroup& g : groups) s.emplace_back(g.count, g.ranks_total);
  std::sort(s.begin(), s.end());
  return s;
}

bool CountsEqual(const RasCommunicator& a, const RasCommunicator& b) {
  std::set<std::string> names;
  for (const auto& [n, g] : a.counts) names.insert(n);
  for (const auto& [n, g] : b.counts) names.insert(n);
  for (const std::string& n : names) {
    auto ia = a.counts.find(n), ib = b.counts.find(n);
    if (ia == a.counts.end() || ib == b.counts.end()) return false;
    if (Shape(ia->second) != Shape(ib->second)) return false;
  }
  return true;
}

}  // namespace

RasVerdict CompareRasSnapshots(const RasSnapshot& first, const RasSnapshot& second) {
  RasVerdict v;
  if (second.communicators.empty()) {
    v.lines.push_back(second.format == "text"
                          ? "RAS reported no communicator with mismatched counts or missing ranks"
                          : "RAS reported no communicator");
  }
  // Indexed, so a reply of many communicators or missing ranks costs n log n, not n^2.
  std::map<std::string_view, const RasCommunicator*> first_by_hash;
  for (const RasCommunicator& c : first.communicators) first_by_hash[c.hash] = &c;
  for (const RasCommunicator& c2 : second.communicators) {
    const auto found = first_by_hash.find(c2.hash);
    const RasCommunicator* c1 = found == first_by_hash.end() ? nullptr : found->second;
    if (c1 == nullptr) {
      v.lines.push_back(fmt::format("communicator {} appeared between the two queries", c2.hash));
      continue;
    }
    // Missing in both queries: not a transient of the RAS collective.
    std::set<int> missing_before;
    for (const RasMissingRank& x : c1->missing) missing_before.insert(x.who.rank);
    for (const RasMissingRank& m : c2.missing) {
      if (!missing_before.count(m.who.rank)) continue;
      RasCulprit k;
      k.communicator = c2.hash;
      k.who = m.who;
      k.why = m.dead ? "dead" : "missing";
      k.sentence = fmt::format("{} is {} in communicator {}{}", Who(m.who),
                               m.dead ? "considered dead" : "missing", c2.hash,
                               m.unresponsive ? " (RAS could not reach it)" : "");
      v.lines.push_back(k.sentence);
      v.culprits.push_back(std::move(k));
    }
    if (!CountsEqual(*c1, c2)) {
      v.lines.push_back(fmt::format(
          "communicator {}: operation counts moved between the two queries; not stuck", c2.hash));
      continue;
    }
    if (c2.counts.empty()) continue;  // text: no mismatch listed, nothing to compare
    v.stuck_communicators.push_back(c2.hash);
    bool named = false;
    for (const auto& [coll, groups] : c2.counts) {
      if (groups.size() < 2) continue;
      const uint64_t top = groups.front().count;
      int total = 0;
      for (const RasCountGroup& g : groups) total += g.ranks_total;
      for (size_t gi = 1; gi < groups.size(); ++gi) {
        const RasCountGroup& g = groups[gi];
        const int others = total - g.ranks_total;
        const std::string rest =
            others == groups.front().ranks_total
                ? fmt::format("the other {} {} at #{}", others, others == 1 ? "is" : "are", top)
                : fmt::format("the other {} are at up to #{}", others, top);
        if (g.ranks.empty()) {
          v.lines.push_back(
              fmt::format("communicator {}: {} ranks are at {} #{}; {} (RAS did not "
                          "list them)",
                          c2.hash, g.ranks_total, coll, g.count, rest));
          continue;
        }
        for (const RasRank& r : g.ranks) {
          RasCulprit k;
          k.communicator = c2.hash;
          k.who = r;
          k.collective = coll;
          k.at = g.count;
          k.others_at = top;
          k.why = "behind";
          k.sentence = g.ranks.size() == 1
                           ? fmt::format("{} is at {} #{}; {}", Who(r), coll, g.count, rest)
                           : fmt::format("{} is at {} #{} with {} others; {}", Who(r), coll,
                                         g.count, g.ranks_total - 1, rest);
          v.lines.push_back(k.sentence);
          v.culprits.push_back(std::move(k));
          named = true;
        }
      }
    }
    if (!named) {
      v.lines.push_back(fmt::format(
          "communicator {}: counts did not move between the two queries and no rank is behind",
          c2.hash));
    }
  }
  return v;
}

}  // namespace ww::evidence
