#include "worker/task_assignment.h"

#include "runtime/job_spec.h"

namespace geotrain::worker {

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
  return stage;
}

}  // namespace geotrain::worker
