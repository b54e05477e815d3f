#include "dataset/tokenize_corpus.h"

#include <fmt/format.h>

#include <fstream>
#include <istream>
#include <numeric>
#include <ostream>

#include "core/stats.h"
#include "tokenizer/tokenizer.h"

namespace ww::dataset {

TokensPerRecord SummarizeTokensPerRecord(std::vector<uint64_t> counts) {
  TokensPerRecord t;
  if (counts.empty()) return t;
  std::sort(counts.begin(), counts.end());
  t.min = counts.front();
  t.max = counts.back();
  t.p50 = PercentileOfSorted(counts, 0.50);
  t.p95 = PercentileOfSorted(counts, 0.95);
  t.mean = static_cast<double>(std::accumulate(counts.begin(), counts.end(), uint64_t{0})) /
           static_cast<double>(counts.size());
  return t;
}

Status TokenizeCorpus(const TokenizeCorpusOptions& o, std::istream& standard_input,
                      std::ostream& out) {
  auto tok = Tokenizer::Load(o.tokenizer_path);
  if (!tok.ok()) return tok.status();
  std::ifstream file;
  std::istream* in = &standard_input;
  if (o.input_path != "-") {
    file.open(o.input_path, std::ios::binary);
    if (!file) return Status::NotFound(fmt::format("{}: cannot open", o.input_path));
    in = &file;
  }
  JsonlTokenizeOptions jsonl = o.jsonl;
  jsonl.keep_ids = o.ids;

  std::vector<uint64_t> per_record;
  std::string buffered;
  Clock* clock = o.clock ? o.clock : SystemClock();
  const int64_t start_ns = clock->NowMonotonicNs();
  auto summary = TokenizeJsonl(*in, o.input_path, **tok, jsonl, [&](const JsonlLineResult& r) {
    if (o.ids) {
      buffered += '[';
      for (size_t i = 0; i < r.ids.size(); ++i) {
        if (i) buffered += ',';
        buffered += std::to_string(r.ids[i]);
      }
      buffered += "]\n";
      if (buffered.size() > (1 << 20)) {
        out.write(buffered.data(), static_cast<std::streamsize>(buffered.size()));
        buffered.clear();
      }
    } else {
      per_record.push_back(r.token_count);
    }
  });
  out.write(buffered.data(), static_cast<std::streamsize>(buffered.size()));
  if (!summary.ok()) return summary.status();
  if (o.ids) return Status::Ok();

  const double seconds = static_cast<double>(clock->NowMonotonicNs() - start_ns) / 1e9;
  const TokensPerRecord t = SummarizeTokensPerRecord(std::move(per_record));
  const uint64_t records = summary->records;
  const double mean = records ? static_cast<double>(summary->tokens) / records : 0.0;
  const double bytes_per_token =
      summary->tokens ? static_cast<double>(summary->text_bytes) / summary->tokens : 0.0;
  if (o.json) {
    nlohmann::json j = {
        {"input", o.input_path},
        {"tokenizer", (*tok)->Describe()},
        {"field", o.jsonl.field},
        {"records", records},
        {"tokens", summary->tokens},
        {"text_bytes", summary->text_bytes},
        {"bytes_per_token", bytes_per_token},
        {"tokens_per_record",
         {{"min", t.min}, {"p50", t.p50}, {"p95", t.p95}, {"max", t.max}, {"mean", mean}}},
        {"threads", o.jsonl.threads},
        {"elapsed_s", seconds},
    };
    out << j.dump(2) << "\n";
  } else {
    out << fmt::format(
        "input              {}\n"
        "tokenizer          {}\n"
        "records            {}\n"
        "tokens             {}\n"
        "text bytes         {} ({:.2f} bytes/token)\n"
        "tokens per record  min {}  p50 {}  p95 {}  max {}  mean {:.1f}\n"
        "elapsed            {:.2f} s ({:.1f} MB/s on {} threads)\n",
        o.input_path, (*tok)->Describe(), records, summary->tokens, summary->text_bytes,
        bytes_per_token, t.min, t.p50, t.p95, t.max, mean, seconds,
        seconds > 0 ? static_cast<double>(summary->text_bytes) / 1e6 / seconds : 0.0,
        o.jsonl.threads);
  }
  return Status::Ok();
}

}  // namespace ww::dataset
