// Process exit codes shared by every subcommand, so a scheduler can act on them.
#pragma once

namespace ww {
inline constexpr int kExitOk = 0;
inline constexpr int kExitCheckFailed = 1;  // gate: a check failed
inline constexpr int kExitBadInput = 2;     // unusable input, bad flags, missing dependency
inline constexpr int kExitHang = 3;  // a hang was found (triage --fail-on-hang) or killed (run)
}  // namespace ww
