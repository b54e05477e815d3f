// NCCL RAS client: the wire protocol of NCCL's own `ncclras` (NVIDIA/nccl src/ras/client.cc,
// served by src/ras/client_support.cc): "CLIENT PROTOCOL 2" -> "SERVER PROTOCOL n",
// "TIMEOUT s" -> "OK", "SET FORMAT json" -> "OK" (NCCL >= 2.28.7; older answers "ERROR: Unknown
// command", and the text report is read instead), then "VERBOSE STATUS" and the report until the
// server closes. Every step has a deadline; nothing listening is an ordinary outcome.
// Parsing and comparison are pure. Thread-safety: free functions on caller-owned values.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace ww::evidence {

struct RasRank {
  int rank = -1;
  std::string host;  // as RAS prints it (an IP address usually)
  int pid = -1;
  int gpu = -1;  // cuda_dev
};

// Ranks of one communicator sharing one operation count for one collective.
struct RasCountGroup {
  uint64_t count = 0;  // "launched up to operation N"
  int ranks_total = 0;
  std::vector<RasRank> ranks;  // all of them in JSON; the outliers RAS lists in text
};

struct RasMissingRank {
  RasRank who;
  bool unresponsive = false;
  bool dead = false;
};

struct RasCommunicator {
  std::string hash;  // "0xae94423cfbb2ef4a" (text reports print it without 0x; normalized)
  int size = -1;
  // collective name ("AllReduce", ..., or "collective" in pre-2.26 text) -> groups, largest count
  // first
  std::map<std::string, std::vector<RasCountGroup>> counts;
  std::vector<RasMissingRank> missing;
};

struct RasSnapshot {
  std::string format;  // "json" or "text"
  std::string nccl_version;
  std::vector<RasCommunicator> communicators;
  std::vector<RasRank> dead_processes;  // text "DEAD" section
};

Result<RasSnapshot> ParseRasJson(std::string_view text);
Result<RasSnapshot> ParseRasText(std::string_view text);

struct RasReply {
  std::string format;      // "json" or "text"
  std::string transcript;  // handshake lines, for the incident
  std::string body;        // the STATUS report as received
};

struct RasQueryOptions {
  std::string host = "localhost";
  int port = 28028;
  int timeout_ms = 5000;  // whole query; the server is told TIMEOUT timeout_ms/1000 - 1 s
  bool prefer_json = true;
  size_t max_reply_bytes = 32u << 20;
};

// kUnavailable with "nothing listening on HOST:PORT (connection refused)" when RAS is not there;
// kDeadlineExceeded when it does not answer in time.
Result<RasReply> QueryRas(const RasQueryOptions& options);

Result<RasSnapshot> ParseRasReply(const RasReply& reply);

struct RasCulprit {
  std::string communicator;
  RasRank who;
  std::string collective;
  uint64_t at = 0;
  uint64_t others_at = 0;
  std::string why;  // "behind", "missing", "dead"
  std::string sentence;
};

struct RasVerdict {
  std::vector<std::string> stuck_communicators;  // counts unchanged between the two queries
  std::vector<RasCulprit> culprits;
  std::vector<std::string> lines;  // in words
};

// Compares two snapshots taken a few seconds apart: a communicator whose counts did not move is
// stuck, and its ranks at a lower count than the rest, missing or dead, are named. Counts that
// moved name nobody. Pure.
RasVerdict CompareRasSnapshots(const RasSnapshot& first, const RasSnapshot& second);

}  // namespace ww::evidence
