// TokenTable: token string -> id, open addressing over one flat slot array. Keys of up to 16
// bytes (nearly every token) live in the slot itself, longer ones in an arena. A lookup is one
// hash and usually one 32-byte slot, one cache line, where a node-based std::unordered_map
// chases three pointers; loading Gemma-3's 262k tokens and 515k merges does about 1.8 M lookups,
// so this is most of the load time.
// Thread-safety: Put() only during construction; Find() may then run concurrently.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/piece_cache.h"

namespace ww {

class TokenTable {
 public:
  void Reserve(size_t n) {
    size_t cap = 1024;
    while (cap * 2 < n * 3) cap *= 2;  // load factor at most 2/3
    if (cap > slots_.size()) Rehash(cap);
  }

  // Inserts `key`, or overwrites its id (a repeated key keeps the last id, as JSON parsers do).
  void Put(std::string_view key, uint32_t id) {
    if ((count_ + 1) * 3 > slots_.size() * 2) Rehash(slots_.empty() ? 1024 : slots_.size() * 2);
    const uint64_t h = PieceCache::Hash(key);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.len == kEmpty) {
        s.tag = static_cast<uint32_t>(h >> 32);
        s.len = static_cast<uint32_t>(key.size());
        s.id = id;
        if (key.size() <= kInline) {
          std::memcpy(s.inline_key, key.data(), key.size());
        } else {
          s.off = static_cast<uint32_t>(arena_.size());
          arena_.append(key);
        }
        ++count_;
        return;
      }
      if (s.tag == static_cast<uint32_t>(h >> 32) && Same(s, key)) {
        s.id = id;
        return;
      }
    }
  }

  std::optional<uint32_t> Find(std::string_view key) const {
    if (slots_.empty()) return std::nullopt;
    const uint64_t h = PieceCache::Hash(key);
    const auto tag = static_cast<uint32_t>(h >> 32);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.len == kEmpty) return std::nullopt;
      if (s.tag == tag && Same(s, key)) return s.id;
    }
  }

  size_t size() const { return count_; }

 private:
  static constexpr uint32_t kEmpty = 0xFFFFFFFFu;
  static constexpr size_t kInline = 16;
  struct alignas(32) Slot {
    uint32_t tag = 0;  // high half of the hash
    uint32_t len = kEmpty;
    uint32_t id = 0;
    uint32_t off = 0;  // into arena_, for keys longer than kInline
    char inline_key[kInline] = {};
  };
  std::string_view Key(const Slot& s) const {
    return s.len <= kInline ? std::string_view(s.inline_key, s.len)
                            : std::string_view(arena_).substr(s.off, s.len);
  }
  bool Same(const Slot& s, std::string_view key) const {
    if (s.len != key.size()) return false;
    const char* p = s.len <= kInline ? s.inline_key : arena_.data() + s.off;
    return std::memcmp(p, key.data(), key.size()) == 0;
  }

  void Rehash(size_t cap) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(cap, Slot{});
    mask_ = cap - 1;
    for (const Slot& s : old) {
      if (s.len == kEmpty) continue;
      const uint64_t h = PieceCache::Hash(Key(s));
      for (size_t i = h & mask_;; i = (i + 1) & mask_) {
        if (slots_[i].len == kEmpty) {
          slots_[i] = s;
          break;
        }
      }
    }
  }

  std::vector<Slot> slots_;
  std::string arena_;
  size_t mask_ = 0;
  size_t count_ = 0;
};

}  // namespace ww
