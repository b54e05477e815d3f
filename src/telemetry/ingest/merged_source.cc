// Several single-host sources as one stream (merged_source.h), and host names from file paths.
#include "telemetry/ingest/merged_source.h"

namespace ww {
namespace {

// Merges several single-host sources into one stream ordered by tick time.
class MergedSource final : public TelemetrySource {
 public:
  explicit MergedSource(std::vector<std::unique_ptr<TelemetrySource>> parts)
      : parts_(std::move(parts)), heads_(parts_.size()) {
    for (const auto& p : parts_) hosts_.push_back(p->hosts().front());
  }

  Status Next(std::vector<GpuSample>* out) override {
    if (!primed_) {
      for (size_t i = 0; i < parts_.size(); ++i) WW_RETURN_IF_ERROR(Refill(i));
      primed_ = true;
    }
    int best = -1;
    for (size_t i = 0; i < heads_.size(); ++i) {
      if (heads_[i].empty()) continue;
      if (best < 0 ||
          heads_[i].front().timestamp_ms < heads_[static_cast<size_t>(best)].front().timestamp_ms) {
        best = static_cast<int>(i);
      }
    }
    if (best < 0) return Status::Ok();
    auto& h = heads_[static_cast<size_t>(best)];
    out->insert(out->end(), h.begin(), h.end());
    return Refill(static_cast<size_t>(best));
  }

  const std::vector<std::string>& hosts() const override { return hosts_; }
  std::vector<GpuInfo> gpus() const override {
    std::vector<GpuInfo> out;
    for (const auto& p : parts_) {
      auto g = p->gpus();
      out.insert(out.end(), g.begin(), g.end());
    }
    return out;
  }
  std::vector<std::string> warnings() const override {
    std::vector<std::string> out;
    for (const auto& p : parts_) {
      auto w = p->warnings();
      out.insert(out.end(), w.begin(), w.end());
    }
    return out;
  }
  std::vector<GpuLabels> gpu_labels() const override {
    std::vector<GpuLabels> out;
    for (const auto& p : parts_) {
      auto l = p->gpu_labels();
      out.insert(out.end(), l.begin(), l.end());
    }
    return out;
  }

 private:
  Status Refill(size_t i) {
    heads_[i].clear();
    return parts_[i]->Next(&heads_[i]);
  }

  std::vector<std::unique_ptr<TelemetrySource>> parts_;
  std::vector<std::vector<GpuSample>> heads_;
  std::vector<std::string> hosts_;
  bool primed_ = false;
};

}  // namespace

std::unique_ptr<TelemetrySource> MergeSources(std::vector<std::unique_ptr<TelemetrySource>> parts) {
  if (parts.size() == 1) return std::move(parts.front());
  return std::make_unique<MergedSource>(std::move(parts));
}

std::string HostNameFromPath(const std::string& path) {
  std::string name = path;
  if (auto slash = name.find_last_of('/'); slash != std::string::npos)
    name = name.substr(slash + 1);
  for (const char* ext : {".gz", ".zst"}) {
    const std::string e(ext);
    if (name.size() > e.size() && name.compare(name.size() - e.size(), e.size(), e) == 0) {
      name.resize(name.size() - e.size());
    }
  }
  if (auto dot = name.find_last_of('.'); dot != std::string::npos && dot > 0) name.resize(dot);
  return name;
}

}  // namespace ww
