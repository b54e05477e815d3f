#include "core/host.h"

#include <unistd.h>

namespace ww {

std::string LocalHostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

}  // namespace ww
