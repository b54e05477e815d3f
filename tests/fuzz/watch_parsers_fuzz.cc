// Fuzzes the watcher's parsers of outside input: /proc/PID/stat and
// /proc/PID/io (a process can name itself anything), --listen addresses, and
// the progress-log follower fed arbitrary bytes (binary logs, giant lines, no
// newline). The first byte picks the parser.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "export/http_server.h"
#include "watch/probes.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0: {
      pid_t ppid = 0;
      uint64_t ticks = 0;
      ww::watch::ParseProcStat(text, &ppid, &ticks);
      break;
    }
    case 1:
      ww::watch::ParseProcIo(text);
      break;
    case 2: {
      std::string host;
      int port = 0;
      if (ww::exporter::ParseListenAddress(std::string(text), &host, &port).ok() &&
          (port < 0 || port > 65535)) {
        __builtin_trap();
      }
      break;
    }
    case 3: {
      char path[] = "/tmp/ww_fuzz_log_XXXXXX";
      const int fd = mkstemp(path);
      if (fd < 0) return 0;
      auto probe = ww::watch::MakeLogProbe(path, "step (\\d+)");
      if (probe.ok()) {
        // Written after the probe opened the file: the probe reads it as new
        // lines.
        if (write(fd, text.data(), text.size()) < 0) break;
        (*probe)->Poll(1);
        ftruncate(fd, 0);  // truncation mid-follow
        (*probe)->Poll(1);
      }
      close(fd);
      unlink(path);
      break;
    }
  }
  return 0;
}
