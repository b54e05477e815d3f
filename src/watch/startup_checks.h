// What `watch` and `run` check before they start, so a typo fails at start-up with the flag named,
// not at 3 a.m. when the first hang needs the webhook. Each returns kInvalidInput (or kIoError)
// with a message that names the flag. Thread-safety: free functions.
#pragma once

#include <optional>
#include <string>

#include "core/status.h"
#include "watch/actions.h"

namespace ww::watch {

// --webhook's URL form and --hook's program on $PATH.
Status CheckActions(const ActionConfig& actions);

// --pid: the process exists (a pid we may not signal still counts: it is another user's job).
Status CheckWatchedPid(int pid);

// --diag-signal: "", "none" -> nullopt; "USR1", "SIGUSR1", "10" -> the number.
Result<std::optional<int>> ParseDiagSignal(const std::string& name);

// --state-token-file: the token, read once (surrounding whitespace and a final newline dropped).
// kInvalidInput naming the file when it is missing, empty, over 4 KiB, or holds anything an HTTP
// header cannot carry (spaces, control characters). *warning: set when other users may read it.
Result<std::string> ReadStateToken(const std::string& path, std::string* warning);

// --ready-file: the bound address, written to a temporary file and renamed so a reader never sees
// half of it.
Status WriteReadyFile(const std::string& path, const std::string& address);

}  // namespace ww::watch
