// ParseSeedFlags: geotrain-run's command line, in the seed projects' flag names.
//
// The users of AC-SGD, TAH-Quant, Optimus-CC and CocktailSGD launch one process per rank with
// flags like --forward-compress-method delta --forward-bits 4 --dp-mode cocktail_sgd; geotrain-run
// takes the same flags (docs/job-spec.md lists each one and the job-spec key it sets) and turns
// them into this rank's StageAssignment plus how to reach the other ranks.
//
// Ranks: rank = dp_rank * pipeline_group_size + stage, so stage = rank % pipeline_group_size and
// dp_rank = rank / pipeline_group_size; world_size must be pipeline_group_size x data_group_size.
// With --config JOB.yaml the job spec (job_spec.h) gives the starting point and the sizes, and
// any other flag overrides the field it names. Unknown flags, unparsable values and inconsistent
// sizes are errors naming the flag and the reason (the first one found); the result passes
// StageAssignment::Validate(), and when it does not, every one of its problems is reported, named
// by the flag that sets the field where there is one ("2 problems:\n  --lr: -1 is negative ...").
//
// LibTorch-free (library geotrain_runtime_config). Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "runtime/stage_assignment.h"

namespace geotrain::runtime {

struct SeedRunConfig {
  std::string dist_url;  // tcp://host:port or file:///path; empty only when world_size is 1
  int world_size = 1;
  int rank = 0;
  StageAssignment assignment;  // this rank's
  std::string job_yaml;        // the --config file, empty when none
  std::string bind_address;    // --bind-address: the interface to listen on; empty: any
  // --n-epochs (0: not given); also in assignment.training.epochs unless --total-steps is given.
  int64_t n_epochs = 0;
  // --config-changes: a file of adaptive-compression changes (runtime/config_change.h), polled
  // before every step; empty: none.
  std::string config_changes_path;
};

// argv[0] is the program name, as in main().
StatusOr<SeedRunConfig> ParseSeedFlags(int argc, const char* const* argv);

// The flags and their descriptions, for geotrain-run --help.
std::string SeedFlagsHelp();

}  // namespace geotrain::runtime
