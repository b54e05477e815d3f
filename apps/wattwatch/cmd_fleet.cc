// `wattwatch fleet`: flag binding only. Flags bind to fleet::FleetOptions
// (src/fleet/fleet_service.h), whose struct holds every default; the help prints those.
#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <iostream>

#include "commands.h"
#include "core/exit_codes.h"
#include "core/signals.h"
#include "fleet/fleet_service.h"
#include "output_flags.h"
#include "telemetry/ingest/prom_client.h"
#include "triage_flags.h"
#include "watch/startup_checks.h"

namespace ww::app {
namespace {

// The token reader is watch's (--state-token-file); its messages name this command's flag.
std::string AsJobsFlag(std::string text) {
  const std::string from = "--state-token-file", to = "--jobs-token-file";
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

struct FleetFlags {
  fleet::FleetOptions options;
  std::vector<std::string> headers;
  std::string token_file;
  std::string jobs_token_file;
  std::string start, end;
  std::string hook;
  std::vector<std::string> hook_args;
  std::string log_level = "info";
  bool force = false;
};

int RunFleet(FleetFlags f) {
  // The same no-overwrite rule as every command: --ready-file truncates, --events appends, and
  // neither may land on a telemetry log or on the token file.
  if (!OutputsAllowed("fleet",
                      f.token_file.empty() ? std::vector<std::string>{}
                                           : std::vector<std::string>{f.token_file},
                      {{"--events", f.options.events_path}, {"--ready-file", f.options.ready_file}},
                      f.force)) {
    return kExitBadInput;
  }
  auto logger = spdlog::stderr_color_mt("fleet");
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e wattwatch %^%l%$: %v");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(f.log_level));
  fleet::FleetOptions& o = f.options;
  o.version = WATTWATCH_VERSION;
  for (const auto& h : f.headers) {
    if (Status st = ingest::ParseHeaderFlag(h, &o.http.headers); !st.ok()) {
      std::cerr << "wattwatch fleet: " << st.message() << "\n";
      return kExitBadInput;
    }
  }
  if (!f.token_file.empty()) {
    if (Status st = ingest::ReadTokenFile(f.token_file, &o.http.headers); !st.ok()) {
      std::cerr << "wattwatch fleet: " << st.message() << "\n";
      return kExitBadInput;
    }
  }
  if (!f.jobs_token_file.empty()) {
    std::string warning;
    auto t = watch::ReadStateToken(f.jobs_token_file, &warning);
    if (!t.ok()) {
      std::cerr << "wattwatch fleet: " << AsJobsFlag(t.status().message()) << "\n";
      return kExitBadInput;
    }
    if (!warning.empty()) {
      spdlog::warn("{}", AsJobsFlag(warning));
    }
    o.jobs_token = *t;
  }
  for (const auto& [flag, text, out] : {std::tuple{"--start", &f.start, &o.replay_start_ms},
                                        std::tuple{"--end", &f.end, &o.replay_end_ms}}) {
    if (text->empty()) continue;
    auto t = ingest::ParsePromTimeMs(*text);
    if (!t.ok()) {
      std::cerr << "wattwatch fleet: " << flag << ": " << t.status().message() << "\n";
      return kExitBadInput;
    }
    *out = *t;
  }
  if (!f.hook.empty()) {
    o.actions.hook_argv = {f.hook};
    o.actions.hook_argv.insert(o.actions.hook_argv.end(), f.hook_args.begin(), f.hook_args.end());
  }
  StopSignals signals({SIGINT, SIGTERM, SIGHUP}, /*ignore_sigpipe=*/true);
  return fleet::RunFleetCommand(o, signals.pending(), std::cout, std::cerr);
}

}  // namespace

void AddFleetCommand(CLI::App& app, int* exit_code) {
  auto ff = std::make_shared<FleetFlags>();
  fleet::FleetOptions* o = &ff->options;
  CLI::App* cmd = app.add_subcommand(
      "fleet",
      "Judges every job of a cluster from the Prometheus that already stores its dcgm-exporter "
      "series: nothing to install on the nodes. Each cycle reads the samples new since the last "
      "one for all GPUs at once, groups GPUs into jobs by a label, runs the triage engine per "
      "job, and exports per-job verdicts on /metrics and /jobs; hangs go to events, webhook and "
      "hook.");
  cmd->add_option("--prometheus", o->prometheus_url,
                  "http(s)://HOST:PORT[/PREFIX] of Prometheus, Thanos or Mimir")
      ->required();
  cmd->add_option(
         "--job-label", o->job_label,
         "label(s) naming a GPU's job, comma-separated and joined with '/': hpc_job "
         "(Slurm job mapping), namespace,pod (Kubernetes), container, hostname, or any label a "
         "relabel rule puts on the DCGM series (job_id)")
      ->capture_default_str();
  cmd->add_option("--prometheus-vendor", o->vendor,
                  "whose exporter stored the series: nvidia (dcgm-exporter, the default), amd "
                  "(device-metrics-exporter: gpu_power_usage, gpu_gfx_activity, ...), gaudi "
                  "(habanalabs_power_mW, habanalabs_utilization, ...)")
      ->check(CLI::IsMember({"nvidia", "amd", "gaudi"}))
      ->capture_default_str();
  cmd->add_option("--selector", o->selector,
                  "extra label matchers for every query, e.g. '{cluster=\"a\"}'");
  cmd->add_option("--interval-s", o->interval_s, "seconds between cycles")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  cmd->add_option("--lookback-s", o->lookback_s,
                  "the first cycle reads this much history; an outage is caught up to this much")
      ->check(CLI::Range(1.0, 7.0 * 86400))
      ->capture_default_str();
  cmd->add_option(
         "--shard", o->shard,
         "K/N: judge only the jobs with fmix64(FNV-1a64(job id)) mod N == K (replicas 0..N-1)")
      ->capture_default_str();
  cmd->add_option("--close-after-s", o->close_after_s,
                  "close a job (and write its summary) after this long without samples")
      ->check(CLI::Range(1.0, 30.0 * 86400))
      ->capture_default_str();
  AddHangConfirmFlag(cmd, &o->triage.hang_confirm_s);
  AddMaxCheckpointFlag(cmd, &o->triage.max_checkpoint_s);
  cmd->add_option("--retries", o->retries, "retries of a request without an answer (or 5xx)")
      ->check(CLI::Range(0, 20))
      ->capture_default_str();
  cmd->add_option("--retry-backoff-s", o->retry_backoff_s,
                  "wait before the first retry; doubles each time")
      ->check(CLI::Range(0.0, 600.0))
      ->capture_default_str();
  cmd->add_option_function<double>(
         "--timeout-s", [o](double s) { o->http.timeout_ms = static_cast<int64_t>(s * 1000); },
         fmt::format("seconds a Prometheus request may take (default {:g})",
                     static_cast<double>(o->http.timeout_ms) / 1000.0))
      ->check(CLI::Range(0.1, 3600.0));
  cmd->add_option("--prometheus-header", ff->headers,
                  "'Name: value' sent with every request (repeatable), e.g. 'X-Scope-OrgID: gpu'")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
  cmd->add_option("--prometheus-token-file", ff->token_file,
                  "send 'Authorization: Bearer <first line of this file>'")
      ->check(CLI::ExistingFile);
  cmd->add_option("--listen", o->listen,
                  "HOST:PORT for /metrics, /jobs, /healthz (port 0: any free port; 'none')")
      ->capture_default_str();
  cmd->add_option("--jobs-token-file", ff->jobs_token_file,
                  "/jobs requires \"Authorization: Bearer TOKEN\" with this file's token (one "
                  "word, chmod 600); without it /jobs is open to whoever reaches --listen");
  cmd->add_option("--ready-file", o->ready_file,
                  "write the bound HOST:PORT here once /metrics serves (for scripts and tests)");
  cmd->add_option("--events", o->events_path,
                  "append one JSON line per hang confirmed/ended and job closed to FILE (fsync'd)");
  cmd->add_option("--webhook", o->actions.webhook_url,
                  "POST each confirmed hang as JSON to this http(s) URL");
  cmd->add_option("--webhook-timeout-s", o->actions.webhook_timeout_s, "webhook timeout")
      ->capture_default_str();
  cmd->add_option("--hook", ff->hook,
                  "run this program on a confirmed hang (no shell; details in WATTWATCH_* "
                  "variables, WATTWATCH_JOB_ID the job)");
  cmd->add_option("--hook-arg", ff->hook_args, "an argument for --hook (repeat for more)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
  cmd->add_option("--hook-timeout-s", o->actions.hook_timeout_s,
                  "kill the hook (and what it started) after this")
      ->capture_default_str();
  cmd->add_option("--start", ff->start,
                  "replay stored data from this time (RFC 3339 or Unix s) as fast as Prometheus "
                  "answers, with --end; the first cycle reads --lookback-s before it");
  cmd->add_option("--end", ff->end, "end of the replay (RFC 3339 or Unix s)");
  cmd->add_flag("--once", o->once, "run one cycle and exit");
  AddForceFlag(cmd, &ff->force);
  cmd->add_flag("--json", o->json,
                "print a JSON summary on stdout at exit: every job's verdict, reasons and totals, "
                "and each cycle's query and evaluation time");
  cmd->add_option("--log-level", ff->log_level, "trace, debug, info, warn, error, off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}))
      ->capture_default_str();
  const fleet::FleetOptions d;
  cmd->footer(fmt::format(
      R"(
Each --interval-s ({:g} s) one query for every DCGM field of ALL GPUs at once (a regex on
__name__, never a query per GPU): the raw samples stored since the last cycle, as scraped (a
range selector, not query_range, which would paper over a hole with repeated values). A GPU's job is the value of --job-label on its series; a GPU without it
is unattributed (wattwatch_fleet_unattributed_gpus). Each job gets its own triage engine, the
one `wattwatch triage` runs: a hang is every rank spinning (or gone) for --hang-confirm-s
({:g} s); a rank-0 checkpoint on another host of the job is seen as one, since the job's hosts
are judged together. A job silent for --close-after-s ({:g} s) is closed with its summary.

Large fleets: each range is read in pages of at most 500 hosts (a cheap query lists the hosts
first), merged before judging. An answer that cannot be used (no usable sample, an instant
vector) is an error, counted in wattwatch_fleet_unusable_answers_total.

Prometheus slow or down: each request is retried --retries ({}) times, the wait doubling from
--retry-backoff-s ({:g} s); what still fails is read again next cycle. Missing data never
changes a verdict and never closes a job; wattwatch_fleet_query_errors_total,
wattwatch_fleet_prometheus_up and wattwatch_fleet_data_behind_seconds say so.

--shard K/N: N replicas split the jobs by fmix64(FNV-1a 64(job id)) mod N; no coordination.

Endpoints: /metrics (wattwatch_job_* per job, wattwatch_fleet_* about the service), /jobs (JSON:
every job's verdict and reasons, recently closed jobs), /healthz (200 while cycles succeed).

Examples:
  wattwatch fleet --prometheus http://prometheus:9090 --events /var/log/wattwatch/fleet.jsonl
  wattwatch fleet --prometheus http://prometheus:9090 --job-label namespace,pod \
      --listen 0.0.0.0:9401 --webhook https://hooks.example.com/wattwatch
  wattwatch fleet --prometheus http://prometheus:9090 --shard 0/2    # and 1/2 on another replica
  wattwatch fleet --prometheus http://prometheus:9090 --start 2026-11-18T01:00:00Z \
      --end 2026-11-18T03:00:00Z --listen none --json > fleet.json    # replay a past night

Exit codes: 0 stopped (SIGTERM/SIGINT, --once, the replay's end); 2 bad flags, the port in use,
an events file not writable, a Prometheus that refuses the query (a bad --selector), --once
without an answer, or a replay (--start/--end) with failed cycles (it says how many).)",
      d.interval_s, d.triage.hang_confirm_s, d.close_after_s, d.retries, d.retry_backoff_s));
  cmd->callback([ff, exit_code] { *exit_code = RunFleet(*ff); });
}

}  // namespace ww::app
