// The paths of a job on the machine that runs it: where they may point (ConfineJobPaths) and
// what the job may write there (ClaimJobOutputs). The worker's task child calls both before it
// reads or writes anything (worker/task_command.cc); geotrain-run only with --data-root
// (runtime/runner). docs/job-spec.md, "Paths", says what a job author sees; docs/security.md
// why.
//
// ConfineJobPaths resolves every path field of a StageAssignment through one
// io::PathConfinement (relative: under the data root; absolute: must lie inside it or an
// allowed path; symlinks followed) and replaces it with the canonical result, so the runtime
// opens exactly what was checked. The fields, named as in the job YAML: model.dir,
// data.train[i], data.valid[i], data.tokenizer, data.cache_dir, compression.forward.cache_dir,
// compression.backward.cache_dir, data_parallel.codec.cache_dir, training.checkpoint_dir,
// training.profile. Every refusal is reported, in one InvalidArgument (ProblemListStatus).
//
// ClaimJobOutputs keeps the job from replacing files it did not create:
//   training.checkpoint_dir  missing (the store creates it), or a directory holding nothing but
//                            the store's own step-* entries, so a job resuming from its own
//                            checkpoints after a restart works and a directory of someone
//                            else's files is refused. (Which job a checkpoint belongs to is
//                            issue 23's.)
//   cache_dir fields         missing, or a directory (the caches write only files of their own
//                            names there: "<file>.<hash>.tokens", unlinked mkstemp files).
//   training.profile         the trace goes to a file the job creates (O_EXCL): the path itself
//                            when free, else the first free of PATH.1 .. PATH.99 (a restarted
//                            rank, or another rank on the same data root, keeps its earlier
//                            trace; a file that was there is never replaced). The chosen path
//                            replaces profile_path and is named in `notes`.
// File operations go through `env`. Neither function is thread-safe for one assignment.
#pragma once

#include <string>
#include <vector>

#include "common/io/env.h"
#include "common/io/path_confinement.h"
#include "common/status.h"
#include "runtime/stage_assignment.h"

namespace geotrain::runtime {

// Errors: "training.checkpoint_dir: /etc resolves to /etc, outside the data root ...".
Status ConfineJobPaths(const io::PathConfinement& confinement, StageAssignment* assignment);

// Errors name the field: "training.checkpoint_dir: /srv/d holds README.md, which is not a
// geotrain checkpoint; ...". `notes` (may be null) gets one line per decision worth logging.
Status ClaimJobOutputs(StageAssignment* assignment, io::Env* env = io::Env::Default(),
                       std::vector<std::string>* notes = nullptr);

}  // namespace geotrain::runtime
