#include "worker/task_assignment.h"

#include "runtime/job_spec.h"

namespace geotrain::worker {
namespace {

// Each rank's region by global rank, from the placements the coordinator sent along; "" where
// none names the rank (or names it out of range), which keeps its stage's replicas on Gloo
// (runtime/dp_backend.h). Empty when the assignment carries no placements.
std::vector<std::string> RankRegionsOf(const geotrain::v1::Assignment& assignment,
                                       const runtime::JobSpec& spec) {
  if (assignment.placements().empty()) return {};
  std::vector<std::string> regions(static_cast<size_t>(spec.num_stages) * spec.dp_size);
  for (const geotrain::v1::Placement& placement : assignment.placements()) {
    if (placement.stage() < 0 || placement.stage() >= spec.num_stages || placement.replica() < 0 ||
        placement.replica() >= spec.dp_size) {
      continue;
    }
    regions[static_cast<size_t>(placement.replica()) * spec.num_stages + placement.stage()] =
        placement.region();
  }
  return regions;
}

}  // namespace

StatusOr<runtime::StageAssignment> StageAssignmentOf(const geotrain::v1::Assignment& assignment) {
  StatusOr<runtime::JobSpec> spec = runtime::ParseJobSpec(assignment.spec_yaml());
  if (!spec.ok()) return spec.status().WithContext("assignment.spec_yaml");
  if (assignment.stage() < 0 || assignment.stage() >= spec->num_stages) {
    return InvalidArgument("assignment.stage: " + std::to_string(assignment.stage()) +
                           " is outside the job's pipeline.stages (" +
                           std::to_string(spec->num_stages) + ")");
  }
  if (assignment.replica() < 0 || assignment.replica() >= spec->dp_size) {
    return InvalidArgument("assignment.replica: " + std::to_string(assignment.replica()) +
                           " is outside the job's data_parallel.replicas (" +
                           std::to_string(spec->dp_size) + ")");
  }
  runtime::StageAssignment stage =
      runtime::AssignmentFor(*spec, assignment.stage(), assignment.replica());
  // A later placement must continue from the checkpoint even if the YAML turned resume off.
  stage.training.resume = stage.training.resume || assignment.resume();
  stage.rank_regions = RankRegionsOf(assignment, *spec);
  return stage;
}

}  // namespace geotrain::worker
