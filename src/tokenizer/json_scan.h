// Fast loading of the two big members of a tokenizer.json, `model.vocab` and `model.merges`
// (Gemma-3's 33 MB file is 97 % those two). A DOM parser (nlohmann) takes seconds on them; this
// scanner finds their byte ranges, hands the rest of the document (small) back for a DOM parse,
// and decodes the two ranges directly into callbacks with no intermediate allocation per entry.
// Everything outside the two ranges is validated by the DOM parse of the remainder; inside them
// this code is a strict JSON parser for exactly the shapes tokenizer.json uses. FindTokenIds
// serves readers that need a few ids and no encoder (the gate), so tokenizer.json is read here
// only.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace ww::tokjson {

struct BigMembers {
  std::string rest;         // the document with model.vocab / model.merges emptied
  std::string_view vocab;   // the raw JSON object of model.vocab, or empty when absent
  std::string_view merges;  // the raw JSON array of model.merges, or empty when absent
};

// Splits `text` (a JSON object) as described above. Only objects and arrays are cut out; a
// member of another type stays in `rest` for the DOM parse to judge. Errors name `source`.
Result<BigMembers> SplitBigMembers(std::string_view text, const std::string& source);

// Decodes a JSON object of string -> non-negative integer. Errors give the byte offset.
Status ParseVocab(std::string_view object, const std::string& source,
                  const std::function<void(const std::string& token, uint64_t id)>& on_entry);

// Decodes a JSON array whose elements are strings ("a b") or two-string arrays (["a", "b"]).
// For the string form `b` is empty and `a` holds the whole string.
Status ParseMerges(std::string_view array, const std::string& source,
                   const std::function<Status(size_t rank, const std::string& a,
                                              const std::string& b, bool pair_form)>& on_merge);

// Ok when no object or array in `text` is nested deeper than max_depth levels (strings are
// skipped, so brackets inside them do not count); else InvalidInput naming `source` and the byte
// where the limit is crossed. Iterative: a hostile file 40,000 levels deep costs one pass, and
// everything built from the document afterwards (the DOM, the normalizer and pre-tokenizer
// Sequences, which recurse) stays within max_depth.
Status CheckNestingDepth(std::string_view text, size_t max_depth, const std::string& source);

// The ids a whole tokenizer.json `text` gives `names`, and its id count (largest id + 1, added
// tokens included), for a reader that needs a few ids and no encoder (the gate). Any model type:
// model.vocab is an object (BPE, WordPiece) or Unigram's [[piece, score], ...] whose ids are the
// positions. The first id seen for a name wins, added tokens before model.vocab; a name the file
// lacks is absent from `ids`. Errors: not a JSON object, no vocabulary, a malformed model.vocab.
struct TokenIds {
  uint64_t id_count = 0;
  std::map<std::string, uint64_t, std::less<>> ids;
};
Result<TokenIds> FindTokenIds(std::string_view text, const std::string& source,
                              const std::vector<std::string>& names);

}  // namespace ww::tokjson
