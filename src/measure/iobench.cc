#include "measure/iobench.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <thread>

#include "core/format.h"
#include "dataset/tokenizer_counter.h"

namespace ww::measure {
namespace {

// Raw text without a tokenizer: the jsonl reader still finds each line (its extent), and every
// sample counts as 0 tokens, which the report then calls "unknown" rather than zero.
class NoTokenIds final : public dataset::TokenCounter {
 public:
  Status Encode(std::string_view, std::vector<uint32_t>* ids) override {
    ids->clear();
    return Status::Ok();
  }
};

struct Sample {
  dataset::SampleExtent extent;  // file_index into Plan::files
  uint32_t tokens = 0;
};

struct Plan {
  std::vector<FileFacts> files;
  std::vector<Sample> samples;
};

Result<uint64_t> ResidentBytes(Env* env, const std::vector<FileFacts>& files,
                               std::vector<uint64_t>* each) {
  uint64_t total = 0;
  for (const FileFacts& f : files) {
    auto r = env->ResidentBytes(f.path);
    if (!r.ok()) return r.status();
    const uint64_t bytes = std::min(*r, f.size_bytes);
    if (each) each->push_back(bytes);
    total += bytes;
  }
  return total;
}

Result<Plan> BuildPlan(Env* env, const std::vector<std::string>& paths,
                       const IobenchOptions& options) {
  NoTokenIds no_tokens;
  dataset::ReaderOptions ro;
  ro.field = options.field ? *options.field : std::string(dataset::DefaultField(options.format));
  ro.token_sample_bytes = 0;  // the id range is the gate's business; read no token data here
  ro.tokenizer = options.tokenizer ? options.tokenizer : &no_tokens;
  Plan plan;
  // Open every corpus first (headers only), so residency is measured before planning reads the
  // indexes, or the whole file for jsonl, into the cache.
  std::vector<std::unique_ptr<dataset::SampleLengthReader>> readers;
  std::vector<std::vector<uint32_t>> to_plan;  // per reader: its file index -> plan's
  std::map<std::string, uint32_t> file_index;
  for (const std::string& path : paths) {
    auto reader = dataset::OpenSampleLengthReader(env, options.format, path, ro);
    if (!reader.ok()) return reader.status();
    std::vector<uint32_t> global;
    for (const auto& [file, size] : (*reader)->files()) {
      auto [it, added] = file_index.emplace(file, static_cast<uint32_t>(plan.files.size()));
      if (added) plan.files.push_back(FileFacts{file, size, 0, std::nullopt});
      global.push_back(it->second);
    }
    readers.push_back(std::move(*reader));
    to_plan.push_back(std::move(global));
  }
  std::vector<uint64_t> resident_each;
  auto resident = ResidentBytes(env, plan.files, &resident_each);
  if (!resident.ok()) return resident.status();
  for (size_t i = 0; i < plan.files.size(); ++i) plan.files[i].resident_bytes = resident_each[i];

  for (size_t r = 0; r < readers.size(); ++r) {
    std::vector<uint32_t> lengths;
    std::vector<dataset::SampleExtent> extents;
    readers[r]->set_extent_sink(&extents);
    WW_RETURN_IF_ERROR(dataset::ReadAllLengths(readers[r].get(), &lengths));
    if (extents.size() != lengths.size()) {
      return Status::InvalidInput(
          fmt::format("{}: holds sample lengths only, no sample data to read (a 1-D lengths "
                      ".npy); point iobench at the token files (a 2-D .npy, or PREFIX for "
                      "PREFIX.offsets.npy + PREFIX.tokens.npy)",
                      paths[r]));
    }
    plan.samples.reserve(plan.samples.size() + lengths.size());
    for (size_t i = 0; i < lengths.size(); ++i) {
      dataset::SampleExtent e = extents[i];
      e.file_index = to_plan[r].at(e.file_index);
      plan.samples.push_back(Sample{e, lengths[i]});
    }
  }
  return plan;
}

double Fraction(uint64_t part, uint64_t whole) {
  return whole == 0 ? 1.0 : static_cast<double>(part) / static_cast<double>(whole);
}

struct PassCounts {
  uint64_t samples = 0, bytes = 0, tokens = 0;
  double seconds = 0;
};

// Reads samples order[0..count) with `readers` threads, each pread of one sample (in pieces of
// at most kPieceBytes so a 64 MB jsonl line does not need a 64 MB buffer per thread).
Result<PassCounts> ReadSamples(const std::vector<std::unique_ptr<RandomAccessFile>>& files,
                               const std::vector<Sample>& samples,
                               const std::vector<uint64_t>& order, size_t count, int readers,
                               Clock* clock) {
  constexpr uint64_t kPieceBytes = uint64_t{8} << 20;
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex error_mu;
  Status error;
  std::vector<PassCounts> per_reader(static_cast<size_t>(readers));
  auto work = [&](int r) {
    std::vector<char> buf;
    PassCounts mine;  // local: neighbouring readers' counters would share a cache line
    while (!failed.load(std::memory_order_relaxed)) {
      const size_t i = next.fetch_add(1, std::memory_order_relaxed);
      if (i >= count) break;
      const Sample& s = samples[order[i]];
      const RandomAccessFile& file = *files[s.extent.file_index];
      uint64_t done = 0;
      while (done < s.extent.bytes) {
        const uint64_t n = std::min(kPieceBytes, s.extent.bytes - done);
        if (buf.size() < n) buf.resize(static_cast<size_t>(n));
        Status st = file.ReadAt(s.extent.offset + done, static_cast<size_t>(n), buf.data());
        if (!st.ok()) {
          std::lock_guard<std::mutex> lock(error_mu);
          if (error.ok()) error = st;
          failed = true;
          break;
        }
        done += n;
      }
      ++mine.samples;
      mine.bytes += s.extent.bytes;
      mine.tokens += s.tokens;
    }
    per_reader[static_cast<size_t>(r)] = mine;
  };
  const int64_t start_ns = clock->NowMonotonicNs();
  std::vector<std::thread> threads;
  for (int r = 1; r < readers; ++r) threads.emplace_back(work, r);
  work(0);
  for (auto& t : threads) t.join();
  const int64_t end_ns = clock->NowMonotonicNs();
  if (!error.ok()) return error;
  PassCounts total;
  for (const PassCounts& c : per_reader) {
    total.samples += c.samples;
    total.bytes += c.bytes;
    total.tokens += c.tokens;
  }
  // A clock that did not move (a tiny corpus, a manual clock) must not turn into infinite rates.
  total.seconds = std::max<double>(1e-9, static_cast<double>(end_ns - start_ns) / 1e9);
  return total;
}

// iobench prints sizes with two decimals (the gate one): a pass reads a few MiB in tests.
std::string Bytes(double bytes) { return FormatBytes(bytes, 2); }

// Decimal rates, as disks and networks are sold: MB/s = 1e6 bytes/s.
std::string Rate(double per_s, const char* unit) {
  if (per_s >= 1e9) return fmt::format("{:.2f} G{}", per_s / 1e9, unit);
  if (per_s >= 1e6) return fmt::format("{:.1f} M{}", per_s / 1e6, unit);
  if (per_s >= 1e3) return fmt::format("{:.1f} k{}", per_s / 1e3, unit);
  return fmt::format("{:.0f} {}", per_s, unit);
}

nlohmann::json PassJson(const PassResult& p) {
  nlohmann::json j;
  j["order"] = std::string(ReadOrderName(p.order));
  j["cache"] = p.cold ? "cold" : "warm";
  j["resident_fraction_before"] = p.resident_fraction_before;
  j["samples"] = p.samples;
  j["bytes"] = p.bytes;
  j["tokens"] = p.tokens_per_s ? nlohmann::json(p.tokens) : nlohmann::json(nullptr);
  j["seconds"] = p.seconds;
  j["bytes_per_s"] = p.bytes_per_s;
  j["tokens_per_s"] = p.tokens_per_s ? nlohmann::json(*p.tokens_per_s) : nlohmann::json(nullptr);
  return j;
}

std::string KeepUpText(const char* which, const PassResult& pass, const KeepUp& k, double need) {
  if (k.keeps_up) {
    return fmt::format("{}: keeps up, {} is {:.1f}x the need", which,
                       Rate(*pass.tokens_per_s, "tok/s"), k.margin);
  }
  return fmt::format("{}: does NOT keep up, {} is {:.2f}x the need (short by {}, {:.0f} %)", which,
                     Rate(*pass.tokens_per_s, "tok/s"), k.margin,
                     Rate(need - *pass.tokens_per_s, "tok/s"), 100.0 * (1.0 - k.margin));
}

}  // namespace

std::string_view ReadOrderName(ReadOrder order) {
  return order == ReadOrder::kShuffled ? "shuffled" : "sequential";
}

std::vector<uint64_t> SampleOrder(uint64_t samples, ReadOrder order, uint64_t seed) {
  std::vector<uint64_t> out(static_cast<size_t>(samples));
  for (uint64_t i = 0; i < samples; ++i) out[i] = i;
  if (order == ReadOrder::kShuffled && samples > 1) {
    // mt19937_64's sequence is fixed by the standard (std::shuffle and the distributions are
    // not), so a seed names the same order everywhere. The modulo bias is below 2^-40 here.
    std::mt19937_64 rng(seed);
    for (uint64_t i = samples - 1; i > 0; --i) std::swap(out[i], out[rng() % (i + 1)]);
  }
  return out;
}

Result<IobenchReport> RunIobench(Env* env, Clock* clock, const std::vector<std::string>& paths,
                                 const IobenchOptions& options) {
  if (paths.empty()) return Status::InvalidInput("no corpus path given");
  if (options.readers < 1 || options.readers > 1024) {
    return Status::InvalidInput(fmt::format("--readers {}: must be 1..1024", options.readers));
  }
  if (options.orders.empty()) return Status::InvalidInput("no read order given");
  const bool text = options.format == dataset::DataFormat::kTextJsonl;
  const bool has_tokens = !text || options.tokenizer != nullptr;
  if (options.need_tokens_per_s) {
    if (!(*options.need_tokens_per_s > 0)) {
      return Status::InvalidInput(fmt::format("--need-tokens-per-s {}: must be a positive number",
                                              *options.need_tokens_per_s));
    }
    if (!has_tokens) {
      return Status::InvalidInput(
          "--need-tokens-per-s needs token counts, and raw text has none: give --tokenizer "
          "(tokenizer.json) or read the pretokenized corpus");
    }
  }

  IobenchReport report;
  report.format = options.format;
  report.readers = options.readers;
  report.seed = options.seed;
  report.max_bytes = options.max_bytes;

  auto plan = BuildPlan(env, paths, options);
  if (!plan.ok()) return plan.status();
  report.files = plan->files;
  uint64_t resident_bytes = 0;
  for (FileFacts& f : report.files) {
    report.size_bytes += f.size_bytes;
    resident_bytes += f.resident_bytes;
    f.allocated_bytes = env->AllocatedBytes(f.path);
  }
  report.resident_fraction = Fraction(resident_bytes, report.size_bytes);
  report.samples = plan->samples.size();
  uint64_t tokens = 0;
  for (const Sample& s : plan->samples) {
    report.sample_bytes += s.extent.bytes;
    tokens += s.tokens;
  }
  if (has_tokens) report.tokens = tokens;
  if (report.samples == 0) {
    return Status::InvalidInput(fmt::format("{}: the corpus has no samples", paths[0]));
  }

  if (options.mem_budget_bytes) {
    report.mem_available_bytes = *options.mem_budget_bytes;
    report.mem_from_budget = true;
  } else {
    auto mem = env->ReadMemInfo();
    if (!mem.ok()) return mem.status();
    if (!mem->available_bytes) {
      return Status::Unavailable(
          "/proc/meminfo: no MemAvailable line (Linux 3.14 or later has one); give "
          "--mem-budget-bytes");
    }
    report.mem_available_bytes = *mem->available_bytes;
  }
  report.fits_in_page_cache = report.size_bytes <= report.mem_available_bytes;

  std::vector<std::unique_ptr<RandomAccessFile>> files;
  for (const FileFacts& f : report.files) {
    auto file = env->OpenFile(f.path);
    if (!file.ok()) return file.status();
    files.push_back(std::move(*file));
  }

  for (ReadOrder order : options.orders) {
    const std::vector<uint64_t> sample_order = SampleOrder(report.samples, order, options.seed);
    size_t count = sample_order.size();
    if (options.max_bytes > 0) {
      uint64_t bytes = 0;
      for (count = 0; count < sample_order.size() && bytes < options.max_bytes; ++count) {
        bytes += plan->samples[sample_order[count]].extent.bytes;
      }
    }
    auto run_pass = [&](bool cold) -> Status {
      PassResult pass;
      pass.order = order;
      pass.cold = cold;
      auto before = ResidentBytes(env, report.files, nullptr);
      if (!before.ok()) return before.status();
      pass.resident_fraction_before = Fraction(*before, report.size_bytes);
      auto counts = ReadSamples(files, plan->samples, sample_order, count, options.readers, clock);
      if (!counts.ok()) return counts.status();
      pass.samples = counts->samples;
      pass.bytes = counts->bytes;
      pass.tokens = counts->tokens;
      pass.seconds = counts->seconds;
      pass.bytes_per_s = static_cast<double>(pass.bytes) / pass.seconds;
      if (has_tokens) pass.tokens_per_s = static_cast<double>(pass.tokens) / pass.seconds;
      report.passes.push_back(pass);
      return Status::Ok();
    };
    if (options.drop_cache) {
      for (const FileFacts& f : report.files) WW_RETURN_IF_ERROR(env->DropCachedPages(f.path));
      WW_RETURN_IF_ERROR(run_pass(/*cold=*/true));
    } else {
      // Fill the cache untimed, so "warm" means warm even when the corpus was not cached.
      auto primed = ReadSamples(files, plan->samples, sample_order, count, options.readers, clock);
      if (!primed.ok()) return primed.status();
    }
    WW_RETURN_IF_ERROR(run_pass(/*cold=*/false));
  }

  const bool shuffled_ran = std::find(options.orders.begin(), options.orders.end(),
                                      ReadOrder::kShuffled) != options.orders.end();
  const ReadOrder headline = shuffled_ran ? ReadOrder::kShuffled : ReadOrder::kSequential;
  for (const PassResult& p : report.passes) {
    if (p.order != headline) continue;
    (p.cold ? report.cold : report.warm) = p;
  }

  // Caveats, so no figure claims more than was measured.
  if (report.cold && report.cold->resident_fraction_before > 0.05) {
    report.notes.push_back(fmt::format(
        "the cold pass started with {:.0f} % of the corpus still cached (pages dirty, under "
        "writeback or mapped by "
        "another process stay after posix_fadvise): its figure lies between cold and warm",
        100.0 * report.cold->resident_fraction_before));
  }
  if (report.warm && report.warm->resident_fraction_before < 0.9) {
    report.notes.push_back(
        fmt::format("the warm pass started with only {:.0f} % of the corpus cached: this machine "
                    "cannot hold it in the page "
                    "cache, so 'warm' is not warm here",
                    100.0 * report.warm->resident_fraction_before));
  }
  if (!options.drop_cache) {
    report.notes.push_back(
        "--no-drop: no cold pass; the cache was filled by an untimed pass before the warm one");
  }
  for (const FileFacts& f : report.files) {
    if (f.allocated_bytes && f.size_bytes >= (uint64_t{1} << 20) &&
        *f.allocated_bytes < f.size_bytes / 2) {
      report.notes.push_back(
          fmt::format("{} is sparse ({} of {} allocated): holes read as zeros without touching the "
                      "disk, so its cold figure "
                      "overstates the storage",
                      f.path, Bytes(static_cast<double>(*f.allocated_bytes)),
                      Bytes(static_cast<double>(f.size_bytes))));
    }
  }
  if (!has_tokens) {
    report.notes.push_back(
        "raw text has no token ids: tokens/s is not measured (give --tokenizer tokenizer.json "
        "to count them before the timed passes)");
  }
  if (options.max_bytes > 0 && !report.passes.empty() &&
      report.passes.front().bytes < report.sample_bytes) {
    report.notes.push_back(
        fmt::format("each pass read the first {} of {} of sample data in its order (--max-bytes)",
                    Bytes(static_cast<double>(report.passes.front().bytes)),
                    Bytes(static_cast<double>(report.sample_bytes))));
  }
  if (report.mem_from_budget) {
    report.notes.push_back(
        fmt::format("page-cache fit judged against --mem-budget-bytes {}, not this machine; the "
                    "warm figures were measured "
                    "with this machine's cache",
                    Bytes(static_cast<double>(report.mem_available_bytes))));
  }

  if (options.need_tokens_per_s) {
    IobenchVerdict v;
    v.need_tokens_per_s = *options.need_tokens_per_s;
    auto judge = [&](const std::optional<PassResult>& p) -> std::optional<KeepUp> {
      if (!p || !p->tokens_per_s) return std::nullopt;
      KeepUp k;
      k.margin = *p->tokens_per_s / v.need_tokens_per_s;
      k.keeps_up = k.margin >= 1.0;
      return k;
    };
    v.cold = judge(report.cold);
    v.warm = judge(report.warm);
    v.steady_state = report.fits_in_page_cache ? "warm" : "cold";
    v.keeps_up = (!v.cold || v.cold->keeps_up) && (!v.warm || v.warm->keeps_up);
    report.verdict = v;
  }
  return report;
}

nlohmann::json IobenchToJson(const IobenchReport& r) {
  nlohmann::json j;
  j["format"] = std::string(dataset::DataFormatName(r.format));
  j["files"] = nlohmann::json::array();
  for (const FileFacts& f : r.files) {
    j["files"].push_back({{"path", f.path},
                          {"size_bytes", f.size_bytes},
                          {"resident_bytes", f.resident_bytes},
                          {"allocated_bytes", f.allocated_bytes ? nlohmann::json(*f.allocated_bytes)
                                                                : nlohmann::json(nullptr)}});
  }
  j["size_bytes"] = r.size_bytes;
  j["resident_fraction"] = r.resident_fraction;
  j["mem_available_bytes"] = r.mem_available_bytes;
  j["mem_source"] = r.mem_from_budget ? "--mem-budget-bytes" : "MemAvailable";
  j["fits_in_page_cache"] = r.fits_in_page_cache;
  j["samples"] = r.samples;
  j["sample_bytes"] = r.sample_bytes;
  j["tokens"] = r.tokens ? nlohmann::json(*r.tokens) : nlohmann::json(nullptr);
  j["readers"] = r.readers;
  j["seed"] = r.seed;
  j["max_bytes"] = r.max_bytes;
  j["cold"] = r.cold ? PassJson(*r.cold) : nlohmann::json(nullptr);
  j["warm"] = r.warm ? PassJson(*r.warm) : nlohmann::json(nullptr);
  j["passes"] = nlohmann::json::array();
  for (const PassResult& p : r.passes) j["passes"].push_back(PassJson(p));
  if (r.verdict) {
    const IobenchVerdict& v = *r.verdict;
    auto keep = [](const std::optional<KeepUp>& k) {
      return k ? nlohmann::json{{"keeps_up", k->keeps_up}, {"margin", k->margin}}
               : nlohmann::json(nullptr);
    };
    j["verdict"] = {{"need_tokens_per_s", v.need_tokens_per_s},
                    {"cold", keep(v.cold)},
                    {"warm", keep(v.warm)},
                    {"steady_state", v.steady_state},
                    {"keeps_up", v.keeps_up}};
  } else {
    j["verdict"] = nullptr;
  }
  j["notes"] = r.notes;
  return j;
}

std::string FormatIobench(const IobenchReport& r) {
  std::string out;
  out += fmt::format(
      "corpus: {} ({}), {} file{}, {} samples, {} of sample data{}\n",
      Bytes(static_cast<double>(r.size_bytes)), dataset::DataFormatName(r.format), r.files.size(),
      r.files.size() == 1 ? "" : "s", r.samples, Bytes(static_cast<double>(r.sample_bytes)),
      r.tokens ? fmt::format(", {} tokens", *r.tokens) : std::string(", tokens unknown"));
  out += fmt::format("page cache: {:.0f} % resident before the run; {} {} -> {}\n",
                     100.0 * r.resident_fraction, Bytes(static_cast<double>(r.mem_available_bytes)),
                     r.mem_from_budget ? "memory budget" : "available (MemAvailable)",
                     r.fits_in_page_cache
                         ? "fits in the page cache: after the first epoch reads come from memory"
                         : "does NOT fit in the page cache: every epoch reads from storage");
  out += fmt::format("{} reader{}, seed {}\n\n", r.readers, r.readers == 1 ? "" : "s", r.seed);
  out += fmt::format("{:<6} {:<11} {:>9} {:>9} {:>11} {:>14} {:>15}\n", "cache", "order", "cached",
                     "seconds", "read", "bytes/s", "tokens/s");
  for (const PassResult& p : r.passes) {
    out += fmt::format("{:<6} {:<11} {:>8.0f}% {:>9.3f} {:>11} {:>14} {:>15}\n",
                       p.cold ? "cold" : "warm", ReadOrderName(p.order),
                       100.0 * p.resident_fraction_before, p.seconds,
                       Bytes(static_cast<double>(p.bytes)), Rate(p.bytes_per_s, "B/s"),
                       p.tokens_per_s ? Rate(*p.tokens_per_s, "tok/s") : std::string("-"));
  }
  if (r.cold && r.warm && r.cold->bytes_per_s > 0) {
    out += fmt::format("\nwarm reads {:.1f}x faster than cold ({} order)\n",
                       r.warm->bytes_per_s / r.cold->bytes_per_s, ReadOrderName(r.cold->order));
  }
  if (r.verdict) {
    const IobenchVerdict& v = *r.verdict;
    out += fmt::format("\nneed {} (--need-tokens-per-s):\n", Rate(v.need_tokens_per_s, "tok/s"));
    if (v.cold) out += "  " + KeepUpText("cold", *r.cold, *v.cold, v.need_tokens_per_s) + "\n";
    if (v.warm) out += "  " + KeepUpText("warm", *r.warm, *v.warm, v.need_tokens_per_s) + "\n";
    out += fmt::format(
        "  steady state is {}: {}\n", v.steady_state,
        v.steady_state == "warm"
            ? "the corpus fits the page cache, so after the first epoch the warm rate applies"
            : "the corpus does not fit the page cache, so every epoch reads at the cold rate");
  }
  if (!r.notes.empty() && !r.verdict) out += "\n";
  for (const std::string& n : r.notes) out += "note: " + n + "\n";
  return out;
}

int IobenchExitCode(const IobenchReport& r) { return r.verdict && !r.verdict->keeps_up ? 1 : 0; }

std::optional<std::vector<ReadOrder>> ParseReadOrders(std::string_view name) {
  if (name == "sequential") return std::vector<ReadOrder>{ReadOrder::kSequential};
  if (name == "shuffled") return std::vector<ReadOrder>{ReadOrder::kShuffled};
  if (name == "both") return std::vector<ReadOrder>{ReadOrder::kSequential, ReadOrder::kShuffled};
  return std::nullopt;
}

Result<int> RunIobenchCommand(Env* env, Clock* clock, const IobenchCommandOptions& options,
                              std::string* out) {
  IobenchOptions run = options.iobench;
  std::unique_ptr<dataset::TokenCounter> counter;
  if (!options.tokenizer.empty()) {
    if (run.format != dataset::DataFormat::kTextJsonl) {
      return Status::InvalidInput(
          "--tokenizer is for --format text-jsonl; pretokenized formats carry their token ids");
    }
    auto made = dataset::MakeTokenizerCounter(options.tokenizer);
    if (!made.ok()) return made.status();
    counter = std::move(*made);
    run.tokenizer = counter.get();
  }
  auto report = RunIobench(env, clock, options.paths, run);
  if (!report.ok()) return report.status();
  *out = options.json ? IobenchToJson(*report).dump(2) + "\n" : FormatIobench(*report);
  return IobenchExitCode(*report);
}

}  // namespace ww::measure
