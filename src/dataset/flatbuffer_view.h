// A minimal, bounds-checked reader of FlatBuffers binary data, enough to walk Arrow IPC
// metadata (Schema.fbs / Message.fbs) without the flatbuffers or Arrow libraries. Every access
// checks the buffer bounds and returns nullopt on anything malformed, so fuzzed input cannot
// read outside the buffer.
// Ownership: views borrow the buffer; it must outlive them. Thread-safety: immutable values.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace ww::dataset::fb {

class Buffer {
 public:
  Buffer(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool InBounds(uint64_t pos, uint64_t n) const { return pos <= size_ && n <= size_ - pos; }
  template <typename T>
  std::optional<T> Load(uint64_t pos) const {
    if (!InBounds(pos, sizeof(T))) return std::nullopt;
    T v;
    std::memcpy(&v, data_ + pos, sizeof(T));
    return v;
  }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  const uint8_t* data_;
  size_t size_;
};

class Vector;

class Table {
 public:
  Table(const Buffer* buf, uint64_t pos) : buf_(buf), pos_(pos) {}

  // The root table of a FlatBuffer.
  static std::optional<Table> Root(const Buffer* buf) {
    auto off = buf->Load<uint32_t>(0);
    if (!off) return std::nullopt;
    return At(buf, *off);
  }
  // A table at absolute position `pos`, after validating its vtable.
  static std::optional<Table> At(const Buffer* buf, uint64_t pos) {
    auto soff = buf->Load<int32_t>(pos);
    if (!soff) return std::nullopt;
    const int64_t vt = static_cast<int64_t>(pos) - *soff;
    if (vt < 0) return std::nullopt;
    auto vt_size = buf->Load<uint16_t>(static_cast<uint64_t>(vt));
    if (!vt_size || *vt_size < 4 || !buf->InBounds(static_cast<uint64_t>(vt), *vt_size))
      return std::nullopt;
    Table t(buf, pos);
    t.vtable_ = static_cast<uint64_t>(vt);
    t.vtable_size_ = *vt_size;
    return t;
  }

  // Absolute position of field `slot`, or nullopt when absent.
  std::optional<uint64_t> FieldPos(int slot) const {
    const uint64_t entry = 4 + 2 * static_cast<uint64_t>(slot);
    if (entry + 2 > vtable_size_) return std::nullopt;
    auto off = buf_->Load<uint16_t>(vtable_ + entry);
    if (!off || *off == 0) return std::nullopt;
    return pos_ + *off;
  }
  template <typename T>
  T Scalar(int slot, T default_value) const {
    auto p = FieldPos(slot);
    if (!p) return default_value;
    auto v = buf_->Load<T>(*p);
    return v ? *v : default_value;
  }
  // Follows an offset field to its target's absolute position.
  std::optional<uint64_t> Deref(int slot) const {
    auto p = FieldPos(slot);
    if (!p) return std::nullopt;
    auto off = buf_->Load<uint32_t>(*p);
    if (!off || *off == 0) return std::nullopt;
    return *p + *off;
  }
  std::optional<Table> SubTable(int slot) const {
    auto p = Deref(slot);
    if (!p) return std::nullopt;
    return At(buf_, *p);
  }
  std::optional<Vector> VectorField(int slot) const;
  std::optional<std::string_view> String(int slot) const {
    auto p = Deref(slot);
    if (!p) return std::nullopt;
    auto len = buf_->Load<uint32_t>(*p);
    if (!len || !buf_->InBounds(*p + 4, *len)) return std::nullopt;
    return std::string_view(reinterpret_cast<const char*>(buf_->data() + *p + 4), *len);
  }

 private:
  const Buffer* buf_;
  uint64_t pos_;
  uint64_t vtable_ = 0;
  uint16_t vtable_size_ = 0;
};

class Vector {
 public:
  Vector(const Buffer* buf, uint64_t elems, uint32_t size)
      : buf_(buf), elems_(elems), size_(size) {}
  uint32_t size() const { return size_; }
  // Element i of a vector of tables.
  std::optional<Table> TableAt(uint32_t i) const {
    if (i >= size_) return std::nullopt;
    const uint64_t p = elems_ + 4 * uint64_t{i};
    auto off = buf_->Load<uint32_t>(p);
    if (!off) return std::nullopt;
    return Table::At(buf_, p + *off);
  }
  // Field `field_offset` (a T) of element i of a vector of structs of `struct_bytes` each.
  template <typename T>
  std::optional<T> StructField(uint32_t i, uint32_t struct_bytes, uint32_t field_offset) const {
    if (i >= size_) return std::nullopt;
    return buf_->Load<T>(elems_ + uint64_t{i} * struct_bytes + field_offset);
  }
  // Whether `size` elements of `elem_bytes` fit in the buffer.
  bool Fits(uint32_t elem_bytes) const {
    return buf_->InBounds(elems_, uint64_t{size_} * elem_bytes);
  }

 private:
  const Buffer* buf_;
  uint64_t elems_;
  uint32_t size_;
};

inline std::optional<Vector> Table::VectorField(int slot) const {
  auto p = Deref(slot);
  if (!p) return std::nullopt;
  auto len = buf_->Load<uint32_t>(*p);
  if (!len) return std::nullopt;
  return Vector(buf_, *p + 4, *len);
}

}  // namespace ww::dataset::fb
