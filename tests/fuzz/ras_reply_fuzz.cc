// Fuzzes the NCCL RAS reply parser (src/evidence/ras.h): the same bytes read as a JSON reply and
// as a text reply. Whatever a peer on the RAS port sends must give a snapshot or an error value,
// never an exception or an abort (a reply of "\xf5\n" or "pid":"x" once aborted `run` at the
// moment of a hang), and every string the comparison writes must be valid to put in the
// incident's JSON (dump() without a replacing error handler throws on invalid UTF-8).
// The corpus (tests/fuzz/corpus/ras_reply/) holds real-shaped JSON and text reports, wrong types,
// invalid UTF-8 and many-ranks replies; it also runs as a test.
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "evidence/ras.h"

namespace {

void CheckPrintable(const ww::evidence::RasVerdict& v) {
  try {
    (void)nlohmann::json(v.lines).dump();
    for (const auto& c : v.culprits) {
      (void)nlohmann::json({c.sentence, c.who.host, c.communicator, c.collective}).dump();
    }
  } catch (...) {
    std::abort();  // a peer's bytes reached the JSON unescaped
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string body(reinterpret_cast<const char*>(data), size);
  for (const char* format : {"json", "text"}) {
    ww::evidence::RasReply reply;
    reply.format = format;
    reply.body = body;
    ww::Result<ww::evidence::RasSnapshot> snap = ww::evidence::ParseRasReply(reply);
    if (!snap.ok()) {
      if (snap.status().message().empty()) std::abort();  // every refusal says why
      try {
        (void)nlohmann::json(snap.status().message()).dump();
      } catch (...) {
        std::abort();
      }
      continue;
    }
    CheckPrintable(ww::evidence::CompareRasSnapshots(*snap, *snap));
    ww::evidence::RasSnapshot empty;
    empty.format = format;
    CheckPrintable(ww::evidence::CompareRasSnapshots(empty, *snap));
    CheckPrintable(ww::evidence::CompareRasSnapshots(*snap, empty));
  }
  return 0;
}
