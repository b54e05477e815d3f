// The one check every command runs before it writes a file a flag named: an output must not
// destroy an input. A shell glob after an output flag (`triage --html node*.csv`) hands the
// first log to the flag; without this check the report is written over the log and the command
// exits 0. Refused (unless --force):
//   - an output that is one of the inputs: the same file by identity (st_dev/st_ino), so
//     "./a.csv", "a.csv", a symlink and a hard link all match, whatever the spelling;
//   - two outputs that are the same file (the second would overwrite the first);
//   - an existing regular file that reads as a telemetry log (the ingest format detection).
// "-" (standard output), empty paths (flag not given) and existing files that are not regular
// (/dev/null, /dev/stdout, a FIFO) are not overwritten by writing and are not checked.
// Thread-safety: free functions; they only stat and read the named files.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace ww {

struct OutputFile {
  std::string flag;  // "--html", as the user typed it, for the message
  std::string path;
};

// Ok, or InvalidInput naming the flag and the file (and --force). inputs are the files the
// command reads (telemetry logs, a replay source); outputs the files it is about to write.
Status CheckOutputPaths(const std::vector<std::string>& inputs,
                        const std::vector<OutputFile>& outputs, bool force);

// Inputs that are the same file twice (by identity): InvalidInput naming both spellings.
// "-" (standard input) counts as one file too: it can be read only once.
Status CheckDistinctInputs(const std::vector<std::string>& inputs);

}  // namespace ww
