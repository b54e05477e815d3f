// A small reader for the pickles PyTorch's Flight Recorder writes (plain dicts, lists, tuples,
// strings, bytes, ints, floats, bools and None, with memo references). It never executes
// anything: any opcode that would import or call (GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ,
// NEWOBJ, PERSID, EXT*) is refused with its name and byte offset. Input size, string sizes, the
// number of values and the stack are capped, so a hostile or truncated dump costs bounded memory.
// Values live in one arena owned by PickleDoc and refer to each other by index: a memo reference
// (the same frame dict under many entries, or a list appended to itself) shares a value without
// ownership cycles; walkers bound their own depth.
// Thread-safety: ParsePickle is a pure function; a PickleDoc is immutable once returned.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace ww::evidence {

struct PickleValue {
  enum class Kind { kNone, kBool, kInt, kFloat, kStr, kBytes, kList, kTuple, kDict };
  Kind kind = Kind::kNone;
  bool bool_value = false;
  int64_t int_value = 0;
  double float_value = 0;
  std::string text;                                  // kStr (UTF-8 as written) and kBytes
  std::vector<uint32_t> items;                       // kList, kTuple: indexes into the doc
  std::vector<std::pair<uint32_t, uint32_t>> pairs;  // kDict (key, value), in insertion order
};

struct PickleLimits {
  // Memory is bounded by what is stored, never by how often it is referenced: a memo reference
  // (GET) adds one 4-byte index, not a copy of the value. The parse is linear in the input.
  size_t max_input_bytes = 64u << 20;   // a dump of 20k entries with frames is tens of MB
  size_t max_string_bytes = 16u << 20;  // one str or bytes value
  size_t max_values = 2u << 20;         // values created in total (~30 per entry)
  size_t max_stack = 1u << 20;          // values on the stack plus MARKs
  size_t max_memo = 2u << 20;
  // Everything the document holds: each value's struct, string bytes, 4 bytes per list/tuple
  // item and 8 per dict pair. With the input this bounds a parse to ~max_input_bytes + this.
  size_t max_stored_bytes = 256u << 20;
};

class PickleDoc {
 public:
  const PickleValue& root() const { return values_[root_]; }
  const PickleValue& at(uint32_t index) const { return values_[index]; }
  size_t size() const { return values_.size(); }
  // Dict lookup by str key; nullptr when `dict` is not a dict or has no such key.
  const PickleValue* Get(const PickleValue& dict, std::string_view key) const;
  // Typed reads of dict[key]: nullopt when absent or of another kind.
  std::optional<int64_t> GetInt(const PickleValue& dict, std::string_view key) const;
  std::optional<std::string> GetStr(const PickleValue& dict, std::string_view key) const;
  // A short JSON rendering for the incident (depth, element count and output size bounded; a
  // string shared by many entries is rendered in full while the output budget lasts, then as
  // "<N chars>"; bytes as "<N bytes>").
  std::string ToJson(const PickleValue& v, int max_depth = 12, size_t max_elements = 200000,
                     size_t max_output_bytes = 8u << 20) const;

 private:
  friend class PickleParser;
  std::vector<PickleValue> values_;
  uint32_t root_ = 0;
};

// Name of a pickle opcode byte ("GLOBAL", "REDUCE", ...) or "0xNN" when it is none.
std::string PickleOpcodeName(uint8_t op);

// Parses one pickle up to STOP. Errors name the opcode and its byte offset, e.g.
// "opcode GLOBAL (0x63) at offset 2 is refused: it would import and call code".
Result<PickleDoc> ParsePickle(std::string_view data, const PickleLimits& limits = {});

}  // namespace ww::evidence
