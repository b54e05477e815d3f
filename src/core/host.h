// The name of this machine, as samples, metrics and events label it.
// Thread-safety: a free function.
#pragma once

#include <string>

namespace ww {

// gethostname(), or "localhost" when it fails or is empty.
std::string LocalHostName();

}  // namespace ww
