// PieceCache: ids of already-encoded pieces, keyed by the piece's bytes. Most pieces of real text
// repeat ("Ġthe", "Ġof", four spaces of indentation), so a hit skips the merge loop entirely.
// Open addressing over a fixed number of slots per shard, keys and ids packed in one arena per
// shard: a lookup is one hash, one probe run and one memcmp, with no allocation. A full shard is
// emptied and refilled, which keeps memory bounded on corpora with unbounded distinct pieces.
// Thread-safety: every method may be called concurrently; each shard has its own mutex.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace ww {

class PieceCache {
 public:
  static constexpr size_t kMaxKeyBytes = 255;
  static constexpr size_t kMaxIds = 255;

  PieceCache() {
    for (Shard& s : shards_) s.slots.assign(kSlotsPerShard, Slot{});
  }

  static uint64_t Hash(std::string_view key) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (key.size() * 0xff51afd7ed558ccdULL);
    const char* p = key.data();
    size_t n = key.size();
    while (n >= 8) {
      uint64_t k;
      std::memcpy(&k, p, 8);
      h = (h ^ k) * 0xbf58476d1ce4e5b9ULL;
      h ^= h >> 31;
      p += 8;
      n -= 8;
    }
    if (n > 0) {
      uint64_t k = 0;
      std::memcpy(&k, p, n);
      h = (h ^ k) * 0x94d049bb133111ebULL;
      h ^= h >> 29;
    }
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 32;
    return h | 1;  // 0 marks an empty slot
  }

  // Appends the cached ids of `key` to *out and returns true, or returns false.
  bool Lookup(std::string_view key, uint64_t hash, std::vector<uint32_t>* out) {
    Shard& s = shards_[hash >> 59];
    std::lock_guard<std::mutex> lock(s.mu);
    for (size_t i = (hash >> 8) & kSlotMask;; i = (i + 1) & kSlotMask) {
      const Slot& slot = s.slots[i];
      if (slot.hash == 0) return false;
      if (slot.hash == hash && slot.key_len == key.size() &&
          std::memcmp(s.arena.data() + slot.offset, key.data(), key.size()) == 0) {
        const size_t at = out->size();
        out->resize(at + slot.n_ids);
        std::memcpy(out->data() + at, s.arena.data() + slot.offset + slot.key_len,
                    slot.n_ids * sizeof(uint32_t));
        return true;
      }
    }
  }

  // Stores `ids` for `key` (ignored when too long to be worth caching).
  void Insert(std::string_view key, uint64_t hash, const uint32_t* ids, size_t n_ids) {
    if (key.size() > kMaxKeyBytes || n_ids > kMaxIds) return;
    Shard& s = shards_[hash >> 59];
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.used * 2 >= kSlotsPerShard || s.arena.size() > kMaxArenaBytes) {
      std::fill(s.slots.begin(), s.slots.end(), Slot{});
      s.arena.clear();
      s.used = 0;
    }
    size_t i = (hash >> 8) & kSlotMask;
    for (;; i = (i + 1) & kSlotMask) {
      const Slot& slot = s.slots[i];
      if (slot.hash == 0) break;
      if (slot.hash == hash && slot.key_len == key.size() &&
          std::memcmp(s.arena.data() + slot.offset, key.data(), key.size()) == 0) {
        return;  // another thread got there first
      }
    }
    Slot& slot = s.slots[i];
    slot.hash = hash;
    slot.offset = static_cast<uint32_t>(s.arena.size());
    slot.key_len = static_cast<uint16_t>(key.size());
    slot.n_ids = static_cast<uint16_t>(n_ids);
    s.arena.append(key);
    s.arena.append(reinterpret_cast<const char*>(ids), n_ids * sizeof(uint32_t));
    ++s.used;
  }

 private:
  static constexpr size_t kShards = 32;           // indexed by the hash's top 5 bits
  static constexpr size_t kSlotsPerShard = 4096;  // 2 MiB of slots in all: stays in cache
  static constexpr size_t kSlotMask = kSlotsPerShard - 1;
  static constexpr size_t kMaxArenaBytes = 1 << 20;
  struct Slot {
    uint64_t hash = 0;
    uint32_t offset = 0;
    uint16_t key_len = 0;
    uint16_t n_ids = 0;
  };
  struct Shard {
    std::mutex mu;
    std::vector<Slot> slots;
    std::string arena;
    size_t used = 0;
  };
  std::array<Shard, kShards> shards_;
};

}  // namespace ww
