#include "telemetry/ingest/output_paths.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <filesystem>
#include <optional>
#include <utility>

#include "telemetry/ingest/open.h"

namespace ww {
namespace {

struct FileId {
  dev_t dev;
  ino_t ino;
  bool operator==(const FileId& o) const { return dev == o.dev && ino == o.ino; }
};

// The identity of an existing file (following symlinks); nullopt when it does not exist.
std::optional<FileId> IdOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileId{st.st_dev, st.st_ino};
}

bool IsRegularFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Two outputs that do not exist yet are the same file when their absolute, normalized paths are.
std::string Normalized(const std::string& path) {
  std::error_code ec;
  auto p = std::filesystem::weakly_canonical(std::filesystem::absolute(path, ec), ec);
  return ec ? path : p.string();
}

bool IsStdStream(const std::string& path) { return path == "-"; }

}  // namespace

Status CheckOutputPaths(const std::vector<std::string>& inputs,
                        const std::vector<OutputFile>& outputs, bool force) {
  if (force) return Status::Ok();
  std::vector<std::pair<std::string, FileId>> input_ids;
  for (const auto& in : inputs) {
    if (IsStdStream(in)) continue;
    if (auto id = IdOf(in)) input_ids.emplace_back(in, *id);
  }
  std::vector<std::pair<const OutputFile*, std::string>> seen;  // output, normalized path
  for (const auto& out : outputs) {
    if (out.path.empty() || IsStdStream(out.path)) continue;
    const auto id = IdOf(out.path);
    // Devices and pipes (/dev/null, /dev/stdout, a terminal) are written, never overwritten.
    if (id && !IsRegularFile(out.path)) continue;
    if (id) {
      for (const auto& [in, in_id] : input_ids) {
        if (*id == in_id) {
          return Status::InvalidInput(fmt::format(
              "{} {}: that is the input log {}; writing it would destroy the log (a shell glob "
              "after {} puts a log there: give the output path right after the flag), or pass "
              "--force",
              out.flag, out.path, in, out.flag));
        }
      }
    }
    const std::string norm = Normalized(out.path);
    for (const auto& [other, other_norm] : seen) {
      const auto other_id = IdOf(other->path);
      if (other_norm == norm || (id && other_id && *id == *other_id)) {
        return Status::InvalidInput(
            fmt::format("{} {} and {} {} are the same file: one would overwrite the other; "
                        "give each its own path",
                        other->flag, other->path, out.flag, out.path));
      }
    }
    seen.emplace_back(&out, norm);
    if (id) {
      auto format = DetectInputFormat(out.path, IngestOptions{});
      if (format.ok()) {
        return Status::InvalidInput(fmt::format(
            "{} {}: the file exists and reads as a telemetry log ({}); refusing to overwrite it "
            "(a shell glob after {} puts a log there): choose another path, or pass --force",
            out.flag, out.path, InputFormatName(*format), out.flag));
      }
    }
  }
  return Status::Ok();
}

Status CheckDistinctInputs(const std::vector<std::string>& inputs) {
  std::vector<std::pair<std::string, FileId>> ids;
  std::optional<std::string> stdin_seen;
  for (const auto& in : inputs) {
    if (IsStdStream(in)) {
      if (stdin_seen) {
        return Status::InvalidInput("- (standard input) given twice: it can be read only once");
      }
      stdin_seen = in;
      continue;
    }
    const auto id = IdOf(in);
    if (!id) continue;  // the reader names a missing file
    for (const auto& [other, other_id] : ids) {
      if (*id == other_id) {
        return Status::InvalidInput(
            other == in ? fmt::format("{} given twice: each log is one host, give it once", in)
                        : fmt::format("{} and {} are the same file: each log is one host, give "
                                      "it once",
                                      other, in));
      }
    }
    ids.emplace_back(in, *id);
  }
  return Status::Ok();
}

}  // namespace ww
