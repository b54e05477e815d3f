// LineReader: streams a file line by line with a fixed-size buffer (no whole-file loads), so a
// multi-gigabyte log is read in bounded memory. Lines are returned without the trailing "\n" or
// "\r\n". gzip and zstd files are decompressed on the fly, recognized by their magic bytes (not
// the file name), so every reader built on it takes `log.csv.gz` and `log.zst` as they are.
//
// The path "-" is standard input (named "<stdin>" in messages), compressed or not. Format
// detection opens a file more than once, so the first 16 MiB read from standard input are kept
// and handed again to a reader that starts over; past them it is read once.
// A run of NUL bytes at the very end (what a node crash leaves: blocks allocated, never written)
// is dropped like a cut-off last line and counted in nul_tail_bytes() for the readers' warning;
// NUL bytes followed by more text stay in the lines (the readers reject binary data), and a run
// of them longer than a line is an error. UTF-16 text is refused with the iconv command to fix it.
// A UTF-8 byte-order mark (EF BB BF, what Excel and Notepad write) at the start of the text is
// dropped. A gzip or zstd stream that stops mid-member (what a node that crashed while writing
// leaves) gives the text decompressed up to the cut, then the end: truncated_note() says so, and
// it is printed once per path on stderr ("truncated compressed stream after N bytes") so that no
// reader takes the file silently; corrupt compressed data stays an error.
// Only regular files are opened (besides "-"): a FIFO would block the open and is read only once
// (format detection opens a file twice), a device such as /dev/zero never ends; both are refused
// at once, naming "-" for streaming.
// Not thread-safe; owned by one reader (standard input: one thread opens and reads it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace ww {

enum class Compression { kNone, kGzip, kZstd };
const char* CompressionName(Compression c);  // "", "gzip", "zstd"

class LineReader {
 public:
  // Lines longer than max_line_bytes are an error (a binary or corrupt file), not an allocation.
  static Result<std::unique_ptr<LineReader>> Open(const std::string& path,
                                                  size_t max_line_bytes = 1 << 20);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // Sets *line to the next line (valid until the next call) and returns true; false at the end.
  // *complete is false for a last line that had no newline (a log cut off mid-write).
  Result<bool> Next(std::string_view* line, bool* complete);

  // Appends up to max_bytes more of the file's text (decompressed) to *out; fewer only at the
  // end. For readers of whole documents (a JSON response is one long line) and for sniffing a
  // prefix; do not mix with Next() on one reader.
  Status ReadUpTo(size_t max_bytes, std::string* out);

  // 1-based number of the line last returned.
  int64_t line_number() const { return line_number_; }
  // Bytes of (decompressed) text handed out so far.
  uint64_t bytes_read() const { return bytes_read_; }
  const std::string& path() const { return path_; }
  // Reads the first bytes (kept for the first read) to learn the compression, once; an error for
  // UTF-16 text. Reading calls it; call it first to know compression() before any text is read.
  Status Sniff();
  // kNone until Sniff() (or the first read) ran.
  Compression compression() const { return compression_; }
  // NUL bytes dropped from the end of the text (0: none); final once Next() returned false.
  uint64_t nul_tail_bytes() const { return nul_tail_bytes_; }
  // "N NUL bytes after line L skipped (...)", or "" without a NUL tail: the readers' warning.
  std::string NulTailNote() const;
  // "truncated gzip stream after N bytes (...)" once the end of a cut-off compressed stream was
  // read, else "": the readers' warning.
  const std::string& truncated_note() const { return truncated_note_; }

 private:
  struct Decoder;
  LineReader(std::string path, int fd, size_t max_line_bytes, bool is_stdin);
  Status Fill();
  // Reads up to `cap` bytes of the file's text (decompressed) into dst; 0 at the end.
  Result<size_t> ReadText(char* dst, size_t cap);
  Result<size_t> ReadRaw(char* dst, size_t cap);

  std::string path_;
  int fd_;
  size_t max_line_bytes_;
  std::vector<char> buf_;
  size_t begin_ = 0;  // start of unread data in buf_
  size_t end_ = 0;    // end of valid data in buf_
  bool eof_ = false;
  bool sniffed_ = false;
  Compression compression_ = Compression::kNone;
  std::unique_ptr<Decoder> decoder_;
  int64_t line_number_ = 0;
  uint64_t bytes_read_ = 0;
  bool is_stdin_ = false;
  uint64_t stdin_offset_ = 0;    // raw bytes of standard input this reader consumed
  uint64_t nul_tail_bytes_ = 0;  // NULs dropped from the end of the pending text
  bool nul_dropped_ = false;     // ... and more text may still come (not yet at the end)
  int64_t nul_after_line_ = 0;   // the last whole line before them
  bool bom_checked_ = false;     // a UTF-8 byte-order mark at the start was looked for
  std::string truncated_note_;
};

}  // namespace ww
