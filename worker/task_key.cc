#include "worker/task_key.h"

namespace geotrain::worker {

TaskKey TaskKey::Of(const geotrain::v1::Assignment& assignment) {
  return {assignment.job_id(), assignment.generation(), assignment.stage(), assignment.replica()};
}

TaskKey TaskKey::Of(const geotrain::v1::TaskStatus& status) {
  return {status.job_id(), status.generation(), status.stage(), status.replica()};
}

TaskKey TaskKey::Of(const geotrain::v1::StepReport& report) {
  return {report.job_id(), report.generation(), report.stage(), report.replica()};
}

std::string TaskKey::DirName() const {
  return job_id + "-g" + std::to_string(generation) + "-s" + std::to_string(stage) + "-r" +
         std::to_string(replica);
}

std::string TaskKey::Describe() const {
  return job_id + " generation " + std::to_string(generation) + " stage " + std::to_string(stage) +
         " replica " + std::to_string(replica);
}

geotrain::v1::TaskStatus TaskKey::Status(geotrain::v1::TaskState state) const {
  geotrain::v1::TaskStatus status;
  status.set_job_id(job_id);
  status.set_generation(generation);
  status.set_stage(stage);
  status.set_replica(replica);
  status.set_state(state);
  return status;
}

}  // namespace geotrain::worker
