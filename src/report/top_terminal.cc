// RunTop: the terminal side of `wattwatch top` (raw mode, alternate screen, keys, pacing).
#include <fmt/format.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <string>

#include "report/top_view.h"
#include "telemetry/pacer.h"

namespace ww::report {
namespace {

void WriteAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    const ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    off += static_cast<size_t>(n);
  }
}

// Raw keys, alternate screen, hidden cursor; everything undone in the destructor, which runs on
// quit, on end of a signal-stopped loop, and on error. ISIG stays on, so Ctrl-C raises SIGINT and
// the caller's handler sets the stop flag.
class TerminalSession {
 public:
  TerminalSession(int in_fd, int out_fd) : in_fd_(in_fd), out_fd_(out_fd) {
    if (isatty(in_fd_) && tcgetattr(in_fd_, &saved_) == 0) {
      termios raw = saved_;
      raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);
      raw.c_iflag &= ~static_cast<tcflag_t>(IXON | ICRNL);
      raw.c_cc[VMIN] = 0;
      raw.c_cc[VTIME] = 0;
      restore_ = tcsetattr(in_fd_, TCSANOW, &raw) == 0;
    }
    WriteAll(out_fd_, "\x1b[?1049h\x1b[?25l\x1b[2J\x1b[H");
  }
  ~TerminalSession() {
    WriteAll(out_fd_, "\x1b[0m\x1b[?25h\x1b[?1049l");
    if (restore_) tcsetattr(in_fd_, TCSANOW, &saved_);
  }
  TerminalSession(const TerminalSession&) = delete;
  TerminalSession& operator=(const TerminalSession&) = delete;

  void Size(int* w, int* h) const {
    winsize ws{};
    if (ioctl(out_fd_, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) {
      *w = ws.ws_col;
      *h = ws.ws_row;
    } else {
      *w = 120;
      *h = 40;
    }
  }

 private:
  int in_fd_, out_fd_;
  termios saved_{};
  bool restore_ = false;
};

enum class Key { kNone, kQuit, kSort, kUp, kDown, kEnter };

// Decodes what one read() returned: single keys and the ESC [ A / ESC [ B arrow sequences.
std::vector<Key> DecodeKeys(const char* buf, size_t n) {
  std::vector<Key> keys;
  for (size_t i = 0; i < n; ++i) {
    const char c = buf[i];
    if (c == 'q' || c == 'Q') {
      keys.push_back(Key::kQuit);
    } else if (c == 's' || c == 'S') {
      keys.push_back(Key::kSort);
    } else if (c == 'j') {
      keys.push_back(Key::kDown);
    } else if (c == 'k') {
      keys.push_back(Key::kUp);
    } else if (c == '\r' || c == '\n') {
      keys.push_back(Key::kEnter);
    } else if (c == '\x1b' && i + 2 < n && (buf[i + 1] == '[' || buf[i + 1] == 'O')) {
      if (buf[i + 2] == 'A') keys.push_back(Key::kUp);
      if (buf[i + 2] == 'B') keys.push_back(Key::kDown);
      i += 2;
    }
  }
  return keys;
}

}  // namespace

Status RunTop(TelemetrySource& source, Clock& clock, const TopRunOptions& o) {
  TopModel model;
  TopViewState view;
  view.source_label = o.source_label;
  if (!o.live && o.speed <= 0) view.source_label += " (as fast as possible)";
  if (!o.live && o.speed > 0 && o.speed != 1) view.source_label += fmt::format(" x{:g}", o.speed);
  TerminalSession term(o.in_fd, o.out_fd);

  constexpr int64_t kFrameNs = 100'000'000;  // redraw at most 10 times a second
  int64_t last_frame_ns = INT64_MIN;
  bool named = false, quit = false;
  Status error;
  std::vector<GpuSample> batch;
  Pacer pacer = o.live ? Pacer::Live(clock, o.interval_ms) : Pacer::Replay(clock, o.speed);

  // The pick follows the GPU, not the row: a re-sort by power must not move it to another GPU.
  std::optional<GpuKey> picked;
  auto index_of_pick = [&](const std::vector<GpuKey>& keys) {
    for (size_t i = 0; i < keys.size(); ++i) {
      if (picked && keys[i] == *picked) return static_cast<int>(i);
    }
    return 0;
  };
  auto move_pick = [&](int delta) {
    const auto keys = SortedKeys(model, view.sort);
    if (keys.empty()) return;
    const int i = std::clamp(index_of_pick(keys) + delta, 0, static_cast<int>(keys.size()) - 1);
    picked = keys[static_cast<size_t>(i)];
  };
  auto draw = [&] {
    term.Size(&view.width, &view.height);
    view.selected = index_of_pick(SortedKeys(model, view.sort));
    std::string frame = "\x1b[H";
    for (const std::string& line : RenderTop(model, view)) frame += line + "\x1b[K\r\n";
    frame += "\x1b[J";
    WriteAll(o.out_fd, frame);
    last_frame_ns = clock.NowMonotonicNs();
  };
  // Waits for keys until the monotonic deadline (or just polls when it has passed).
  auto handle_keys = [&](int64_t deadline_ns) {
    for (;;) {
      if (o.stop && o.stop->load() != 0) {
        quit = true;
        return;
      }
      const int64_t now = clock.NowMonotonicNs();
      int64_t wait_ns = std::max<int64_t>(0, deadline_ns - now);
      // Wake for the next frame too, so a long wait still redraws and sees the stop flag.
      wait_ns = std::min<int64_t>(wait_ns, kFrameNs);
      pollfd p{o.in_fd, POLLIN, 0};
      const int r = poll(&p, 1, static_cast<int>(wait_ns / 1'000'000));
      bool changed = false;
      if (r > 0 && (p.revents & POLLIN)) {
        char buf[64];
        const ssize_t n = ::read(o.in_fd, buf, sizeof buf);
        for (Key k : DecodeKeys(buf, n > 0 ? static_cast<size_t>(n) : 0)) {
          changed = true;
          switch (k) {
            case Key::kQuit:
              quit = true;
              return;
            case Key::kSort:
              view.sort = static_cast<TopSort>((static_cast<int>(view.sort) + 1) % 3);
              break;
            case Key::kUp:
              move_pick(-1);
              break;
            case Key::kDown:
              move_pick(1);
              break;
            case Key::kEnter:
              view.details = !view.details;
              break;
            case Key::kNone:
              break;
          }
        }
      }
      const int64_t after = clock.NowMonotonicNs();
      if (changed || after - last_frame_ns >= kFrameNs) draw();
      if (after >= deadline_ns) return;
    }
  };

  draw();
  while (!quit && !view.finished) {
    if (o.live) {
      handle_keys(pacer.DueNs());
      if (quit) break;
      // A tick late by whole intervals (a stalled terminal, a slow NVML read) is skipped, not
      // caught up in a burst; the count is shown so a gap in the sparkline is explained.
      if (pacer.Begin().dropped_ticks > 0 && error.ok()) {
        view.status = fmt::format("{} ticks skipped (late)", pacer.dropped_ticks());
      }
    }
    batch.clear();
    Status st = source.Next(&batch);
    if (!st.ok()) {
      error = st;
      view.status = "error: " + st.message();
      view.finished = true;
      break;
    }
    if (batch.empty()) {
      view.finished = true;
      model.Finish();
      break;
    }
    if (!named) {
      model.SetSourceInfo(source.hosts(), source.gpus());
      named = true;
    }
    if (!o.live) {
      // Pace replay by sample time: the batch is shown when its time has come at this speed.
      handle_keys(pacer.DueNs(batch.front().timestamp_ms));
      if (quit) break;
      pacer.Begin();
    }
    for (const GpuSample& s : batch) model.Add(s);
  }
  if (!quit) {
    draw();
    // The view stays after the end of a replay (or an error) until q or a signal.
    while (!quit) handle_keys(clock.NowMonotonicNs() + 1'000'000'000);
  }
  return error;
}

Status RunTopOn(const TopOptions& options, Clock& clock) {
  if (!isatty(options.run.out_fd)) {
    return Status::InvalidInput("stdout is not a terminal; for logs use `wattwatch triage`");
  }
  auto opened = OpenSourceSpec(options.source, options.source_options);
  if (!opened.ok()) return opened.status();
  TopRunOptions run = options.run;
  run.live = opened->live;
  run.source_label = opened->label;
  return RunTop(*opened->source, clock, run);
}

}  // namespace ww::report
