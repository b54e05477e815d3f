// Encoding: added tokens split out, normalization (hf_bpe_normalize.cc), pre-tokenization and the
// BPE merge by rank. Loading is hf_bpe_load.cc.
#include "tokenizer/hf_bpe.h"

#include <utf8proc.h>

#include <algorithm>
#include <cstring>
#include <queue>

#include "tokenizer/pcre_regex.h"
#include "tokenizer/utf8.h"

namespace ww {
namespace {

// Sinks receive ids as they are produced: Encode keeps them, CountTokens only counts.
struct IdSink {
  std::vector<uint32_t>* out;
  void Add(uint32_t id) { out->push_back(id); }
  void AddSpan(const uint32_t* ids, size_t n) { out->insert(out->end(), ids, ids + n); }
};
struct CountSink {
  size_t count = 0;
  void Add(uint32_t) { ++count; }
  void AddSpan(const uint32_t*, size_t n) { count += n; }
};

// Splits `text` on the added tokens of `set`, leftmost-longest like the Rust library's
// Aho-Corasick matcher. Calls on_span(text piece) for text between tokens and on_token(id).
template <typename Set, typename OnSpan, typename OnToken>
void SplitOnAdded(const Set& set, std::string_view text, OnSpan&& on_span, OnToken&& on_token) {
  if (set.empty) {
    on_span(text);
    return;
  }
  size_t span_start = 0;
  size_t i = 0;
  while (i < text.size()) {
    if (!set.is_first_byte[static_cast<unsigned char>(text[i])]) {
      ++i;
      continue;
    }
    const auto& candidates = set.by_first_byte[static_cast<unsigned char>(text[i])];
    const HfBpeTokenizer::AddedToken* hit = nullptr;
    for (const auto* tok : candidates) {
      if (text.compare(i, tok->content.size(), tok->content) == 0) {
        hit = tok;
        break;
      }
    }
    if (hit == nullptr) {
      ++i;
      continue;
    }
    size_t start = i;
    size_t end = i + hit->content.size();
    if (hit->lstrip) {
      // Swallow white space before the token, back to the previous token at most.
      while (start > span_start) {
        size_t p = start - 1;
        while (p > span_start && (static_cast<unsigned char>(text[p]) & 0xC0) == 0x80) --p;
        size_t q = p;
        if (!utf8::IsWhiteSpace(utf8::Decode(text, &q))) break;
        start = p;
      }
    }
    if (hit->rstrip) {
      while (end < text.size()) {
        size_t q = end;
        if (!utf8::IsWhiteSpace(utf8::Decode(text, &q))) break;
        end = q;
      }
    }
    if (start > span_start) on_span(text.substr(span_start, start - span_start));
    on_token(hit->id);
    span_start = end;
    i = end;
  }
  if (span_start < text.size()) on_span(text.substr(span_start));
}

}  // namespace

HfBpeTokenizer::HfBpeTokenizer() {
  byte_id_.fill(-1);
  fallback_id_.fill(-1);
}
HfBpeTokenizer::~HfBpeTokenizer() = default;

namespace {
inline uint64_t MixPair(uint64_t key) {
  key *= 0x9E3779B97F4A7C15ULL;
  return key ^ (key >> 29);
}
}  // namespace

void HfBpeTokenizer::AddMerge(uint64_t key, MergeInfo info) {
  for (uint64_t i = MixPair(key) & merge_mask_;; i = (i + 1) & merge_mask_) {
    MergeSlot& slot = merge_table_[i];
    if (slot.key == kEmptyPair) {
      slot = {key, info};
      ++merge_count_;
      return;
    }
    if (slot.key == key) {
      slot.info = info;
      return;
    }
  }
}

const HfBpeTokenizer::MergeInfo* HfBpeTokenizer::FindMerge(uint32_t a, uint32_t b) const {
  const uint64_t key = PairKey(a, b);
  for (uint64_t i = MixPair(key) & merge_mask_;; i = (i + 1) & merge_mask_) {
    const MergeSlot& slot = merge_table_[i];
    if (slot.key == key) return &slot.info;
    if (slot.key == kEmptyPair) return nullptr;
  }
}

void HfBpeTokenizer::InitialSymbols(std::string_view piece, std::vector<uint32_t>* out) const {
  if (byte_level_) {
    for (unsigned char c : piece) {
      if (byte_id_[c] >= 0) {
        out->push_back(static_cast<uint32_t>(byte_id_[c]));
      } else if (unk_id_) {
        out->push_back(*unk_id_);
      }
    }
    return;
  }
  // One symbol per character (with the model's prefix and suffix), as the Rust library's
  // BPE::merge_word: unknown characters fall back to their bytes' <0xXX> tokens, else to
  // unk_token, consecutive unknowns fused into one with fuse_unk.
  thread_local std::string key;
  bool last_was_unk = false;
  for (size_t i = 0; i < piece.size();) {
    size_t bad;
    size_t len = utf8::SequenceLength(piece, i, &bad);
    if (len == 0) len = bad;  // not reached: input is valid UTF-8
    std::string_view ch = piece.substr(i, len);
    const bool first = i == 0;
    i += len;
    const bool last = i >= piece.size();
    std::string_view lookup = ch;
    if ((!first && !continuing_prefix_.empty()) || (last && !end_of_word_suffix_.empty())) {
      key.clear();
      if (!first) key += continuing_prefix_;
      key += ch;
      if (last) key += end_of_word_suffix_;
      lookup = key;
    }
    if (const auto id = vocab_.Find(lookup)) {
      out->push_back(*id);
      last_was_unk = false;
      continue;
    }
    if (byte_fallback_) {
      bool all = true;
      for (unsigned char b : lookup) all = all && fallback_id_[b] >= 0;
      if (all) {
        for (unsigned char b : lookup) out->push_back(static_cast<uint32_t>(fallback_id_[b]));
        last_was_unk = false;
        continue;
      }
    }
    if (unk_id_) {
      if (!(fuse_unk_ && last_was_unk)) out->push_back(*unk_id_);
      last_was_unk = true;
    }
  }
}

void HfBpeTokenizer::MergeSmall(std::vector<uint32_t>* symbols) const {
  // Symbols and the rank of each adjacent pair; merge the lowest rank (leftmost on ties) until
  // no pair has a merge. Only the two pairs around a merge are looked up again. At most
  // kSmallPieceBytes symbols, so everything lives on the stack.
  constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
  std::array<uint32_t, kSmallPieceBytes> ids, ranks, merged;
  size_t n = symbols->size();
  std::copy(symbols->begin(), symbols->end(), ids.begin());
  auto lookup = [&](size_t i) {
    const MergeInfo* m = FindMerge(ids[i], ids[i + 1]);
    ranks[i] = m ? m->rank : kNone;
    merged[i] = m ? m->merged_id : 0;
  };
  size_t pairs = n == 0 ? 0 : n - 1;
  for (size_t i = 0; i < pairs; ++i) lookup(i);
  while (pairs > 0) {
    size_t best = 0;
    for (size_t i = 1; i < pairs; ++i) {
      if (ranks[i] < ranks[best]) best = i;
    }
    if (ranks[best] == kNone) break;
    ids[best] = merged[best];
    // Drop symbol best+1 and pair `best`; pairs after it shift left by one.
    for (size_t i = best + 1; i + 1 < n; ++i) ids[i] = ids[i + 1];
    for (size_t i = best; i + 1 < pairs; ++i) {
      ranks[i] = ranks[i + 1];
      merged[i] = merged[i + 1];
    }
    --n;
    --pairs;
    if (best > 0) lookup(best - 1);
    if (best < pairs) lookup(best);
  }
  symbols->assign(ids.begin(), ids.begin() + static_cast<ptrdiff_t>(n));
}

void HfBpeTokenizer::MergeHeap(std::vector<uint32_t>* symbols) const {
  // Linked list of symbols plus a min-heap of candidate pairs keyed (rank, position); stale
  // entries are skipped when popped. O(n log n) for long pieces such as white-space runs.
  struct Sym {
    uint32_t id;
    int32_t prev, next;
    bool alive;
  };
  if (symbols->empty()) return;
  std::vector<Sym> syms;
  syms.reserve(symbols->size());
  for (uint32_t id : *symbols) {
    const auto idx = static_cast<int32_t>(syms.size());
    syms.push_back({id, idx - 1, idx + 1, true});
  }
  syms.back().next = -1;
  struct Cand {
    uint32_t rank;
    int32_t pos;
    uint32_t left, right, merged;
    bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> heap;
  auto push = [&](int32_t pos) {
    const int32_t nx = syms[pos].next;
    if (nx < 0) return;
    if (const MergeInfo* m = FindMerge(syms[pos].id, syms[nx].id)) {
      heap.push({m->rank, pos, syms[pos].id, syms[nx].id, m->merged_id});
    }
  };
  for (int32_t i = 0; i < static_cast<int32_t>(syms.size()); ++i) push(i);
  while (!heap.empty()) {
    const Cand c = heap.top();
    heap.pop();
    Sym& left = syms[c.pos];
    if (!left.alive || left.next < 0 || left.id != c.left || syms[left.next].id != c.right)
      continue;
    Sym& right = syms[left.next];
    left.id = c.merged;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) syms[right.next].prev = c.pos;
    if (left.prev >= 0) push(left.prev);
    push(c.pos);
  }
  symbols->clear();
  for (int32_t i = 0; i >= 0; i = syms[i].next) symbols->push_back(syms[i].id);
}

void HfBpeTokenizer::Merge(std::string_view piece, std::vector<uint32_t>* out) const {
  if (ignore_merges_) {
    const TokenTable& whole = byte_level_ ? bytes_vocab_ : vocab_;
    if (const auto id = whole.Find(piece)) {
      out->push_back(*id);
      return;
    }
  }
  thread_local std::vector<uint32_t> symbols;
  symbols.clear();
  InitialSymbols(piece, &symbols);
  if (symbols.size() <= kSmallPieceBytes) {
    MergeSmall(&symbols);
  } else {
    MergeHeap(&symbols);
  }
  out->insert(out->end(), symbols.begin(), symbols.end());
}

std::vector<uint32_t> HfBpeTokenizer::MergeForTest(std::string_view piece, bool use_heap) const {
  std::vector<uint32_t> symbols;
  InitialSymbols(piece, &symbols);
  if (use_heap || symbols.size() > kSmallPieceBytes) {
    MergeHeap(&symbols);
  } else {
    MergeSmall(&symbols);
  }
  return symbols;
}

template <typename Sink>
void HfBpeTokenizer::EncodePiece(std::string_view piece, Sink& sink) const {
  if (piece.empty()) return;
  if (byte_level_ && piece.size() == 1) {
    const int64_t id = byte_id_[static_cast<unsigned char>(piece[0])];
    if (id >= 0) {
      sink.Add(static_cast<uint32_t>(id));
    } else if (unk_id_) {
      sink.Add(*unk_id_);
    }
    return;
  }
  thread_local std::vector<uint32_t> ids;
  ids.clear();
  if (piece.size() > PieceCache::kMaxKeyBytes) {
    Merge(piece, &ids);
    sink.AddSpan(ids.data(), ids.size());
    return;
  }
  const uint64_t hash = PieceCache::Hash(piece);
  if (!cache_.Lookup(piece, hash, &ids)) {
    Merge(piece, &ids);
    cache_.Insert(piece, hash, ids.data(), ids.size());
  }
  sink.AddSpan(ids.data(), ids.size());
}

// ---------------------------------------------------------------------------------------------
// Pre-tokenization.

namespace {

// Rust's char::is_numeric: general categories Nd, Nl, No.
bool IsNumeric(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  const utf8proc_category_t cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return cat == UTF8PROC_CATEGORY_ND || cat == UTF8PROC_CATEGORY_NL || cat == UTF8PROC_CATEGORY_NO;
}

// The Rust library's is_punc: ASCII punctuation (which includes $+<=>^`|~) or a P* category.
bool IsPunctuation(char32_t c) {
  if (c < 0x80)
    return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
           (c >= 0x7B && c <= 0x7E);
  const utf8proc_category_t cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return cat >= UTF8PROC_CATEGORY_PC && cat <= UTF8PROC_CATEGORY_PO;
}

struct Segment {
  size_t begin, end;
  bool match;
};

// The Rust library's SplitDelimiterBehavior over a list of (range, is_match) segments covering
// the text; returns the pieces' ranges (empty ones dropped by the caller).
void ApplyBehavior(const std::vector<Segment>& segs, HfBpeTokenizer::SplitBehavior behavior,
                   std::vector<std::pair<size_t, size_t>>* out) {
  using B = HfBpeTokenizer::SplitBehavior;
  out->clear();
  switch (behavior) {
    case B::kIsolated:
      for (const Segment& s : segs) out->emplace_back(s.begin, s.end);
      break;
    case B::kRemoved:
      for (const Segment& s : segs) {
        if (!s.match) out->emplace_back(s.begin, s.end);
      }
      break;
    case B::kMergedWithPrevious: {
      bool previous_match = false;
      for (const Segment& s : segs) {
        if (s.match && !previous_match && !out->empty()) {
          out->back().second = s.end;
        } else {
          out->emplace_back(s.begin, s.end);
        }
        previous_match = s.match;
      }
      break;
    }
    case B::kMergedWithNext: {
      bool previous_match = false;
      for (size_t k = segs.size(); k-- > 0;) {
        const Segment& s = segs[k];
        if (s.match && !previous_match && !out->empty()) {
          out->back().first = s.begin;
        } else {
          out->emplace_back(s.begin, s.end);
        }
        previous_match = s.match;
      }
      std::reverse(out->begin(), out->end());
      break;
    }
    case B::kContiguous: {
      bool previous_match = false;
      for (const Segment& s : segs) {
        if (s.match == previous_match && !out->empty()) {
          out->back().second = s.end;
        } else {
          out->emplace_back(s.begin, s.end);
        }
        previous_match = s.match;
      }
      break;
    }
  }
}

// Segments where each character satisfying `pred` is a match of its own (the Rust library's
// Pattern for `Fn(char) -> bool`), non-matching runs one segment each.
template <typename Pred>
void CharSegments(std::string_view s, Pred&& pred, std::vector<Segment>* segs) {
  segs->clear();
  size_t run = 0;
  for (size_t i = 0; i < s.size();) {
    const size_t start = i;
    const char32_t cp = utf8::Decode(s, &i);
    if (pred(cp)) {
      if (run < start) segs->push_back({run, start, false});
      segs->push_back({start, i, true});
      run = i;
    }
  }
  if (run < s.size()) segs->push_back({run, s.size(), false});
}

}  // namespace

template <typename Emit>
void HfBpeTokenizer::SplitGeneral(size_t step_index, std::string_view piece, bool at_text_start,
                                  Emit& emit) const {
  const PreStep& step = pre_steps_[step_index];
  std::vector<Segment> segs;
  switch (step.kind) {
    case PreStep::Kind::kSplit: {
      size_t pos = 0, last_end = 0, mb, me;
      bool any = false;
      while (pos <= piece.size() && step.regex->Find(piece, pos, &mb, &me)) {
        if (me == mb && any && mb == last_end) {
          // Oniguruma's iteration never reports an empty match right after a match.
        } else {
          if (mb > last_end) segs.push_back({last_end, mb, false});
          segs.push_back({mb, me, true});
          last_end = me;
          any = true;
        }
        if (me == mb) {
          if (mb >= piece.size()) break;
          size_t bad;
          const size_t len = utf8::SequenceLength(piece, mb, &bad);
          pos = mb + (len == 0 ? 1 : len);
        } else {
          pos = me;
        }
      }
      if (last_end < piece.size()) segs.push_back({last_end, piece.size(), false});
      if (step.invert) {
        for (Segment& s : segs) s.match = !s.match;
      }
      break;
    }
    case PreStep::Kind::kDigits:
      CharSegments(piece, IsNumeric, &segs);
      break;
    case PreStep::Kind::kPunctuation:
      CharSegments(piece, IsPunctuation, &segs);
      break;
    case PreStep::Kind::kWhitespaceSplit:
      CharSegments(piece, utf8::IsWhiteSpace, &segs);
      break;
    case PreStep::Kind::kMetaspace: {
      size_t i = 0;
      const char32_t rep = utf8::Decode(step.replacement, &i);
      CharSegments(
          piece, [rep](char32_t c) { return c == rep; }, &segs);
      break;
    }
    case PreStep::Kind::kByteLevel:
      break;  // not reached
  }
  std::vector<std::pair<size_t, size_t>> ranges;
  ApplyBehavior(
      segs, step.kind == PreStep::Kind::kMetaspace ? SplitBehavior::kMergedWithNext : step.behavior,
      &ranges);
  for (const auto& [b, e] : ranges) {
    if (e > b) PreTokenize(step_index + 1, piece.substr(b, e - b), at_text_start && b == 0, emit);
  }
}

template <typename Emit>
void HfBpeTokenizer::PreTokenize(size_t step_index, std::string_view piece, bool at_text_start,
                                 Emit& emit) const {
  if (piece.empty()) return;
  if (step_index == pre_steps_.size()) {
    emit(piece);
    return;
  }
  const PreStep& step = pre_steps_[step_index];
  switch (step.kind) {
    case PreStep::Kind::kMetaspace: {
      std::string replaced;
      replaced.reserve(piece.size() + 8);
      const bool prepend = step.prepend == PreStep::Prepend::kAlways ||
                           (step.prepend == PreStep::Prepend::kFirst && at_text_start);
      for (char c : piece) {
        if (c == ' ') {
          replaced += step.replacement;
        } else {
          replaced.push_back(c);
        }
      }
      if (prepend && replaced.compare(0, step.replacement.size(), step.replacement) != 0) {
        replaced.insert(0, step.replacement);
      }
      if (step.split) {
        SplitGeneral(step_index, replaced, at_text_start, emit);
      } else {
        PreTokenize(step_index + 1, replaced, at_text_start, emit);
      }
      return;
    }
    case PreStep::Kind::kDigits:
    case PreStep::Kind::kPunctuation:
    case PreStep::Kind::kWhitespaceSplit:
      SplitGeneral(step_index, piece, at_text_start, emit);
      return;
    case PreStep::Kind::kSplit:
      if (step.invert ||
          (step.behavior != SplitBehavior::kIsolated && step.behavior != SplitBehavior::kRemoved)) {
        SplitGeneral(step_index, piece, at_text_start, emit);
        return;
      }
      break;  // the streaming loop below
    case PreStep::Kind::kByteLevel:
      break;
  }
  std::string prefixed;
  if (step.kind == PreStep::Kind::kByteLevel && step.add_prefix_space && piece[0] != ' ') {
    prefixed.reserve(piece.size() + 1);
    prefixed.push_back(' ');
    prefixed.append(piece);
    piece = prefixed;
  }
  if (!step.regex) {
    PreTokenize(step_index + 1, piece, at_text_start, emit);
    return;
  }
  // Isolated or Removed without invert: stream the pieces, no segment list.
  size_t gap_start = 0;
  size_t pos = 0;
  size_t mb, me;
  while (pos < piece.size() && step.regex->Find(piece, pos, &mb, &me)) {
    if (me == mb) {
      // An empty match cuts nothing; step over one character.
      size_t bad;
      const size_t len = utf8::SequenceLength(piece, mb, &bad);
      pos = mb + (len == 0 ? 1 : len);
      continue;
    }
    if (mb > gap_start) {
      PreTokenize(step_index + 1, piece.substr(gap_start, mb - gap_start),
                  at_text_start && gap_start == 0, emit);
    }
    if (step.behavior == SplitBehavior::kIsolated) {
      PreTokenize(step_index + 1, piece.substr(mb, me - mb), at_text_start && mb == 0, emit);
    }
    gap_start = pos = me;
  }
  if (gap_start < piece.size()) {
    PreTokenize(step_index + 1, piece.substr(gap_start), at_text_start && gap_start == 0, emit);
  }
}

template <typename Sink>
void HfBpeTokenizer::EncodeNormalizedSpan(std::string_view span, bool at_text_start,
                                          Sink& sink) const {
  auto emit = [&](std::string_view piece) { EncodePiece(piece, sink); };
  auto on_span = [&](std::string_view s) {
    PreTokenize(0, s, at_text_start && s.data() == span.data(), emit);
  };
  auto on_token = [&](uint32_t id) { sink.Add(id); };
  SplitOnAdded(normalized_added_, span, on_span, on_token);
}

template <typename Sink>
void HfBpeTokenizer::EncodeImpl(std::string_view text, bool add_special_tokens, Sink&& sink) const {
  std::string repaired;
  if (!utf8::IsValid(text)) {
    repaired = utf8::Sanitize(text);
    text = repaired;
  }
  if (add_special_tokens) sink.AddSpan(post_prefix_ids_.data(), post_prefix_ids_.size());
  auto on_span = [&](std::string_view s) {
    const bool at_start = s.data() == text.data();
    std::string normalized;
    if (!normalizers_.empty() && Normalize(s, &normalized)) {
      EncodeNormalizedSpan(normalized, at_start, sink);
    } else {
      EncodeNormalizedSpan(s, at_start, sink);
    }
  };
  auto on_token = [&](uint32_t id) { sink.Add(id); };
  SplitOnAdded(raw_added_, text, on_span, on_token);
  if (add_special_tokens) sink.AddSpan(post_suffix_ids_.data(), post_suffix_ids_.size());
}

std::vector<uint32_t> HfBpeTokenizer::Encode(std::string_view text, bool add_special_tokens) const {
  std::vector<uint32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  EncodeImpl(text, add_special_tokens, IdSink{&ids});
  return ids;
}

size_t HfBpeTokenizer::CountTokens(std::string_view text, bool add_special_tokens) const {
  CountSink sink;
  EncodeImpl(text, add_special_tokens, sink);
  return sink.count;
}

std::vector<std::string> HfBpeTokenizer::PreTokenizeForTest(std::string_view text) const {
  std::vector<std::string> pieces;
  auto emit = [&](std::string_view p) { pieces.emplace_back(p); };
  PreTokenize(0, text, true, emit);
  return pieces;
}

}  // namespace ww
