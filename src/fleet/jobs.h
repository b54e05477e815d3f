// Which job a GPU belongs to, and which fleet replica judges that job. Pure; value types.
//
// A job is named by the values of one or more labels dcgm-exporter puts on a GPU's series:
// `hpc_job` (Slurm/HPC job mapping), or `namespace,pod` (Kubernetes pod-resources mapping),
// joined with "/" ("training/llama-0"). A GPU without every named label (or with an empty
// value) belongs to no job: it is unattributed, counted but not judged.
//
// Sharding: replica K of N (0 <= K < N) judges the jobs whose ShardHash is K modulo N:
// FNV-1a 64 of the job id's bytes (offset basis 14695981039346656037, prime 1099511628211), then
// MurmurHash3's 64-bit finalizer (fmix64). The finalizer matters: FNV-1a's low bits are weak
// (its parity is the parity of the bytes' low bits alone, so "job-1"/"run-1"/... could all land
// on one of two replicas). Every replica computes the same split from the id alone: no
// coordination, no overlap, and a job stays on its replica while the replica count stays.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace ww::fleet {

// "hpc_job" or "namespace,pod" (or any label a relabel rule adds: "job_id") into label names.
// `hostname` is the GPU's Hostname (or hostname) label: one job per host. InvalidInput (naming
// --job-label) for an empty list, an empty or repeated name, or one that is not a Prometheus
// label name ([a-zA-Z_][a-zA-Z0-9_]*).
Result<std::vector<std::string>> ParseJobLabels(std::string_view flag);

// The job id of a GPU with these labels: the values of `names` joined by "/"; nullopt when one is
// missing or empty (unattributed).
std::optional<std::string> JobIdOf(const std::map<std::string, std::string>& labels,
                                   const std::vector<std::string>& names);

uint64_t Fnv1a64(std::string_view bytes);
// MurmurHash3 fmix64: every input bit reaches every output bit.
uint64_t Fmix64(uint64_t h);
inline uint64_t ShardHash(std::string_view job_id) { return Fmix64(Fnv1a64(job_id)); }

struct Shard {
  uint32_t index = 0;  // K
  uint32_t count = 1;  // N
  bool Owns(std::string_view job_id) const { return ShardHash(job_id) % count == index; }
};

// "K/N" with 0 <= K < N <= 4096. InvalidInput naming --shard otherwise.
Result<Shard> ParseShard(std::string_view flag);

}  // namespace ww::fleet
