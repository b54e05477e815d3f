// `env` dumps (KEY=VALUE lines, `export` prefixes, multi-line values) of the nodes, for the
// env_consistency check.
#include "gate/gate.h"

namespace ww::gate {

EnvDump ParseEnvDump(const std::string& text) {
  EnvDump out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.rfind("export ", 0) == 0) line = line.substr(7);
    const size_t eq = line.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    std::string key = line.substr(0, eq);
    if (key.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") !=
        std::string::npos) {
      continue;  // continuation of a multi-line value, not a variable
    }
    out[key] = line.substr(eq + 1);
  }
  return out;
}

}  // namespace ww::gate
