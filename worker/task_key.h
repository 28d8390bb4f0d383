// TaskKey: which task an Assignment, a TaskStatus or a child's output belongs to: one rank
// (stage, replica) of one placement (generation) of a job. A worker runs each key at most once.
#pragma once

#include <cstdint>
#include <string>
#include <tuple>

#include "geotrain/v1/job.pb.h"

namespace geotrain::worker {

struct TaskKey {
  std::string job_id;
  uint32_t generation = 0;
  int32_t stage = 0;
  int32_t replica = 0;

  static TaskKey Of(const geotrain::v1::Assignment& assignment);
  static TaskKey Of(const geotrain::v1::TaskStatus& status);
  static TaskKey Of(const geotrain::v1::StepReport& report);

  // "<job>-g<generation>-s<stage>-r<replica>": the task's directory under WORK_DIR/tasks.
  std::string DirName() const;
  // "job-1 generation 2 stage 0 replica 1", for logs.
  std::string Describe() const;
  // A TaskStatus of this task with nothing else set.
  geotrain::v1::TaskStatus Status(geotrain::v1::TaskState state) const;

  bool operator<(const TaskKey& other) const {
    return std::tie(job_id, generation, stage, replica) <
           std::tie(other.job_id, other.generation, other.stage, other.replica);
  }
  bool operator==(const TaskKey& other) const {
    return std::tie(job_id, generation, stage, replica) ==
           std::tie(other.job_id, other.generation, other.stage, other.replica);
  }
};

}  // namespace geotrain::worker
