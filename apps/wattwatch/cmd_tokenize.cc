// `wattwatch tokenize --tokenizer FILE INPUT.jsonl`: token counts or ids of a JSON-lines corpus,
// exactly as training will tokenize it. Parses flags and prints; the work is in
// src/tokenizer/.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "commands.h"
#include "core/clock.h"
#include "core/exit_codes.h"
#include "tokenizer/jsonl_text.h"
#include "tokenizer/tokenizer.h"

namespace ww::app {
namespace {

struct TokenizeFlags {
  std::string tokenizer_path;
  std::string input_path;
  std::string field = "text";
  bool count = false;
  bool ids = false;
  bool json = false;
  bool add_special_tokens = false;
  int threads = 2;
};

uint64_t Percentile(std::vector<uint64_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  const size_t i = static_cast<size_t>(q * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(i, sorted.size() - 1)];
}

int RunTokenize(const TokenizeFlags& f) {
  auto tok = Tokenizer::Load(f.tokenizer_path);
  if (!tok.ok()) {
    std::cerr << "wattwatch tokenize: " << tok.status().message() << "\n";
    return kExitBadInput;
  }
  std::ifstream file;
  std::istream* in = &std::cin;
  if (f.input_path != "-") {
    file.open(f.input_path, std::ios::binary);
    if (!file) {
      std::cerr << "wattwatch tokenize: " << f.input_path << ": cannot open\n";
      return kExitBadInput;
    }
    in = &file;
  }
  JsonlTokenizeOptions options;
  options.field = f.field;
  options.add_special_tokens = f.add_special_tokens;
  options.threads = f.threads;
  options.keep_ids = f.ids;

  std::vector<uint64_t> per_line;
  std::string out;
  Clock* clock = SystemClock();
  const int64_t start_ns = clock->NowMonotonicNs();
  auto summary = TokenizeJsonl(*in, f.input_path, **tok, options, [&](const JsonlLineResult& r) {
    if (f.ids) {
      out += '[';
      for (size_t i = 0; i < r.ids.size(); ++i) {
        if (i) out += ',';
        out += std::to_string(r.ids[i]);
      }
      out += "]\n";
      if (out.size() > (1 << 20)) {
        std::fwrite(out.data(), 1, out.size(), stdout);
        out.clear();
      }
    } else {
      per_line.push_back(r.token_count);
    }
  });
  std::fwrite(out.data(), 1, out.size(), stdout);
  if (!summary.ok()) {
    std::fflush(stdout);
    std::cerr << "wattwatch tokenize: " << summary.status().message() << "\n";
    return kExitBadInput;
  }
  if (f.ids) return kExitOk;

  const double seconds = static_cast<double>(clock->NowMonotonicNs() - start_ns) / 1e9;
  std::sort(per_line.begin(), per_line.end());
  const uint64_t records = summary->records;
  const double mean = records ? static_cast<double>(summary->tokens) / records : 0.0;
  const double bytes_per_token =
      summary->tokens ? static_cast<double>(summary->text_bytes) / summary->tokens : 0.0;
  if (f.json) {
    nlohmann::json j = {
        {"input", f.input_path},
        {"tokenizer", (*tok)->Describe()},
        {"field", f.field},
        {"records", records},
        {"tokens", summary->tokens},
        {"text_bytes", summary->text_bytes},
        {"bytes_per_token", bytes_per_token},
        {"tokens_per_record",
         {{"min", per_line.empty() ? 0 : per_line.front()},
          {"p50", Percentile(per_line, 0.5)},
          {"p95", Percentile(per_line, 0.95)},
          {"max", per_line.empty() ? 0 : per_line.back()},
          {"mean", mean}}},
        {"threads", f.threads},
        {"elapsed_s", seconds},
    };
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << fmt::format(
        "input              {}\n"
        "tokenizer          {}\n"
        "records            {}\n"
        "tokens             {}\n"
        "text bytes         {} ({:.2f} bytes/token)\n"
        "tokens per record  min {}  p50 {}  p95 {}  max {}  mean {:.1f}\n"
        "elapsed            {:.2f} s ({:.1f} MB/s on {} threads)\n",
        f.input_path, (*tok)->Describe(), records, summary->tokens, summary->text_bytes,
        bytes_per_token, per_line.empty() ? 0 : per_line.front(), Percentile(per_line, 0.5),
        Percentile(per_line, 0.95), per_line.empty() ? 0 : per_line.back(), mean, seconds,
        seconds > 0 ? static_cast<double>(summary->text_bytes) / 1e6 / seconds : 0.0, f.threads);
  }
  return kExitOk;
}

}  // namespace

void AddTokenizeCommand(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand(
      "tokenize",
      "Tokenize a JSON-lines corpus exactly as training will, to count tokens (and so predict each "
      "rank's steps before launch) or to print the ids.\n\n"
      "Reads one JSON object per line and tokenizes its --field (default \"text\") with a Hugging "
      "Face tokenizer.json (byte-level BPE: Qwen2/Qwen3, Llama-3, GPT-2) or a SentencePiece "
      "tokenizer.model (Llama-2, Gemma). Ids equal those of the Rust `tokenizers` library; "
      "special tokens written in the text are recognised. Lone surrogate escapes (\\udc80) and "
      "invalid UTF-8 bytes become U+FFFD, as in Python/JavaScript. Blank lines are skipped. "
      "Work is split over --threads threads (default 2); output keeps the input order.\n\n"
      "Examples:\n"
      "  wattwatch tokenize --tokenizer Qwen3-32B/tokenizer.json train.jsonl\n"
      "  wattwatch tokenize --tokenizer tokenizer.json --count --json train.jsonl | jq .tokens\n"
      "  wattwatch tokenize --tokenizer tokenizer.model --ids --field content chat.jsonl\n\n"
      "Exit codes: 0 ok; 2 bad input (unreadable file, a line that is not a JSON object with a "
      "string --field: the message names FILE:LINE; a tokenizer feature that is not supported: "
      "the message names it).");
  auto f = std::make_shared<TokenizeFlags>();
  cmd->add_option("--tokenizer", f->tokenizer_path, "tokenizer.json or tokenizer.model")
      ->required();
  cmd->add_option("INPUT", f->input_path, "JSON-lines file, or - for standard input")->required();
  cmd->add_option("--field", f->field, "JSON key holding the text (default: text)");
  auto* count = cmd->add_flag("--count", f->count,
                              "print totals and tokens-per-record statistics (the default)");
  auto* ids = cmd->add_flag("--ids", f->ids, "print one JSON array of ids per record");
  count->excludes(ids);
  cmd->add_flag("--json", f->json, "with --count: print the statistics as one JSON object");
  cmd->add_flag("--add-special-tokens", f->add_special_tokens,
                "apply the post-processor (e.g. Llama-3's <|begin_of_text|>; SentencePiece BOS)");
  cmd->add_option("--threads", f->threads, "worker threads (default 2)")->check(CLI::Range(1, 256));
  cmd->callback([f, exit_code]() { *exit_code = RunTokenize(*f); });
}

}  // namespace ww::app
