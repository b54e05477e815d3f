// UTF-8 helpers for the tokenizer: validation, repair and decoding, all following the WHATWG
// encoding standard's decoder (the same rule as Rust's String::from_utf8_lossy and JavaScript's
// TextDecoder): each maximal ill-formed subpart becomes exactly one U+FFFD.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ww::utf8 {

// Length of the well-formed sequence starting at s[i], or 0 when s[i] starts an ill-formed one.
// On 0, *bad_len gets the length of the maximal ill-formed subpart (>= 1) to replace.
size_t SequenceLength(std::string_view s, size_t i, size_t* bad_len);

bool IsValid(std::string_view s);

// `s` with each maximal ill-formed subpart replaced by U+FFFD.
std::string Sanitize(std::string_view s);

// Decodes the well-formed sequence at s[i] (which must be valid), advancing *i.
char32_t Decode(std::string_view s, size_t* i);

// Appends the UTF-8 form of code point `c` (c <= 0x10FFFF, not a surrogate).
void Append(char32_t c, std::string* out);

// Unicode White_Space, the set Rust's char::is_whitespace uses (lstrip/rstrip of added tokens).
bool IsWhiteSpace(char32_t c);

}  // namespace ww::utf8
