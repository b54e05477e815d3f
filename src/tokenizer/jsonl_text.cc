#include "tokenizer/jsonl_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <thread>

#include "tokenizer/utf8.h"

namespace ww {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Value of the \uXXXX escape at line[i] (line[i] == '\\'), or -1.
int EscapeAt(std::string_view line, size_t i) {
  if (i + 6 > line.size() || line[i] != '\\' || line[i + 1] != 'u') return -1;
  int v = 0;
  for (size_t k = 2; k < 6; ++k) {
    const int h = HexValue(line[i + k]);
    if (h < 0) return -1;
    v = v * 16 + h;
  }
  return v;
}

// Rewrites lone surrogate escapes in JSON strings to \ufffd, which nlohmann::json would reject
// and JavaScript/Python keep as lone surrogates that become U+FFFD on the way to UTF-8.
std::string RepairSurrogateEscapes(std::string_view line) {
  std::string out;
  out.reserve(line.size());
  bool in_string = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (!in_string) {
      if (c == '"') in_string = true;
      out += c;
      continue;
    }
    if (c == '"') {
      in_string = false;
      out += c;
      continue;
    }
    if (c != '\\' || i + 1 >= line.size()) {
      out += c;
      continue;
    }
    const int v = EscapeAt(line, i);
    if (v >= 0xD800 && v <= 0xDBFF) {
      const int low = EscapeAt(line, i + 6);
      if (low >= 0xDC00 && low <= 0xDFFF) {
        out.append(line.substr(i, 12));
        i += 11;
      } else {
        out += "\\ufffd";
        i += 5;
      }
    } else if (v >= 0xDC00 && v <= 0xDFFF) {
      out += "\\ufffd";
      i += 5;
    } else {
      out += c;
      out += line[i + 1];  // any other escape, \\ and \" included, passes through whole
      ++i;
    }
  }
  return out;
}

bool IsBlank(std::string_view line) {
  return line.find_first_not_of(" \t\r") == std::string_view::npos;
}

}  // namespace

Result<std::string> ExtractJsonlText(std::string_view line, std::string_view field) {
  std::string fixed;
  if (!utf8::IsValid(line)) {
    fixed = utf8::Sanitize(line);
    line = fixed;
  }
  std::string unescaped;
  if (line.find("\\u") != std::string_view::npos) {
    unescaped = RepairSurrogateEscapes(line);
    line = unescaped;
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidInput(fmt::format("not valid JSON: {}", e.what()));
  }
  if (!j.is_object()) {
    return Status::InvalidInput(
        fmt::format("a JSON {} where an object was expected", j.type_name()));
  }
  auto it = j.find(std::string(field));
  if (it == j.end()) return Status::InvalidInput(fmt::format("field '{}' missing", field));
  if (!it->is_string()) {
    return Status::InvalidInput(
        fmt::format("field '{}' is a JSON {}, not a string", field, it->type_name()));
  }
  return it->get<std::string>();
}

Result<JsonlTokenizeSummary> TokenizeJsonl(
    std::istream& in, const std::string& source_name, const Tokenizer& tokenizer,
    const JsonlTokenizeOptions& options,
    const std::function<void(const JsonlLineResult&)>& on_line) {
  JsonlTokenizeSummary summary;
  const int threads = std::max(1, options.threads);
  const size_t batch_lines = std::max<size_t>(1, options.batch_lines);
  uint64_t line_number = 0;
  std::vector<std::string> lines;
  std::vector<uint64_t> numbers;
  std::vector<JsonlLineResult> results;
  std::vector<Status> errors;
  bool eof = false;
  while (!eof) {
    lines.clear();
    numbers.clear();
    std::string line;
    while (lines.size() < batch_lines) {
      if (!std::getline(in, line)) {
        eof = true;
        break;
      }
      ++line_number;
      if (IsBlank(line)) continue;
      lines.push_back(std::move(line));
      numbers.push_back(line_number);
    }
    if (in.bad()) return Status::IoError(source_name + ": read failed");
    if (lines.empty()) continue;

    results.assign(lines.size(), JsonlLineResult{});
    errors.assign(lines.size(), Status::Ok());
    auto work = [&](size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i) {
        auto text = ExtractJsonlText(lines[i], options.field);
        if (!text.ok()) {
          errors[i] = text.status();
          return;  // later lines in this slice are not needed: the run stops at this one
        }
        JsonlLineResult& r = results[i];
        r.line_number = numbers[i];
        r.text_bytes = text->size();
        if (options.keep_ids) {
          r.ids = tokenizer.Encode(*text, options.add_special_tokens);
          r.token_count = r.ids.size();
        } else {
          r.token_count = tokenizer.CountTokens(*text, options.add_special_tokens);
        }
      }
    };
    const size_t n = lines.size();
    const size_t workers = std::min<size_t>(static_cast<size_t>(threads), n);
    std::vector<std::thread> pool;
    const size_t per = (n + workers - 1) / workers;
    for (size_t w = 1; w < workers; ++w) {
      const size_t b = w * per, e = std::min(n, b + per);
      if (b < e) pool.emplace_back(work, b, e);
    }
    work(0, std::min(n, per));
    for (auto& t : pool) t.join();

    for (size_t i = 0; i < n; ++i) {
      if (!errors[i].ok()) {
        return Status::InvalidInput(
            fmt::format("{}:{}: {}", source_name, numbers[i], errors[i].message()));
      }
      summary.records += 1;
      summary.text_bytes += results[i].text_bytes;
      summary.tokens += results[i].token_count;
      on_line(results[i]);
    }
  }
  return summary;
}

}  // namespace ww
