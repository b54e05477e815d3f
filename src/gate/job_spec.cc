#include "gate/job_spec.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <nlohmann/json.hpp>
#include <string_view>
#include <utility>
#include <vector>

#include "core/strings.h"

namespace ww::gate {
namespace {

// Walks the YAML tree, turning every problem into "FILE:LINE: KEY: why".
class SpecParser {
 public:
  explicit SpecParser(std::string file) : file_(std::move(file)) {
    base_dir_ = std::filesystem::path(file_).parent_path().string();
  }

  Status Error(const YAML::Node& node, std::string_view key, const std::string& why) const {
    const int line = node.IsDefined() ? node.Mark().line + 1 : 0;
    if (line > 0) return Status::InvalidInput(fmt::format("{}:{}: {}: {}", file_, line, key, why));
    return Status::InvalidInput(fmt::format("{}: {}: {}", file_, key, why));
  }

  Status CheckKeys(const YAML::Node& map, std::string_view where,
                   std::initializer_list<std::string_view> known) const {
    if (!map.IsMap())
      return Error(map, where.empty() ? "(top level)" : where, "expected a mapping of keys");
    for (const auto& kv : map) {
      const std::string key = kv.first.Scalar();
      if (std::find(known.begin(), known.end(), key) != known.end()) continue;
      std::string hint;
      size_t best = 3;
      for (auto k : known) {
        const size_t d = EditDistance(key, k);
        if (d < best) {
          best = d;
          hint = fmt::format(" (did you mean '{}'?)", k);
        }
      }
      std::string list;
      for (auto k : known) list += (list.empty() ? "" : ", ") + std::string(k);
      const std::string full = where.empty() ? key : fmt::format("{}.{}", where, key);
      return Error(kv.first, full, fmt::format("unknown key{}; known keys here: {}", hint, list));
    }
    return Status::Ok();
  }

  Result<uint64_t> Uint(const YAML::Node& node, std::string_view key, uint64_t min_value,
                        uint64_t max_value) const {
    if (!node.IsScalar()) return Error(node, key, "expected a number");
    const std::string& s = node.Scalar();
    WW_RETURN_IF_ERROR(NoLeadingZero(node, key));
    double v = 0;
    char* end = nullptr;
    errno = 0;
    v = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size() || errno != 0 || !std::isfinite(v) ||
        v != std::floor(v)) {
      return Error(node, key, fmt::format("'{}' is not a whole number", s));
    }
    if (v < static_cast<double>(min_value) || v > static_cast<double>(max_value)) {
      return Error(node, key, fmt::format("{} is out of range ({}..{})", s, min_value, max_value));
    }
    if (s.find_first_not_of("0123456789") == std::string::npos)
      return std::strtoull(s.c_str(), nullptr, 10);
    return static_cast<uint64_t>(v);
  }

  Result<double> Positive(const YAML::Node& node, std::string_view key) const {
    if (!node.IsScalar()) return Error(node, key, "expected a number");
    const std::string& s = node.Scalar();
    WW_RETURN_IF_ERROR(NoLeadingZero(node, key));
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v) || v <= 0) {
      return Error(node, key, fmt::format("'{}' is not a positive number", s));
    }
    return v;
  }

  // PyYAML (YAML 1.1), which the training script reads the same file with, takes a plain `010`
  // as octal 8 and `08` as a string, where a plain reading gives 10 and 8: refused, so the gate
  // never checks a different number than the one training uses.
  Status NoLeadingZero(const YAML::Node& node, std::string_view key) const {
    const std::string& s = node.Scalar();
    const size_t digits = s.find_first_not_of("+-");
    if (node.Tag() == "!" || digits == std::string::npos || digits + 1 >= s.size() ||
        s[digits] != '0' || !std::isdigit(static_cast<unsigned char>(s[digits + 1]))) {
      return Status::Ok();
    }
    const bool octal = s.find_first_not_of("01234567_", digits) == std::string::npos;
    return Error(node, key,
                 octal ? fmt::format("'{}' has a leading zero: PyYAML (YAML 1.1, what the training "
                                     "script reads) takes it as octal {}; write {} or drop the "
                                     "zero",
                                     s, std::strtoll(s.c_str(), nullptr, 8),
                                     std::strtoll(s.c_str(), nullptr, 8))
                       : fmt::format("'{}' has a leading zero: PyYAML (YAML 1.1, what the training "
                                     "script reads) takes it as a string, not a number; drop "
                                     "the zero",
                                     s));
  }

  Result<std::string> String(const YAML::Node& node, std::string_view key) const {
    if (!node.IsScalar() || node.Scalar().empty())
      return Error(node, key, "expected a non-empty string");
    return node.Scalar();
  }

  Result<bool> Bool(const YAML::Node& node, std::string_view key) const {
    if (node.IsScalar()) {
      const std::string& s = node.Scalar();
      if (s == "true" || s == "True" || s == "yes") return true;
      if (s == "false" || s == "False" || s == "no") return false;
    }
    return Error(node, key, "expected true or false");
  }

  Result<std::vector<std::string>> StringList(const YAML::Node& node, std::string_view key) const {
    std::vector<std::string> out;
    if (node.IsScalar()) {
      out.push_back(node.Scalar());
      return out;
    }
    if (!node.IsSequence() || node.size() == 0)
      return Error(node, key, "expected a non-empty list of strings");
    for (size_t i = 0; i < node.size(); ++i) {
      auto s = String(node[i], fmt::format("{}[{}]", key, i));
      if (!s.ok()) return s.status();
      out.push_back(*s);
    }
    return out;
  }

  std::string Resolve(const std::string& path) const {
    if (path.empty() || path[0] == '/' || base_dir_.empty()) return path;
    return (std::filesystem::path(base_dir_) / path).lexically_normal().string();
  }

  template <typename T>
  Result<T> Enum(const YAML::Node& node, std::string_view key,
                 std::optional<T> (*parse)(std::string_view), const char* allowed) const {
    auto s = String(node, key);
    if (!s.ok()) return s.status();
    auto v = parse(*s);
    if (!v) return Error(node, key, fmt::format("'{}' is not one of {}", *s, allowed));
    return *v;
  }

  const std::string& file() const { return file_; }

 private:
  std::string file_;
  std::string base_dir_;
};

// Bounds on a job spec (docs/gate.md): ranks (world_size, nodes x gpus_per_node, tp, pp, cp),
// the nodes a YAML file may expand to through anchors and aliases, and its nesting.
constexpr uint64_t kMaxWorldSize = uint64_t{1} << 17;
constexpr size_t kMaxSpecNodes = 200000;
constexpr size_t kMaxSpecDepth = 64;

// Anchors and aliases let 600 bytes stand for a billion nodes (nine lists of nine aliases to the
// list before): yaml-cpp shares them, but every walk over the tree pays for the expansion. Walked
// once here, iteratively, with a budget: a job spec has a few dozen nodes.
Status CheckExpandedSize(const YAML::Node& root, const std::string& file) {
  size_t visited = 0;
  std::vector<std::pair<YAML::Node, size_t>> stack{{root, 0}};
  while (!stack.empty()) {
    auto [node, depth] = stack.back();
    stack.pop_back();
    if (++visited > kMaxSpecNodes) {
      return Status::InvalidInput(fmt::format(
          "{}: the YAML expands to more than {} nodes (anchors and aliases repeating a subtree: "
          "an alias bomb?); a job spec has a few dozen",
          file, kMaxSpecNodes));
    }
    if (depth > kMaxSpecDepth) {
      return Status::InvalidInput(fmt::format("{}:{}: the YAML nests deeper than {} levels", file,
                                              node.Mark().line + 1, kMaxSpecDepth));
    }
    if (node.IsMap()) {
      for (const auto& kv : node) {
        stack.emplace_back(kv.first, depth + 1);
        stack.emplace_back(kv.second, depth + 1);
      }
    } else if (node.IsSequence()) {
      for (const auto& child : node) stack.emplace_back(child, depth + 1);
    }
  }
  return Status::Ok();
}

// yaml-cpp keeps the first of two equal keys in a mapping; PyYAML, which the training script
// reads the same file with, keeps the last. Rather than gate a different job than the one that
// runs, refuse the file, naming both lines. Keys deeper than the spec goes are not looked at.
Status CheckDuplicateKeys(const YAML::Node& node, const std::string& where, const std::string& file,
                          int depth = 0) {
  constexpr int kMaxDepth = 8;  // the spec nests three levels (data.paths[i])
  if (depth > kMaxDepth) return Status::Ok();
  if (node.IsMap()) {
    std::map<std::string, int> first_line;
    for (const auto& kv : node) {
      const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : YAML::Dump(kv.first);
      const std::string full = where.empty() ? key : fmt::format("{}.{}", where, key);
      const int line = kv.first.Mark().line + 1;
      auto [it, added] = first_line.emplace(key, line);
      if (!added) {
        return Status::InvalidInput(fmt::format(
            "{}:{}: {}: duplicate key, first given at line {}; PyYAML (which reads the training "
            "config) would take the value at line {}, the gate the one at line {}: keep one",
            file, line, full, it->second, line, it->second));
      }
      WW_RETURN_IF_ERROR(CheckDuplicateKeys(kv.second, full, file, depth + 1));
    }
  } else if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i) {
      WW_RETURN_IF_ERROR(
          CheckDuplicateKeys(node[i], fmt::format("{}[{}]", where, i), file, depth + 1));
    }
  }
  return Status::Ok();
}

#define WW_ASSIGN(lhs, expr)                \
  do {                                      \
    auto ww_r_ = (expr);                    \
    if (!ww_r_.ok()) return ww_r_.status(); \
    (lhs) = std::move(*ww_r_);              \
  } while (0)

Result<JobSpec> ParseRoot(const YAML::Node& root, const SpecParser& p) {
  JobSpec spec;
  spec.spec_path = p.file();
  WW_RETURN_IF_ERROR(p.CheckKeys(
      root, "",
      {"world_size", "nodes", "gpus_per_node", "parallel", "micro_batch_size", "grad_accum",
       "global_batch_size", "seq_len", "epochs", "max_steps", "data", "sharding", "packing",
       "packing_scope", "drop_last", "model", "checkpoint", "nodes_env", "env_allowlist"}));
  constexpr uint64_t kMaxInt = 1u << 30;
  // Ranks: the plan and its per-rank table hold a row per data-parallel rank (about 1.7 KB
  // each), so the range is what a gate runs in seconds: 2^17 ranks take 2.3 s and 230 MB, 2^20
  // took 20 s and 1.7 GB. 131072 is above the largest jobs run; tp*pp*cp cannot overflow.
  if (auto n = root["world_size"])
    WW_ASSIGN(spec.world_size, p.Uint(n, "world_size", 1, kMaxWorldSize));
  if (auto n = root["nodes"]) WW_ASSIGN(spec.nodes, p.Uint(n, "nodes", 1, kMaxWorldSize));
  if (auto n = root["gpus_per_node"])
    WW_ASSIGN(spec.gpus_per_node, p.Uint(n, "gpus_per_node", 1, 1024));
  if (!spec.world_size && !(spec.nodes && spec.gpus_per_node)) {
    return p.Error(root, "world_size", "missing: give world_size, or nodes and gpus_per_node");
  }
  if (spec.nodes && spec.gpus_per_node &&
      uint64_t{*spec.nodes} * *spec.gpus_per_node > kMaxWorldSize) {
    return p.Error(root["nodes"], "nodes",
                   fmt::format("nodes {} x gpus_per_node {} = {} ranks is out of range (1..{})",
                               *spec.nodes, *spec.gpus_per_node,
                               uint64_t{*spec.nodes} * *spec.gpus_per_node, kMaxWorldSize));
  }
  if (auto par = root["parallel"]) {
    WW_RETURN_IF_ERROR(p.CheckKeys(par, "parallel", {"tp", "pp", "cp"}));
    if (auto n = par["tp"]) WW_ASSIGN(spec.tp, p.Uint(n, "parallel.tp", 1, kMaxWorldSize));
    if (auto n = par["pp"]) WW_ASSIGN(spec.pp, p.Uint(n, "parallel.pp", 1, kMaxWorldSize));
    if (auto n = par["cp"]) WW_ASSIGN(spec.cp, p.Uint(n, "parallel.cp", 1, kMaxWorldSize));
  }
  auto required = [&](const char* key) -> Result<YAML::Node> {
    YAML::Node n = root[key];
    if (!n) return p.Error(root, key, "missing (required)");
    return n;
  };
  YAML::Node n;
  WW_ASSIGN(n, required("micro_batch_size"));
  WW_ASSIGN(spec.micro_batch_size, p.Uint(n, "micro_batch_size", 1, kMaxInt));
  WW_ASSIGN(n, required("grad_accum"));
  WW_ASSIGN(spec.grad_accum, p.Uint(n, "grad_accum", 1, kMaxInt));
  WW_ASSIGN(n, required("seq_len"));
  WW_ASSIGN(spec.seq_len, p.Uint(n, "seq_len", 1, uint64_t{1} << 24));
  if (auto v = root["global_batch_size"])
    WW_ASSIGN(spec.global_batch_size, p.Uint(v, "global_batch_size", 1, UINT32_MAX));
  if (auto v = root["epochs"]) WW_ASSIGN(spec.epochs, p.Uint(v, "epochs", 1, 1u << 20));
  if (auto v = root["max_steps"])
    WW_ASSIGN(spec.max_steps, p.Uint(v, "max_steps", 1, uint64_t{1} << 50));
  if (auto v = root["sharding"]) {
    WW_ASSIGN(spec.sharding,
              p.Enum<Sharding>(v, "sharding", ParseSharding, "contiguous|strided|by_file"));
  }
  if (auto v = root["packing"])
    WW_ASSIGN(spec.packing, p.Enum<Packing>(v, "packing", ParsePacking, "none|greedy|bfd"));
  if (auto v = root["packing_scope"]) {
    WW_ASSIGN(spec.packing_scope,
              p.Enum<PackingScope>(v, "packing_scope", ParsePackingScope, "rank|global"));
  }
  if (spec.sharding == Sharding::kByFile && spec.packing_scope == PackingScope::kGlobal &&
      spec.packing != Packing::kNone) {
    return p.Error(
        root["packing_scope"], "packing_scope",
        "global packing cannot be combined with sharding: by_file (each rank packs its own files)");
  }
  if (auto v = root["drop_last"]) WW_ASSIGN(spec.drop_last, p.Bool(v, "drop_last"));

  WW_ASSIGN(n, required("data"));
  WW_RETURN_IF_ERROR(p.CheckKeys(n, "data", {"format", "paths", "field", "tokenizer"}));
  if (!n["format"])
    return p.Error(n, "data.format", "missing (required): megatron|npy|jsonl|arrow|text-jsonl");
  WW_ASSIGN(spec.data.format,
            p.Enum<dataset::DataFormat>(n["format"], "data.format", dataset::ParseDataFormat,
                                        "megatron|npy|jsonl|arrow|text-jsonl"));
  if (!n["paths"])
    return p.Error(n, "data.paths", "missing (required): a list of files or prefixes");
  WW_ASSIGN(spec.data.paths, p.StringList(n["paths"], "data.paths"));
  for (auto& path : spec.data.paths) path = p.Resolve(path);
  spec.data.field = std::string(dataset::DefaultField(spec.data.format));
  if (auto v = n["field"]) WW_ASSIGN(spec.data.field, p.String(v, "data.field"));
  if (auto v = n["tokenizer"]) {
    std::string t;
    WW_ASSIGN(t, p.String(v, "data.tokenizer"));
    spec.data.tokenizer = p.Resolve(t);
  }
  if (spec.data.format == dataset::DataFormat::kTextJsonl && !spec.data.tokenizer) {
    return p.Error(n, "data.tokenizer", "missing: text-jsonl needs a tokenizer.json");
  }

  if (auto m = root["model"]) {
    WW_RETURN_IF_ERROR(
        p.CheckKeys(m, "model", {"params", "max_position_embeddings", "vocab_size", "config"}));
    ModelSpec model;
    if (auto v = m["params"]) WW_ASSIGN(model.params, p.Positive(v, "model.params"));
    if (auto v = m["max_position_embeddings"]) {
      WW_ASSIGN(model.max_position_embeddings,
                p.Uint(v, "model.max_position_embeddings", 1, uint64_t{1} << 32));
    }
    if (auto v = m["vocab_size"])
      WW_ASSIGN(model.vocab_size, p.Uint(v, "model.vocab_size", 1, uint64_t{1} << 40));
    if (auto v = m["config"]) {
      std::string c;
      WW_ASSIGN(c, p.String(v, "model.config"));
      model.config = p.Resolve(c);
    }
    spec.model = model;
  }
  if (auto c = root["checkpoint"]) {
    WW_RETURN_IF_ERROR(p.CheckKeys(c, "checkpoint", {"dir", "bytes_per_param", "keep"}));
    CheckpointSpec ckpt;
    if (!c["dir"])
      return p.Error(c, "checkpoint.dir", "missing (required when checkpoint is given)");
    WW_ASSIGN(ckpt.dir, p.String(c["dir"], "checkpoint.dir"));
    ckpt.dir = p.Resolve(ckpt.dir);
    if (auto v = c["bytes_per_param"])
      WW_ASSIGN(ckpt.bytes_per_param, p.Positive(v, "checkpoint.bytes_per_param"));
    if (auto v = c["keep"]) WW_ASSIGN(ckpt.keep, p.Uint(v, "checkpoint.keep", 0, 1u << 20));
    spec.checkpoint = ckpt;
  }
  if (auto v = root["nodes_env"]) {
    WW_ASSIGN(spec.nodes_env, p.StringList(v, "nodes_env"));
    for (auto& path : spec.nodes_env) path = p.Resolve(path);
  }
  if (auto v = root["env_allowlist"])
    WW_ASSIGN(spec.env_allowlist, p.StringList(v, "env_allowlist"));
  return spec;
}

}  // namespace

uint32_t JobSpec::World() const {
  if (world_size) return *world_size;
  return nodes.value_or(1) * gpus_per_node.value_or(1);
}

Result<JobSpec> ParseJobSpec(const std::string& yaml_text, const std::string& spec_path) {
  SpecParser parser(spec_path);
  try {
    const std::vector<YAML::Node> docs = YAML::LoadAll(yaml_text);
    if (docs.size() > 1) {
      // yaml-cpp's Load takes the first and drops the rest; PyYAML's safe_load refuses them.
      const int line = docs[1].Mark().line + 1;
      return Status::InvalidInput(fmt::format(
          "{}{}: more than one YAML document (a second '---'): PyYAML's safe_load, which reads "
          "the training config, refuses this; keep one document per job spec",
          spec_path, line > 0 ? fmt::format(":{}", line) : std::string()));
    }
    YAML::Node root = docs.empty() ? YAML::Node() : docs[0];
    if (!root.IsMap())
      return Status::InvalidInput(
          fmt::format("{}: expected a YAML mapping of keys at the top level", spec_path));
    WW_RETURN_IF_ERROR(CheckExpandedSize(root, spec_path));
    WW_RETURN_IF_ERROR(CheckDuplicateKeys(root, "", spec_path));
    return ParseRoot(root, parser);
  } catch (const YAML::Exception& e) {
    return Status::InvalidInput(
        fmt::format("{}:{}: invalid YAML: {}", spec_path, e.mark.line + 1, e.msg));
  }
}

std::optional<double> EstimateParamsFromConfig(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  auto num = [&](const char* key) -> std::optional<double> {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number()) return std::nullopt;
    return it->get<double>();
  };
  auto hidden = num("hidden_size"), layers = num("num_hidden_layers"),
       inter = num("intermediate_size"), heads = num("num_attention_heads"),
       vocab = num("vocab_size");
  if (!hidden || !layers || !inter || !heads || !vocab || *heads <= 0) return std::nullopt;
  const double kv = num("num_key_value_heads").value_or(*heads);
  const double head_dim = num("head_dim").value_or(*hidden / *heads);
  const double attn =
      *hidden * head_dim * (*heads) * 2 + *hidden * head_dim * kv * 2;  // q, o, k, v
  const double mlp = 3 * *hidden * *inter;                              // gated MLP: gate, up, down
  const double norms = 2 * *hidden;
  auto tie = j.find("tie_word_embeddings");
  const bool tied = tie != j.end() && tie->is_boolean() && tie->get<bool>();
  return *layers * (attn + mlp + norms) + *vocab * *hidden * (tied ? 1 : 2) + *hidden;
}

Result<JobSpec> LoadJobSpec(Env* env, const std::string& spec_path) {
  auto text = env->ReadFileToString(spec_path, 1 << 20);
  if (!text.ok()) return text.status();
  auto spec = ParseJobSpec(*text, spec_path);
  if (!spec.ok() || !spec->model || !spec->model->config) return spec;
  ModelSpec& model = *spec->model;
  auto config = env->ReadFileToString(*model.config, 16 << 20);
  if (!config.ok()) {
    return Status::InvalidInput(
        fmt::format("{}: model.config: {}", spec_path, config.status().message()));
  }
  auto j = nlohmann::json::parse(*config, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) {
    return Status::InvalidInput(
        fmt::format("{}: model.config: {} is not a JSON object", spec_path, *model.config));
  }
  auto get_uint = [&](const char* key) -> std::optional<uint64_t> {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number_unsigned()) return std::nullopt;
    return it->get<uint64_t>();
  };
  if (!model.max_position_embeddings)
    model.max_position_embeddings = get_uint("max_position_embeddings");
  if (!model.vocab_size) model.vocab_size = get_uint("vocab_size");
  if (!model.params) {
    model.params = EstimateParamsFromConfig(*config);
    model.params_estimated = model.params.has_value();
  }
  return spec;
}

}  // namespace ww::gate
