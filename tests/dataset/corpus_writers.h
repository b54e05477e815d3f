// Small writers for the corpus formats the dataset readers read, so tests and benches generate
// their own fixtures: Megatron .idx/.bin, .npy, jsonl and Arrow IPC streams (with a tiny
// front-to-back FlatBuffers builder). Byte-level layouts follow the formats' specifications.
// Free of GoogleTest so bench/ takes it too; temp dirs and plain files are tests/support's.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace ww::dataset::testing {

template <typename T>
void Put(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(T));
}

// Token id for sample s, position i (deterministic, below `vocab`).
inline uint32_t TokenAt(size_t s, size_t i, uint32_t vocab) {
  return static_cast<uint32_t>((s * 7919 + i * 31) % vocab);
}

// MMIDIDX pair. dtype_code: 8 = uint16, 4 = int32. Returns {idx bytes, bin bytes}.
inline std::pair<std::string, std::string> MegatronBytes(const std::vector<uint32_t>& lengths,
                                                         uint8_t dtype_code = 4,
                                                         uint32_t vocab = 1000,
                                                         uint32_t max_id_override = 0) {
  const size_t item = dtype_code == 8 || dtype_code == 3   ? 2
                      : dtype_code == 5                    ? 8
                      : dtype_code == 1 || dtype_code == 2 ? 1
                                                           : 4;
  std::string idx("MMIDIDX\0\0", 9), bin;
  Put<uint64_t>(&idx, 1);
  Put<uint8_t>(&idx, dtype_code);
  Put<uint64_t>(&idx, lengths.size());
  Put<uint64_t>(&idx, lengths.size() + 1);
  for (uint32_t len : lengths) Put<int32_t>(&idx, static_cast<int32_t>(len));
  int64_t pointer = 0;
  for (uint32_t len : lengths) {
    Put<int64_t>(&idx, pointer);
    pointer += static_cast<int64_t>(len * item);
  }
  for (size_t d = 0; d <= lengths.size(); ++d) Put<int64_t>(&idx, static_cast<int64_t>(d));
  for (size_t s = 0; s < lengths.size(); ++s) {
    for (size_t i = 0; i < lengths[s]; ++i) {
      uint64_t id = (max_id_override && s == 0 && i == 0) ? max_id_override : TokenAt(s, i, vocab);
      bin.append(reinterpret_cast<const char*>(&id), item);
    }
  }
  return {idx, bin};
}

inline void WriteMegatron(const std::string& prefix, const std::vector<uint32_t>& lengths,
                          uint8_t dtype_code = 4, uint32_t vocab = 1000) {
  auto [idx, bin] = MegatronBytes(lengths, dtype_code, vocab);
  std::ofstream(prefix + ".idx", std::ios::binary)
      .write(idx.data(), static_cast<std::streamsize>(idx.size()));
  std::ofstream(prefix + ".bin", std::ios::binary)
      .write(bin.data(), static_cast<std::streamsize>(bin.size()));
}

// .npy v1.0 with a little-endian integer dtype descr like "<i4".
template <typename T>
std::string NpyBytes(const std::string& descr, const std::vector<size_t>& shape,
                     const std::vector<T>& data) {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (";
  for (size_t d : shape) dict += std::to_string(d) + ", ";
  dict += "), }";
  size_t total = 10 + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  Put<uint16_t>(&out, static_cast<uint16_t>(dict.size()));
  out += dict;
  for (T v : data) Put<T>(&out, v);
  return out;
}

inline std::string JsonlBytes(const std::vector<uint32_t>& lengths, uint32_t vocab = 1000,
                              const std::string& field = "input_ids") {
  std::string out;
  for (size_t s = 0; s < lengths.size(); ++s) {
    out += "{\"id\": " + std::to_string(s) + ", \"" + field + "\": [";
    for (size_t i = 0; i < lengths[s]; ++i)
      out += (i ? "," : "") + std::to_string(TokenAt(s, i, vocab));
    out += "], \"meta\": {\"src\": \"x\", \"ids\": [1, 2]}}\n";
  }
  return out;
}

// ---- A front-to-back FlatBuffers builder (tests only). Children are written after the table
// that references them, so every uoffset is positive; vtables precede their tables.
struct FbTable;
struct FbString {
  std::string s;
};
struct FbTables {
  std::vector<std::shared_ptr<FbTable>> items;
};
struct FbStructs {
  uint32_t count = 0;
  std::string bytes;
};
using FbValue = std::variant<std::string /*inline scalar bytes*/, std::shared_ptr<FbTable>,
                             FbString, FbTables, FbStructs>;
struct FbTable {
  std::vector<std::pair<int, FbValue>> fields;
  template <typename T>
  FbTable& Scalar(int slot, T v) {
    std::string b;
    Put<T>(&b, v);
    fields.emplace_back(slot, b);
    return *this;
  }
  FbTable& Table(int slot, std::shared_ptr<FbTable> t) {
    fields.emplace_back(slot, std::move(t));
    return *this;
  }
  FbTable& String(int slot, std::string s) {
    fields.emplace_back(slot, FbString{std::move(s)});
    return *this;
  }
  FbTable& Tables(int slot, std::vector<std::shared_ptr<FbTable>> t) {
    fields.emplace_back(slot, FbTables{std::move(t)});
    return *this;
  }
  FbTable& Structs(int slot, uint32_t count, std::string bytes) {
    fields.emplace_back(slot, FbStructs{count, std::move(bytes)});
    return *this;
  }
};
inline std::shared_ptr<FbTable> NewTable() { return std::make_shared<FbTable>(); }

class FbBuilder {
 public:
  std::string Finish(const FbTable& root) {
    buf_.assign(4, '\0');
    const uint32_t pos = WriteTable(root);
    Patch(0, pos);
    while (buf_.size() % 8) buf_ += '\0';
    return buf_;
  }

 private:
  void Align(size_t a) {
    while (buf_.size() % a) buf_ += '\0';
  }
  void Patch(uint32_t at, uint32_t target) {
    const uint32_t off = target - at;
    std::memcpy(&buf_[at], &off, 4);
  }
  uint32_t WriteTable(const FbTable& t) {
    int max_slot = -1;
    for (const auto& f : t.fields) max_slot = std::max(max_slot, f.first);
    // Table layout: soffset, then each field inline (scalars as-is, references as 4 bytes).
    std::vector<uint16_t> field_off(static_cast<size_t>(max_slot + 1), 0);
    std::vector<std::pair<uint32_t, const FbValue*>> refs;
    std::string body;
    for (const auto& f : t.fields) {
      field_off[static_cast<size_t>(f.first)] = static_cast<uint16_t>(4 + body.size());
      if (auto* s = std::get_if<std::string>(&f.second)) {
        body += *s;
      } else {
        refs.emplace_back(static_cast<uint32_t>(body.size()), &f.second);
        body.append(4, '\0');
      }
    }
    Align(2);
    const uint32_t vt = static_cast<uint32_t>(buf_.size());
    Put<uint16_t>(&buf_, static_cast<uint16_t>(4 + 2 * field_off.size()));
    Put<uint16_t>(&buf_, static_cast<uint16_t>(4 + body.size()));
    for (uint16_t o : field_off) Put<uint16_t>(&buf_, o);
    Align(4);
    const uint32_t table = static_cast<uint32_t>(buf_.size());
    Put<int32_t>(&buf_, static_cast<int32_t>(table - vt));
    buf_ += body;
    for (const auto& [rel, value] : refs) {
      const uint32_t at = table + 4 + rel;
      Patch(at, WriteValue(*value));
    }
    return table;
  }
  uint32_t WriteValue(const FbValue& v) {
    Align(4);
    if (auto* t = std::get_if<std::shared_ptr<FbTable>>(&v)) return WriteTable(**t);
    const uint32_t pos = static_cast<uint32_t>(buf_.size());
    if (auto* s = std::get_if<FbString>(&v)) {
      Put<uint32_t>(&buf_, static_cast<uint32_t>(s->s.size()));
      buf_ += s->s;
      buf_ += '\0';
    } else if (auto* st = std::get_if<FbStructs>(&v)) {
      // Vectors of 8-byte-aligned structs: the elements start at an 8-byte boundary.
      if ((buf_.size() + 4) % 8) {
        buf_.append(4, '\0');
        return WriteValue(v);
      }
      Put<uint32_t>(&buf_, st->count);
      buf_ += st->bytes;
    } else if (auto* ts = std::get_if<FbTables>(&v)) {
      Put<uint32_t>(&buf_, static_cast<uint32_t>(ts->items.size()));
      const uint32_t elems = static_cast<uint32_t>(buf_.size());
      buf_.append(4 * ts->items.size(), '\0');
      for (size_t i = 0; i < ts->items.size(); ++i)
        Patch(elems + 4 * static_cast<uint32_t>(i), WriteTable(*ts->items[i]));
    }
    return pos;
  }
  std::string buf_;
};

inline std::string ArrowMessage(const std::string& flatbuffer, const std::string& body) {
  std::string out;
  Put<uint32_t>(&out, 0xFFFFFFFFu);
  Put<int32_t>(&out, static_cast<int32_t>(flatbuffer.size()));
  out += flatbuffer;
  out += body;
  return out;
}

inline std::shared_ptr<FbTable> ArrowField(const std::string& name, uint8_t type_id,
                                           std::shared_ptr<FbTable> type,
                                           std::vector<std::shared_ptr<FbTable>> children = {}) {
  auto f = NewTable();
  f->String(0, name).Scalar<uint8_t>(1, 1).Scalar<uint8_t>(2, type_id).Table(3, std::move(type));
  f->Tables(5, std::move(children));
  return f;
}

// An Arrow IPC stream with columns `text` (utf8) and `field` (list<int32>, or large_list<int64>
// when large), one record batch per entry of `batches` (each a list of sample lengths).
inline std::string ArrowStreamBytes(const std::vector<std::vector<uint32_t>>& batches,
                                    bool large = false, const std::string& field = "input_ids",
                                    uint32_t vocab = 1000) {
  auto int_type = NewTable();
  int_type->Scalar<int32_t>(0, large ? 64 : 32).Scalar<uint8_t>(1, 1);
  auto item = ArrowField("item", 2, int_type);
  auto list = ArrowField(field, large ? 21 : 12, NewTable(), {item});
  auto text = ArrowField("text", 5, NewTable());
  auto schema = NewTable();
  schema->Scalar<int16_t>(0, 0).Tables(1, {text, list});
  FbTable msg;
  msg.Scalar<int16_t>(0, 4).Scalar<uint8_t>(1, 1).Table(2, schema).Scalar<int64_t>(3, 0);
  std::string out = ArrowMessage(FbBuilder().Finish(msg), "");
  size_t sample = 0;
  for (const auto& lengths : batches) {
    const size_t rows = lengths.size();
    // Buffers: text validity, text offsets, text data, list validity, list offsets, item validity,
    // item values.
    std::vector<std::string> bufs(7);
    for (size_t r = 0; r <= rows; ++r) Put<int32_t>(&bufs[1], 0);  // empty strings
    int64_t off = 0;
    auto put_off = [&](int64_t v) {
      large ? Put<int64_t>(&bufs[4], v) : Put<int32_t>(&bufs[4], static_cast<int32_t>(v));
    };
    put_off(0);
    for (uint32_t len : lengths) {
      for (uint32_t i = 0; i < len; ++i) {
        const uint32_t id = TokenAt(sample, i, vocab);
        large ? Put<int64_t>(&bufs[6], id) : Put<int32_t>(&bufs[6], static_cast<int32_t>(id));
      }
      off += len;
      put_off(off);
      ++sample;
    }
    std::string body, buffer_structs;
    for (auto& b : bufs) {
      Put<int64_t>(&buffer_structs, static_cast<int64_t>(body.size()));
      Put<int64_t>(&buffer_structs, static_cast<int64_t>(b.size()));
      body += b;
      while (body.size() % 8) body += '\0';
    }
    std::string nodes;
    for (int64_t len : {static_cast<int64_t>(rows), static_cast<int64_t>(rows), off}) {
      Put<int64_t>(&nodes, len);
      Put<int64_t>(&nodes, 0);
    }
    auto batch = NewTable();
    batch->Scalar<int64_t>(0, static_cast<int64_t>(rows))
        .Structs(1, 3, nodes)
        .Structs(2, 7, buffer_structs);
    FbTable m;
    m.Scalar<int16_t>(0, 4).Scalar<uint8_t>(1, 3).Table(2, batch).Scalar<int64_t>(
        3, static_cast<int64_t>(body.size()));
    out += ArrowMessage(FbBuilder().Finish(m), body);
  }
  Put<uint32_t>(&out, 0xFFFFFFFFu);
  Put<uint32_t>(&out, 0);
  return out;
}

}  // namespace ww::dataset::testing
