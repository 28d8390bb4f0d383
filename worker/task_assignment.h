// StageAssignmentOf: what the runtime trains for an Assignment: the job YAML parsed
// (runtime::ParseJobSpec; model.device and model.autocast come with it), the rank (stage,
// replica) taken from it, resume forced on when the coordinator says this placement continues
// an earlier one, and every rank's region from the placements (rank_regions: whether a stage's
// replicas may all-reduce over NCCL, runtime/dp_backend.h).
//
// The task child's only use of the protobuf: the runtime itself never sees it. Errors here are
// the child's exit code 2 (a retry cannot fix them). Free function; thread-safe.
#pragma once

#include "common/status.h"
#include "geotrain/v1/job.pb.h"
#include "runtime/stage_assignment.h"

namespace geotrain::worker {

// Errors name the field: "assignment.spec_yaml: training.steps: ...", "assignment.stage: 2 is
// not below pipeline.stages (2)".
StatusOr<runtime::StageAssignment> StageAssignmentOf(const geotrain::v1::Assignment& assignment);

}  // namespace geotrain::worker
