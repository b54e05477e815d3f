#include "triage_flags.h"

namespace ww::app {

CLI::Option* AddHangConfirmFlag(CLI::App* cmd, double* seconds, bool old_alias) {
  return cmd
      ->add_option(old_alias ? "--hang-confirm-s,--confirm-s" : "--hang-confirm-s", *seconds,
                   "seconds of spin with nobody working before it is a hang")
      ->check(CLI::Range(1.0, 86400.0))
      ->capture_default_str();
}

CLI::Option* AddMaxCheckpointFlag(CLI::App* cmd, double* seconds) {
  return cmd
      ->add_option("--max-checkpoint-s", *seconds,
                   "no checkpoint takes longer: peers waiting on quiet ranks, or every rank quiet "
                   "holding memory, for longer is a hang")
      ->check(CLI::Range(1.0, 1e7))
      ->capture_default_str();
}

CLI::Option* AddWorldSizeFlag(CLI::App* cmd, int* ranks) {
  return cmd
      ->add_option("--world-size", *ranks,
                   "ranks in the whole job, when the GPUs seen are part of it (one node of a "
                   "multi-node run): they then wait on peers not seen (default: the GPUs seen; a "
                   "job of one GPU has no collectives)")
      ->check(CLI::Range(1, 1000000));
}

}  // namespace ww::app
