#include "evidence/pickle.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <unordered_map>

namespace ww::evidence {
namespace {

struct OpInfo {
  uint8_t code;
  const char* name;
};
// Every opcode of pickle protocols 0-5 (CPython Lib/pickletools.py), for error messages.
constexpr OpInfo kOpNames[] = {
    {'(', "MARK"},
    {'.', "STOP"},
    {'0', "POP"},
    {'1', "POP_MARK"},
    {'2', "DUP"},
    {'F', "FLOAT"},
    {'I', "INT"},
    {'J', "BININT"},
    {'K', "BININT1"},
    {'L', "LONG"},
    {'M', "BININT2"},
    {'N', "NONE"},
    {'P', "PERSID"},
    {'Q', "BINPERSID"},
    {'R', "REDUCE"},
    {'S', "STRING"},
    {'T', "BINSTRING"},
    {'U', "SHORT_BINSTRING"},
    {'V', "UNICODE"},
    {'X', "BINUNICODE"},
    {'a', "APPEND"},
    {'b', "BUILD"},
    {'c', "GLOBAL"},
    {'d', "DICT"},
    {'}', "EMPTY_DICT"},
    {'e', "APPENDS"},
    {'g', "GET"},
    {'h', "BINGET"},
    {'i', "INST"},
    {'j', "LONG_BINGET"},
    {'l', "LIST"},
    {']', "EMPTY_LIST"},
    {'o', "OBJ"},
    {'p', "PUT"},
    {'q', "BINPUT"},
    {'r', "LONG_BINPUT"},
    {'s', "SETITEM"},
    {'t', "TUPLE"},
    {')', "EMPTY_TUPLE"},
    {'u', "SETITEMS"},
    {'G', "BINFLOAT"},
    {0x80, "PROTO"},
    {0x81, "NEWOBJ"},
    {0x82, "EXT1"},
    {0x83, "EXT2"},
    {0x84, "EXT4"},
    {0x85, "TUPLE1"},
    {0x86, "TUPLE2"},
    {0x87, "TUPLE3"},
    {0x88, "NEWTRUE"},
    {0x89, "NEWFALSE"},
    {0x8a, "LONG1"},
    {0x8b, "LONG4"},
    {'B', "BINBYTES"},
    {'C', "SHORT_BINBYTES"},
    {0x8c, "SHORT_BINUNICODE"},
    {0x8d, "BINUNICODE8"},
    {0x8e, "BINBYTES8"},
    {0x8f, "EMPTY_SET"},
    {0x90, "ADDITEMS"},
    {0x91, "FROZENSET"},
    {0x92, "NEWOBJ_EX"},
    {0x93, "STACK_GLOBAL"},
    {0x94, "MEMOIZE"},
    {0x95, "FRAME"},
    {0x96, "BYTEARRAY8"},
    {0x97, "NEXT_BUFFER"},
    {0x98, "READONLY_BUFFER"},
};

constexpr uint32_t kMark = 0xFFFFFFFFu;

}  // namespace

std::string PickleOpcodeName(uint8_t op) {
  for (const OpInfo& info : kOpNames) {
    if (info.code == op) return info.name;
  }
  return fmt::format("0x{:02x}", op);
}

// The parser's state for one input; a class so PickleDoc can befriend it.
class PickleParser {
 public:
  PickleParser(std::string_view data, const PickleLimits& limits) : data_(data), limits_(limits) {}

  Result<PickleDoc> Run() {
    if (data_.size() > limits_.max_input_bytes) {
      return Status::InvalidInput(fmt::format("pickle of {} bytes is over the {} byte cap",
                                              data_.size(), limits_.max_input_bytes));
    }
    // Protocol 2+ pickles (every Flight Recorder dump, torch's Pickler writes protocol 2) open with
    // PROTO; anything else is not a dump, and saying so beats naming its first byte as an opcode.
    if (!data_.empty() && static_cast<uint8_t>(data_[0]) != 0x80) {
      std::string head;
      for (char c : data_.substr(0, 16)) head += (c >= 0x20 && c < 0x7f) ? c : '.';
      return Status::InvalidInput(fmt::format(
          "not a pickle of protocol 2 or later (no PROTO opcode at offset 0; starts \"{}\")",
          head));
    }
    while (pos_ < data_.size()) {
      op_offset_ = pos_;
      op_ = static_cast<uint8_t>(data_[pos_++]);
      if (op_ == '.') {
        if (stack_.size() != 1 || stack_[0] == kMark) {
          return Fail(
              fmt::format("STOP with {} values on the stack (want exactly one)", stack_.size()));
        }
        doc_.root_ = stack_[0];
        return std::move(doc_);
      }
      Status s = Step();
      if (!s.ok()) return s;
    }
    return Status::InvalidInput(fmt::format(
        "pickle truncated: {} bytes read, no STOP opcode (the dump may still be being written)",
        data_.size()));
  }

 private:
  Status Fail(const std::string& what) const {
    return Status::InvalidInput(fmt::format("opcode {} (0x{:02x}) at offset {}: {}",
                                            PickleOpcodeName(op_), op_, op_offset_, what));
  }

  Status Need(size_t n) const {
    if (data_.size() - pos_ < n) {
      return Fail(fmt::format("truncated: needs {} more bytes, {} left", n, data_.size() - pos_));
    }
    return Status::Ok();
  }
  uint64_t ReadLe(size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= uint64_t(uint8_t(data_[pos_ + i])) << (8 * i);
    pos_ += n;
    return v;
  }

  // Counts what the document will hold; references (GET, DUP) cost an index, never a copy.
  Status Store(size_t bytes) {
    stored_bytes_ += bytes;
    if (stored_bytes_ > limits_.max_stored_bytes) {
      return Fail(
          fmt::format("the values would hold more than {} bytes", limits_.max_stored_bytes));
    }
    return Status::Ok();
  }

  Result<uint32_t> NewValue(PickleValue::Kind kind) {
    if (doc_.values_.size() >= limits_.max_values) {
      return Fail(fmt::format("more than {} values", limits_.max_values));
    }
    WW_RETURN_IF_ERROR(Store(sizeof(PickleValue)));
    doc_.values_.emplace_back();
    doc_.values_.back().kind = kind;
    return static_cast<uint32_t>(doc_.values_.size() - 1);
  }
  Status Push(uint32_t index) {
    if (stack_.size() >= limits_.max_stack) {
      return Fail(fmt::format("stack deeper than {}", limits_.max_stack));
    }
    stack_.push_back(index);
    return Status::Ok();
  }
  Status PushNew(PickleValue::Kind kind, PickleValue** out = nullptr) {
    Result<uint32_t> idx = NewValue(kind);
    if (!idx.ok()) return idx.status();
    if (out != nullptr) *out = &doc_.values_[*idx];
    return Push(*idx);
  }
  Result<uint32_t> Pop() {
    if (stack_.empty() || stack_.back() == kMark) return Fail("stack underflow");
    uint32_t v = stack_.back();
    stack_.pop_back();
    return v;
  }
  // Index of the topmost MARK on the stack.
  Result<size_t> MarkPosition() {
    for (size_t i = stack_.size(); i > 0; --i) {
      if (stack_[i - 1] == kMark) return i - 1;
    }
    return Fail("no MARK on the stack");
  }
  // The container under `from` (a MARK position or the top value), for APPENDS/SETITEMS.
  Result<uint32_t> ContainerBelow(size_t from, PickleValue::Kind want) {
    if (from == 0 || stack_[from - 1] == kMark) return Fail("no container below the items");
    const uint32_t c = stack_[from - 1];
    if (doc_.values_[c].kind != want) return Fail("target is not a container of that kind");
    return c;
  }

  Status PushString(size_t len, PickleValue::Kind kind) {
    if (len > limits_.max_string_bytes) {
      return Fail(
          fmt::format("string of {} bytes is over the {} byte cap", len, limits_.max_string_bytes));
    }
    WW_RETURN_IF_ERROR(Need(len));
    WW_RETURN_IF_ERROR(Store(len));
    PickleValue* v = nullptr;
    WW_RETURN_IF_ERROR(PushNew(kind, &v));
    v->text.assign(data_.data() + pos_, len);
    pos_ += len;
    return Status::Ok();
  }
  Status PushInt(int64_t value) {
    PickleValue* v = nullptr;
    WW_RETURN_IF_ERROR(PushNew(PickleValue::Kind::kInt, &v));
    v->int_value = value;
    return Status::Ok();
  }
  Status Memo(uint64_t key) {
    if (stack_.empty() || stack_.back() == kMark) return Fail("nothing to memoize");
    if (memo_.size() >= limits_.max_memo && memo_.find(key) == memo_.end()) {
      return Fail(fmt::format("memo larger than {}", limits_.max_memo));
    }
    memo_[key] = stack_.back();
    return Status::Ok();
  }
  Status Get(uint64_t key) {
    auto it = memo_.find(key);
    if (it == memo_.end()) return Fail(fmt::format("memo key {} was never stored", key));
    return Push(it->second);
  }
  Status MakeTuple(size_t from) {
    Result<uint32_t> t = NewValue(PickleValue::Kind::kTuple);
    if (!t.ok()) return t.status();
    WW_RETURN_IF_ERROR(Store(sizeof(uint32_t) * (stack_.size() - from)));
    doc_.values_[*t].items.assign(stack_.begin() + from, stack_.end());
    stack_.resize(from);
    return Push(*t);
  }

  Status Step() {
    using K = PickleValue::Kind;
    switch (op_) {
      case 0x80:  // PROTO
        WW_RETURN_IF_ERROR(Need(1));
        if (uint8_t(data_[pos_]) > 5) return Fail(fmt::format("protocol {}", uint8_t(data_[pos_])));
        ++pos_;
        return Status::Ok();
      case 0x95:  // FRAME: a length hint only; the data follows inline.
        WW_RETURN_IF_ERROR(Need(8));
        pos_ += 8;
        return Status::Ok();
      case 'N':
        return PushNew(K::kNone);
      case 0x88:
      case 0x89: {
        PickleValue* v = nullptr;
        WW_RETURN_IF_ERROR(PushNew(K::kBool, &v));
        v->bool_value = op_ == 0x88;
        return Status::Ok();
      }
      case 'J':
        WW_RETURN_IF_ERROR(Need(4));
        return PushInt(static_cast<int32_t>(ReadLe(4)));
      case 'K':
        WW_RETURN_IF_ERROR(Need(1));
        return PushInt(static_cast<int64_t>(ReadLe(1)));
      case 'M':
        WW_RETURN_IF_ERROR(Need(2));
        return PushInt(static_cast<int64_t>(ReadLe(2)));
      case 0x8a:    // LONG1
      case 0x8b: {  // LONG4
        const size_t width = op_ == 0x8a ? 1 : 4;
        WW_RETURN_IF_ERROR(Need(width));
        const uint64_t n = ReadLe(width);
        if (n > 8) return Fail(fmt::format("integer of {} bytes does not fit in 64 bits", n));
        WW_RETURN_IF_ERROR(Need(n));
        uint64_t u = ReadLe(n);
        if (n > 0 && n < 8 && (u >> (8 * n - 1)) & 1) u |= ~uint64_t(0) << (8 * n);  // sign
        return PushInt(static_cast<int64_t>(u));
      }
      case 'G': {
        WW_RETURN_IF_ERROR(Need(8));
        uint64_t bits = 0;
        for (int i = 0; i < 8; ++i) bits = (bits << 8) | uint8_t(data_[pos_ + i]);  // big-endian
        pos_ += 8;
        double d = 0;
        std::memcpy(&d, &bits, sizeof d);
        PickleValue* v = nullptr;
        WW_RETURN_IF_ERROR(PushNew(K::kFloat, &v));
        v->float_value = d;
        return Status::Ok();
      }
      case 0x8c:  // SHORT_BINUNICODE
        WW_RETURN_IF_ERROR(Need(1));
        return PushString(ReadLe(1), K::kStr);
      case 'X':
        WW_RETURN_IF_ERROR(Need(4));
        return PushString(ReadLe(4), K::kStr);
      case 0x8d:
        WW_RETURN_IF_ERROR(Need(8));
        return PushString(ReadLe(8), K::kStr);
      case 'C':  // SHORT_BINBYTES
      case 'U':  // SHORT_BINSTRING (Python 2 str): kept as bytes
        WW_RETURN_IF_ERROR(Need(1));
        return PushString(ReadLe(1), K::kBytes);
      case 'B':
      case 'T':
        WW_RETURN_IF_ERROR(Need(4));
        return PushString(ReadLe(4), K::kBytes);
      case 0x8e:
        WW_RETURN_IF_ERROR(Need(8));
        return PushString(ReadLe(8), K::kBytes);
      case '}':
        return PushNew(K::kDict);
      case ']':
        return PushNew(K::kList);
      case ')':
        return PushNew(K::kTuple);
      case '(':
        if (stack_.size() >= limits_.max_stack) return Fail("stack too deep");
        stack_.push_back(kMark);
        return Status::Ok();
      case '0':  // POP
        if (stack_.empty()) return Fail("stack underflow");
        stack_.pop_back();
        return Status::Ok();
      case '1': {  // POP_MARK
        Result<size_t> m = MarkPosition();
        if (!m.ok()) return m.status();
        stack_.resize(*m);
        return Status::Ok();
      }
      case '2':  // DUP
        if (stack_.empty() || stack_.back() == kMark) return Fail("stack underflow");
        return Push(stack_.back());
      case 'a': {  // APPEND
        Result<uint32_t> item = Pop();
        if (!item.ok()) return item.status();
        Result<uint32_t> list = ContainerBelow(stack_.size(), K::kList);
        if (!list.ok()) return list.status();
        WW_RETURN_IF_ERROR(Store(sizeof(uint32_t)));
        doc_.values_[*list].items.push_back(*item);
        return Status::Ok();
      }
      case 'e': {  // APPENDS
        Result<size_t> m = MarkPosition();
        if (!m.ok()) return m.status();
        Result<uint32_t> list = ContainerBelow(*m, K::kList);
        if (!list.ok()) return list.status();
        WW_RETURN_IF_ERROR(Store(sizeof(uint32_t) * (stack_.size() - *m - 1)));
        auto& items = doc_.values_[*list].items;
        items.insert(items.end(), stack_.begin() + *m + 1, stack_.end());
        stack_.resize(*m);
        return Status::Ok();
      }
      case 'l': {  // LIST
        Result<size_t> m = MarkPosition();
        if (!m.ok()) return m.status();
        Result<uint32_t> list = NewValue(K::kList);
        if (!list.ok()) return list.status();
        WW_RETURN_IF_ERROR(Store(sizeof(uint32_t) * (stack_.size() - *m - 1)));
        doc_.values_[*list].items.assign(stack_.begin() + *m + 1, stack_.end());
        stack_.resize(*m);
        return Push(*list);
      }
      case 's': {  // SETITEM
        Result<uint32_t> value = Pop();
        if (!value.ok()) return value.status();
        Result<uint32_t> key = Pop();
        if (!key.ok()) return key.status();
        Result<uint32_t> dict = ContainerBelow(stack_.size(), K::kDict);
        if (!dict.ok()) return dict.status();
        WW_RETURN_IF_ERROR(Store(2 * sizeof(uint32_t)));
        doc_.values_[*dict].pairs.emplace_back(*key, *value);
        return Status::Ok();
      }
      case 'u':    // SETITEMS
      case 'd': {  // DICT
        Result<size_t> m = MarkPosition();
        if (!m.ok()) return m.status();
        const size_t n = stack_.size() - *m - 1;
        if (n % 2 != 0) return Fail(fmt::format("odd number of items ({}) for a dict", n));
        uint32_t target = 0;
        if (op_ == 'u') {
          Result<uint32_t> dict = ContainerBelow(*m, K::kDict);
          if (!dict.ok()) return dict.status();
          target = *dict;
        } else {
          Result<uint32_t> dict = NewValue(K::kDict);
          if (!dict.ok()) return dict.status();
          target = *dict;
        }
        WW_RETURN_IF_ERROR(Store(sizeof(uint32_t) * n));
        auto& pairs = doc_.values_[target].pairs;
        for (size_t i = *m + 1; i + 1 < stack_.size(); i += 2) {
          pairs.emplace_back(stack_[i], stack_[i + 1]);
        }
        stack_.resize(*m);
        if (op_ == 'd') return Push(target);
        return Status::Ok();
      }
      case 't': {  // TUPLE
        Result<size_t> m = MarkPosition();
        if (!m.ok()) return m.status();
        Status s = MakeTuple(*m + 1);
        if (!s.ok()) return s;
        // MakeTuple left the MARK below the new tuple: remove it.
        const uint32_t t = stack_.back();
        stack_.resize(*m);
        return Push(t);
      }
      case 0x85:
      case 0x86:
      case 0x87: {  // TUPLE1..3
        const size_t n = op_ - 0x84;
        if (stack_.size() < n) return Fail("stack underflow");
        for (size_t i = stack_.size() - n; i < stack_.size(); ++i) {
          if (stack_[i] == kMark) return Fail("MARK inside a TUPLE's items");
        }
        return MakeTuple(stack_.size() - n);
      }
      case 0x94:  // MEMOIZE
        return Memo(memo_.size());
      case 'q':
        WW_RETURN_IF_ERROR(Need(1));
        return Memo(ReadLe(1));
      case 'r':
        WW_RETURN_IF_ERROR(Need(4));
        return Memo(ReadLe(4));
      case 'h':
        WW_RETURN_IF_ERROR(Need(1));
        return Get(ReadLe(1));
      case 'j':
        WW_RETURN_IF_ERROR(Need(4));
        return Get(ReadLe(4));
      case 'c':
      case 0x93:
      case 'R':
      case 'b':
      case 'i':
      case 'o':
      case 0x81:
      case 0x92:
      case 'P':
      case 'Q':
      case 0x82:
      case 0x83:
      case 0x84:
        return Fail("refused: it would import or call code, which a dump reader never does");
      default:
        return Fail("not an opcode Flight Recorder dumps use; refused");
    }
  }

  std::string_view data_;
  const PickleLimits& limits_;
  size_t pos_ = 0;
  size_t op_offset_ = 0;
  uint8_t op_ = 0;
  std::vector<uint32_t> stack_;
  std::unordered_map<uint64_t, uint32_t> memo_;
  size_t stored_bytes_ = 0;
  PickleDoc doc_;
};

Result<PickleDoc> ParsePickle(std::string_view data, const PickleLimits& limits) {
  return PickleParser(data, limits).Run();
}

const PickleValue* PickleDoc::Get(const PickleValue& dict, std::string_view key) const {
  if (dict.kind != PickleValue::Kind::kDict) return nullptr;
  for (const auto& [k, v] : dict.pairs) {
    const PickleValue& kv = values_[k];
    if (kv.kind == PickleValue::Kind::kStr && kv.text == key) return &values_[v];
  }
  return nullptr;
}

std::optional<int64_t> PickleDoc::GetInt(const PickleValue& dict, std::string_view key) const {
  const PickleValue* v = Get(dict, key);
  if (v == nullptr || v->kind != PickleValue::Kind::kInt) return std::nullopt;
  return v->int_value;
}

std::optional<std::string> PickleDoc::GetStr(const PickleValue& dict, std::string_view key) const {
  const PickleValue* v = Get(dict, key);
  if (v == nullptr || v->kind != PickleValue::Kind::kStr) return std::nullopt;
  return v->text;
}

namespace {

void AppendJsonString(std::string* out, std::string_view s) {
  out->push_back('"');
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\n':
        *out += "\\n";
        break;
      default:
        if (c < 0x20) {
          *out += fmt::format("\\u{:04x}", c);
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
  }
  out->push_back('"');
}

}  // namespace

std::string PickleDoc::ToJson(const PickleValue& root, int max_depth, size_t max_elements,
                              size_t max_output_bytes) const {
  std::string out;
  size_t budget = max_elements;
  // Recursion bounded by max_depth; a memo cycle is cut there too. The output is bounded by
  // max_output_bytes: a 16 MB string referenced 100 times is not rendered 100 times.
  auto render = [&](auto&& self, const PickleValue& v, int depth) -> void {
    if (budget == 0 || out.size() >= max_output_bytes) {
      out += "\"...\"";
      return;
    }
    --budget;
    using K = PickleValue::Kind;
    switch (v.kind) {
      case K::kNone:
        out += "null";
        return;
      case K::kBool:
        out += v.bool_value ? "true" : "false";
        return;
      case K::kInt:
        out += std::to_string(v.int_value);
        return;
      case K::kFloat:
        out += std::isfinite(v.float_value) ? fmt::format("{}", v.float_value) : "null";
        return;
      case K::kStr:
        if (out.size() + v.text.size() > max_output_bytes) {
          out += fmt::format("\"<{} chars>\"", v.text.size());
        } else {
          AppendJsonString(&out, v.text);
        }
        return;
      case K::kBytes:
        out += fmt::format("\"<{} bytes>\"", v.text.size());
        return;
      case K::kList:
      case K::kTuple:
      case K::kDict:
        break;
    }
    if (depth >= max_depth) {
      out += "\"<nested too deep>\"";
      return;
    }
    if (v.kind == K::kDict) {
      out += '{';
      for (size_t i = 0; i < v.pairs.size(); ++i) {
        if (i) out += ',';
        const PickleValue& k = values_[v.pairs[i].first];
        if (k.kind == K::kStr) {
          AppendJsonString(&out, k.text);
        } else {
          std::string key;
          std::swap(key, out);
          self(self, k, max_depth);  // scalar keys render flat; containers as a marker
          std::swap(key, out);
          AppendJsonString(&out, key);
        }
        out += ':';
        self(self, values_[v.pairs[i].second], depth + 1);
      }
      out += '}';
      return;
    }
    out += '[';
    for (size_t i = 0; i < v.items.size(); ++i) {
      if (i) out += ',';
      self(self, values_[v.items[i]], depth + 1);
    }
    out += ']';
  };
  render(render, root, 0);
  return out;
}

}  // namespace ww::evidence
