// Load() dispatch between the two back ends, and the UTF-8 repair both use.
#include "tokenizer/tokenizer.h"

#include <fstream>
#include <sstream>

#include "tokenizer/hf_bpe.h"
#include "tokenizer/sentencepiece_backend.h"
#include "tokenizer/utf8.h"

namespace ww {

Result<std::unique_ptr<Tokenizer>> Tokenizer::Load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(path + ": cannot open tokenizer file");
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) return Status::IoError(path + ": read failed");
  const std::string bytes = std::move(buf).str();
  // tokenizer.json is a JSON object; a SentencePiece model is a protobuf whose first byte is a
  // field tag (0x0a for `pieces`), never '{' or whitespace.
  size_t first = bytes.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && bytes[first] == '{') return FromJsonText(bytes, path);
  return LoadSentencePiece(bytes, path);
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::FromJsonText(std::string_view json_text,
                                                           const std::string& source_name) {
  auto r = HfBpeTokenizer::FromJsonText(json_text, source_name);
  if (!r.ok()) return r.status();
  return std::unique_ptr<Tokenizer>(std::move(r).value());
}

std::string SanitizeUtf8(std::string_view bytes) { return utf8::Sanitize(bytes); }

}  // namespace ww
