// The simulator as a TelemetrySource (for `watch --source sim:NAME`): one tick per Next.
#include "telemetry/sim/simulator.h"

namespace ww::sim {
namespace {

class SimSource final : public TelemetrySource {
 public:
  explicit SimSource(ScenarioConfig config) : sim_(std::move(config)) {}
  Status Next(std::vector<GpuSample>* out) override {
    truth_.clear();
    sim_.NextTick(out, &truth_);
    return Status::Ok();
  }
  const std::vector<std::string>& hosts() const override { return sim_.host_names(); }
  std::vector<GpuInfo> gpus() const override {
    std::vector<GpuInfo> out;
    for (int h = 0; h < sim_.config().hosts; ++h) {
      for (int g = 0; g < sim_.config().gpus_per_host; ++g) {
        GpuKey k{static_cast<uint16_t>(h), static_cast<uint16_t>(g)};
        out.push_back({k, sim_.ModelNameAsLogged(), sim_.GpuUuid(k), ""});
      }
    }
    return out;
  }

 private:
  Simulator sim_;
  std::vector<TruthLabel> truth_;
};

}  // namespace

std::unique_ptr<TelemetrySource> MakeSimSource(ScenarioConfig config) {
  return std::make_unique<SimSource>(std::move(config));
}

}  // namespace ww::sim
