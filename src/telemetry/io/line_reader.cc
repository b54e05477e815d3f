#include "telemetry/io/line_reader.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>

#include "core/env.h"

namespace ww {
namespace {

// Standard input, shared by every LineReader opened on "-". Format detection opens a file more
// than once (detect, then read; W&B peeks at the first record), which a pipe cannot do: the
// first kReplayBytes read are kept and handed again to a reader that starts over, past them
// standard input is read once, by whichever reader gets there. Detection reads at most about
// 2 MiB, so the readers after it never run out of the replayed head.
class StdinTap {
 public:
  static StdinTap& Get() {
    static StdinTap tap;
    return tap;
  }

  Result<size_t> Read(uint64_t* offset, char* dst, size_t cap) {
    if (*offset < head_.size()) {
      const size_t n = std::min<size_t>(cap, head_.size() - *offset);
      std::memcpy(dst, head_.data() + *offset, n);
      *offset += n;
      return n;
    }
    if (*offset != consumed_) {
      return Status::InvalidInput(fmt::format(
          "<stdin>: read again past its first {} MiB (standard input can be read only once)",
          kReplayBytes >> 20));
    }
    for (;;) {
      const ssize_t n = ::read(STDIN_FILENO, dst, cap);
      if (n < 0) {
        if (errno == EINTR) continue;
        return Status::IoError(fmt::format("<stdin>: read failed: {}", std::strerror(errno)));
      }
      const auto got = static_cast<size_t>(n);
      if (head_.size() == consumed_ && head_.size() + got <= kReplayBytes) head_.append(dst, got);
      consumed_ += got;
      *offset += got;
      return got;
    }
  }

 private:
  static constexpr size_t kReplayBytes = size_t{16} << 20;
  std::string head_;       // the first bytes of standard input, as read
  uint64_t consumed_ = 0;  // bytes taken from the descriptor so far
};

// UTF-16 text (a byte-order mark, or ASCII with every other byte NUL: PowerShell's `>`, Excel's
// "Unicode text"): "FF FE" / "FE FF" / "" when the bytes do not look like it.
const char* Utf16Kind(const unsigned char* b, size_t n) {
  if (n >= 2 && b[0] == 0xff && b[1] == 0xfe) return "UTF-16LE (byte-order mark FF FE)";
  if (n >= 2 && b[0] == 0xfe && b[1] == 0xff) return "UTF-16BE (byte-order mark FE FF)";
  const size_t m = std::min<size_t>(n, 512) & ~size_t{1};
  if (m < 16) return "";
  auto ascii_at = [&](size_t parity) {
    for (size_t i = 0; i < m; i += 2) {
      const unsigned char text = b[i + parity], zero = b[i + 1 - parity];
      if (zero != 0 || text == 0 || text >= 0x80 ||
          (text < 0x20 && text != '\t' && text != '\n' && text != '\r')) {
        return false;
      }
    }
    return true;
  };
  if (ascii_at(0)) return "UTF-16LE (every other byte NUL)";
  if (ascii_at(1)) return "UTF-16BE (every other byte NUL)";
  return "";
}

// Prints the truncation warning once per path: the nvidia-smi reader has no place for it in its
// own warnings, and a cut-off file must never be read silently.
void WarnTruncatedOnce(const std::string& path, const std::string& note) {
  static std::mutex mu;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lock(mu);
  if (!warned.insert(path).second) return;
  std::fprintf(stderr, "wattwatch: warning: %s: %s\n", path.c_str(), note.c_str());
}

}  // namespace

const char* CompressionName(Compression c) {
  switch (c) {
    case Compression::kGzip:
      return "gzip";
    case Compression::kZstd:
      return "zstd";
    default:
      return "";
  }
}

// Streaming decompression state: the compressed bytes read ahead of the decoder, and the zlib or
// zstd context. Concatenated gzip members and zstd frames (what `cat a.gz b.gz` and log rotation
// produce) decode as one text.
struct LineReader::Decoder {
  std::vector<char> in = std::vector<char>(1 << 18);
  size_t in_begin = 0, in_end = 0;
  bool in_eof = false;
  bool stream_ended = true;  // the last member/frame ended cleanly (no partial one pending)
  z_stream z{};
  bool z_init = false;
  ZSTD_DStream* zs = nullptr;

  ~Decoder() {
    if (z_init) inflateEnd(&z);
    if (zs) ZSTD_freeDStream(zs);
  }
};

Result<std::unique_ptr<LineReader>> LineReader::Open(const std::string& path,
                                                     size_t max_line_bytes) {
  if (path == "-") {
    return std::unique_ptr<LineReader>(new LineReader("<stdin>", -1, max_line_bytes, true));
  }
  // O_NONBLOCK: opening a FIFO without a writer would otherwise wait forever; it is cleared
  // once the file is known to be a regular one.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    return Status::NotFound(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return Status::IoError(fmt::format("{}: fstat failed: {}", path, std::strerror(err)));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::InvalidInput(fmt::format(
        "{}: not a regular file ({}); give a log file, or stream it on standard input as '-' "
        "(e.g. `wattwatch triage - < {}`)",
        path, NonRegularFileKind(st.st_mode), path));
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  return std::unique_ptr<LineReader>(new LineReader(path, fd, max_line_bytes, false));
}

LineReader::LineReader(std::string path, int fd, size_t max_line_bytes, bool is_stdin)
    : path_(std::move(path)), fd_(fd), max_line_bytes_(max_line_bytes), is_stdin_(is_stdin) {
  buf_.resize(std::max<size_t>(1 << 20, max_line_bytes + 1));
}

LineReader::~LineReader() {
  if (fd_ >= 0) ::close(fd_);
}

std::string LineReader::NulTailNote() const {
  if (nul_tail_bytes_ == 0) return "";
  return fmt::format(
      "{} NUL bytes after line {} skipped (the end of a log whose writer crashed before its last "
      "blocks were written)",
      nul_tail_bytes_, nul_after_line_);
}

Result<size_t> LineReader::ReadRaw(char* dst, size_t cap) {
  if (is_stdin_) return StdinTap::Get().Read(&stdin_offset_, dst, cap);
  for (;;) {
    ssize_t n = ::read(fd_, dst, cap);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::IoError(fmt::format("{}: read failed: {}", path_, std::strerror(errno)));
    }
    return static_cast<size_t>(n);
  }
}

Status LineReader::Sniff() {
  if (sniffed_) return Status::Ok();
  // The first bytes decide: gzip (1f 8b) or zstd (28 b5 2f fd) magic, else plain text. They stay
  // in the decoder's input buffer for the first ReadText().
  sniffed_ = true;
  auto d = std::make_unique<Decoder>();
  size_t have = 0;
  while (have < 4) {
    auto n = ReadRaw(d->in.data() + have, d->in.size() - have);
    if (!n.ok()) return n.status();
    if (*n == 0) break;
    have += *n;
  }
  const auto* b = reinterpret_cast<const unsigned char*>(d->in.data());
  if (have >= 2 && b[0] == 0x1f && b[1] == 0x8b) {
    compression_ = Compression::kGzip;
  } else if (have >= 4 && b[0] == 0x28 && b[1] == 0xb5 && b[2] == 0x2f && b[3] == 0xfd) {
    compression_ = Compression::kZstd;
  }
  d->in_begin = 0;
  d->in_end = have;
  if (compression_ == Compression::kNone) {
    if (const char* utf16 = Utf16Kind(b, have); *utf16 != '\0') {
      return Status::InvalidInput(fmt::format(
          "{}: {} text; wattwatch reads UTF-8 (or ASCII) logs: convert it first with  iconv -f "
          "UTF-16 -t UTF-8 {} > {}.utf8",
          path_, utf16, path_ == "<stdin>" ? "FILE" : path_, path_ == "<stdin>" ? "FILE" : path_));
    }
  } else if (compression_ == Compression::kGzip) {
    // 15 + 32: a gzip or zlib header, detected by zlib itself.
    if (inflateInit2(&d->z, 15 + 32) != Z_OK) {
      return Status::IoError(fmt::format("{}: cannot start gzip decoder", path_));
    }
    d->z_init = true;
  } else {
    d->zs = ZSTD_createDStream();
    if (!d->zs) return Status::IoError(fmt::format("{}: cannot start zstd decoder", path_));
    ZSTD_initDStream(d->zs);
  }
  decoder_ = std::move(d);
  return Status::Ok();
}

Result<size_t> LineReader::ReadText(char* dst, size_t cap) {
  if (!sniffed_) {
    WW_RETURN_IF_ERROR(Sniff());
  }
  if (!decoder_) {
    return ReadRaw(dst, cap);
  }
  Decoder& d = *decoder_;
  if (compression_ == Compression::kNone) {
    // Leftover of the sniffing read, then the file itself.
    if (d.in_begin < d.in_end) {
      const size_t n = std::min(cap, d.in_end - d.in_begin);
      std::memcpy(dst, d.in.data() + d.in_begin, n);
      d.in_begin += n;
      return n;
    }
    return ReadRaw(dst, cap);
  }
  for (;;) {
    if (d.in_begin == d.in_end && !d.in_eof) {
      auto n = ReadRaw(d.in.data(), d.in.size());
      if (!n.ok()) return n.status();
      d.in_begin = 0;
      d.in_end = *n;
      if (*n == 0) d.in_eof = true;
    }
    if (d.in_begin == d.in_end && d.in_eof) {
      if (!d.stream_ended && bytes_read_ == 0 && end_ == begin_) {
        // Cut before anything decoded (zstd decodes whole blocks of up to 128 KiB).
        return Status::InvalidInput(fmt::format(
            "{}: {} stream cut off before its first block ended: nothing to read (the file is "
            "truncated)",
            path_, CompressionName(compression_)));
      }
      if (!d.stream_ended && truncated_note_.empty()) {
        // What a crashed node leaves: keep what decompressed, say where it stops.
        truncated_note_ = fmt::format(
            "truncated {} stream after {} bytes of text: read up to the cut (a file whose "
            "writer stopped mid-stream)",
            CompressionName(compression_), bytes_read_);
        WarnTruncatedOnce(path_, truncated_note_);
      }
      return size_t{0};
    }
    size_t produced = 0;
    if (compression_ == Compression::kGzip) {
      if (d.stream_ended) {
        // A new member starts here (the first, or one concatenated after another).
        if (inflateReset(&d.z) != Z_OK) {
          return Status::IoError(fmt::format("{}: gzip decoder reset failed", path_));
        }
        d.stream_ended = false;
      }
      d.z.next_in = reinterpret_cast<Bytef*>(d.in.data() + d.in_begin);
      d.z.avail_in = static_cast<uInt>(d.in_end - d.in_begin);
      d.z.next_out = reinterpret_cast<Bytef*>(dst);
      d.z.avail_out = static_cast<uInt>(std::min<size_t>(cap, 1u << 30));
      const int rc = inflate(&d.z, Z_NO_FLUSH);
      d.in_begin = d.in_end - d.z.avail_in;
      produced = std::min<size_t>(cap, 1u << 30) - d.z.avail_out;
      if (rc == Z_STREAM_END) {
        d.stream_ended = true;
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        return Status::InvalidInput(fmt::format("{}:{}: corrupt gzip data ({})", path_,
                                                line_number_ + 1,
                                                d.z.msg ? d.z.msg : "inflate error"));
      }
    } else {
      ZSTD_inBuffer in{d.in.data() + d.in_begin, d.in_end - d.in_begin, 0};
      ZSTD_outBuffer out{dst, cap, 0};
      const size_t rc = ZSTD_decompressStream(d.zs, &out, &in);
      d.in_begin += in.pos;
      produced = out.pos;
      if (ZSTD_isError(rc)) {
        return Status::InvalidInput(fmt::format("{}:{}: corrupt zstd data ({})", path_,
                                                line_number_ + 1, ZSTD_getErrorName(rc)));
      }
      d.stream_ended = rc == 0;
    }
    if (produced > 0) return produced;
  }
}

Status LineReader::ReadUpTo(size_t max_bytes, std::string* out) {
  size_t want = max_bytes;
  const size_t buffered = std::min(want, end_ - begin_);
  out->append(buf_.data() + begin_, buffered);
  begin_ += buffered;
  want -= buffered;
  while (want > 0) {
    const size_t at = out->size();
    const size_t chunk = std::min<size_t>(want, 1 << 20);
    out->resize(at + chunk);
    auto n = ReadText(out->data() + at, chunk);
    if (!n.ok()) {
      out->resize(at);
      return n.status();
    }
    out->resize(at + *n);
    bytes_read_ += *n;
    want -= *n;
    if (*n == 0) break;
  }
  return Status::Ok();
}

Status LineReader::Fill() {
  if (begin_ > 0) {
    std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (end_ < buf_.size()) {
    auto n = ReadText(buf_.data() + end_, buf_.size() - end_);
    if (!n.ok()) return n.status();
    if (*n == 0) {
      eof_ = true;
    } else {
      if (nul_dropped_) {
        // NULs were dropped as a possible tail, and the file goes on: unless this is more of
        // them, they were in the middle of the text.
        const char* p = buf_.data() + end_;
        for (size_t i = 0; i < *n; ++i) {
          if (p[i] != '\0') {
            return Status::InvalidInput(fmt::format(
                "{}:{}: {} NUL bytes in the middle of the file, then text again (a crash-damaged "
                "or binary file); only a NUL run at the very end is skipped",
                path_, line_number_ + 1, nul_tail_bytes_ + i));
          }
        }
      }
      end_ += *n;
      bytes_read_ += *n;
    }
  }
  return Status::Ok();
}

Result<bool> LineReader::Next(std::string_view* line, bool* complete) {
  if (!bom_checked_) {
    // A UTF-8 byte-order mark would stick to the first header name ("\xEF\xBB\xBFtimestamp").
    while (end_ - begin_ < 3 && !eof_) WW_RETURN_IF_ERROR(Fill());
    bom_checked_ = true;
    if (end_ - begin_ >= 3 && std::memcmp(buf_.data() + begin_, "\xEF\xBB\xBF", 3) == 0) {
      begin_ += 3;
    }
  }
  for (;;) {
    const char* start = buf_.data() + begin_;
    const size_t avail = end_ - begin_;
    const void* nl = avail > 0 ? std::memchr(start, '\n', avail) : nullptr;
    if (nl != nullptr) {
      size_t len = static_cast<size_t>(static_cast<const char*>(nl) - start);
      if (len > max_line_bytes_) {
        return Status::InvalidInput(fmt::format("{}:{}: line longer than {} bytes (binary file?)",
                                                path_, line_number_ + 1, max_line_bytes_));
      }
      begin_ += len + 1;
      if (len > 0 && start[len - 1] == '\r') --len;
      *line = std::string_view(start, len);
      *complete = true;
      ++line_number_;
      return true;
    }
    if ((avail > max_line_bytes_ || eof_) && avail > 0 && start[avail - 1] == '\0') {
      // A NUL run ending the pending text: a crashed writer's tail if nothing but NULs follows
      // (checked in Fill), dropped now so a long one does not count as an overlong line.
      size_t run = 0;
      while (run < avail && start[avail - 1 - run] == '\0') ++run;
      if (nul_tail_bytes_ == 0) nul_after_line_ = line_number_;
      nul_tail_bytes_ += run;
      nul_dropped_ = !eof_;
      end_ -= run;
      continue;
    }
    if (avail > max_line_bytes_) {
      return Status::InvalidInput(fmt::format("{}:{}: line longer than {} bytes (binary file?)",
                                              path_, line_number_ + 1, max_line_bytes_));
    }
    if (eof_) {
      nul_dropped_ = false;
      if (avail == 0) return false;
      size_t len = avail;
      begin_ = end_;
      if (start[len - 1] == '\r') --len;
      *line = std::string_view(start, len);
      *complete = false;
      ++line_number_;
      return true;
    }
    WW_RETURN_IF_ERROR(Fill());
  }
}

}  // namespace ww
