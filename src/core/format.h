// Human-readable figures in reports and messages, and the one way a GPU is named in words.
// Locale-independent (fmt). Pure; no thread-safety concerns.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ww {

// Binary units: "512 B", "1.5 KiB", "2.0 GiB" (`decimals` after the point above bytes).
std::string FormatBytes(double bytes, int decimals = 1);

// A span of time for a person: "12.3 s" under a minute, then "2m29s", "1h02m03s" (whole seconds,
// rounded). compact (the terminal view): "12s", "2m29s", "1h02m".
std::string FormatDuration(double seconds, bool compact = false);

// The GPU label used everywhere a GPU is named for a person or a metric label: "node0/GPU3".
std::string GpuLabel(std::string_view host, int gpu);
// For a host index without a name: "host2/GPU3".
std::string GpuLabelForHostIndex(int host_index, int gpu);

}  // namespace ww
