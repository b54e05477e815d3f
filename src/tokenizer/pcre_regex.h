// PCRE2 for tokenizer.json patterns: a compiled pattern that many threads may match at once, and
// the rewrite of an Oniguruma pattern (the Rust `tokenizers` library's engine) into one PCRE2
// cuts at the same places (see hf_bpe.h, "Regex semantics").
// Thread-safety: a PcreRegex is immutable after Compile; Find keeps its match data and JIT stack
// per thread (thread_local), so one compiled pattern serves every thread without locks.
#pragma once

#define PCRE2_CODE_UNIT_WIDTH 8
#include <fmt/format.h>
#include <pcre2.h>

#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"

namespace ww {

class PcreRegex {
 public:
  static Result<std::shared_ptr<PcreRegex>> Compile(const std::string& pattern, bool literal,
                                                    const std::string& where) {
    int err = 0;
    PCRE2_SIZE err_off = 0;
    // PCRE2_LITERAL refuses PCRE2_UCP (it has no classes to apply it to).
    uint32_t options = literal ? (PCRE2_UTF | PCRE2_LITERAL) : (PCRE2_UTF | PCRE2_UCP);
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                     options, &err, &err_off, nullptr);
    if (code == nullptr) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof msg);
      return Status::InvalidInput(fmt::format("{}: regex does not compile at offset {}: {}", where,
                                              err_off, reinterpret_cast<const char*>(msg)));
    }
    auto re = std::shared_ptr<PcreRegex>(new PcreRegex(code));
    re->jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
    return re;
  }
  ~PcreRegex() { pcre2_code_free(code_); }

  // Finds the first match in s at or after `start`. s must be valid UTF-8 and `start` a character
  // boundary. Returns false when there is none (or, never seen in practice, when both JIT and
  // interpreter give up for resource limits, which the caller treats as "no more matches").
  bool Find(std::string_view s, size_t start, size_t* match_begin, size_t* match_end) const {
    ThreadState& ts = State();
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(s.data());
    int rc;
    if (jit_) {
      rc = pcre2_jit_match(code_, subject, s.size(), start, PCRE2_NO_UTF_CHECK, ts.match_data,
                           ts.match_context);
      if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
        rc = pcre2_match(code_, subject, s.size(), start, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT,
                         ts.match_data, ts.match_context);
      }
    } else {
      rc = pcre2_match(code_, subject, s.size(), start, PCRE2_NO_UTF_CHECK, ts.match_data,
                       ts.match_context);
    }
    if (rc < 0) return false;
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(ts.match_data);
    *match_begin = ov[0];
    *match_end = ov[1];
    return true;
  }

 private:
  explicit PcreRegex(pcre2_code* code) : code_(code) {}

  struct ThreadState {
    ThreadState() {
      match_data = pcre2_match_data_create(32, nullptr);
      match_context = pcre2_match_context_create(nullptr);
      // Long white-space runs backtrack through `\s+(?!\S)`; give JIT room to do it.
      jit_stack = pcre2_jit_stack_create(32 * 1024, 16 * 1024 * 1024, nullptr);
      pcre2_jit_stack_assign(match_context, nullptr, jit_stack);
      pcre2_set_heap_limit(match_context, 1024 * 1024);  // KiB, interpreter fallback only
    }
    ~ThreadState() {
      pcre2_match_data_free(match_data);
      pcre2_jit_stack_free(jit_stack);
      pcre2_match_context_free(match_context);
    }
    pcre2_match_data* match_data;
    pcre2_match_context* match_context;
    pcre2_jit_stack* jit_stack;
  };
  static ThreadState& State() {
    thread_local ThreadState state;
    return state;
  }

  pcre2_code* code_;
  bool jit_ = false;
};

// Rewrites a pattern written for Oniguruma (the Rust library's regex engine) so PCRE2 cuts at the
// same places: `\s`/`\S` become Unicode White_Space (PCRE2's UCP \s lacks U+0085), and
// `\p{L}`/`\p{N}` gain the characters PCRE2's Unicode tables are too old to know. Other escapes
// pass through untouched. The first call computes the missing ranges (about 150k matches).
std::string OnigToPcre(const std::string& pattern);

}  // namespace ww
