#include "cli/control_job_state.h"

namespace geotrain::cli {

std::string JobStateName(v1::JobState state) {
  switch (state) {
    case v1::JOB_STATE_QUEUED:
      return "queued";
    case v1::JOB_STATE_PLACING:
      return "placing";
    case v1::JOB_STATE_RUNNING:
      return "running";
    case v1::JOB_STATE_RECOVERING:
      return "recovering";
    case v1::JOB_STATE_SUCCEEDED:
      return "succeeded";
    case v1::JOB_STATE_FAILED:
      return "failed";
    case v1::JOB_STATE_CANCELLED:
      return "cancelled";
    case v1::JOB_STATE_UNSPECIFIED:
      return "unspecified";
    default:
      return "unknown(" + std::to_string(static_cast<int>(state)) + ")";
  }
}

std::string WorkerStateName(v1::WorkerState state) {
  switch (state) {
    case v1::WORKER_STATE_IDLE:
      return "idle";
    case v1::WORKER_STATE_BUSY:
      return "busy";
    case v1::WORKER_STATE_DISCONNECTED:
      return "disconnected";
    case v1::WORKER_STATE_DEAD:
      return "dead";
    case v1::WORKER_STATE_UNSPECIFIED:
      return "unspecified";
    default:
      return "unknown(" + std::to_string(static_cast<int>(state)) + ")";
  }
}

bool IsFinishedJobState(v1::JobState state) {
  return state == v1::JOB_STATE_SUCCEEDED || state == v1::JOB_STATE_FAILED ||
         state == v1::JOB_STATE_CANCELLED;
}

}  // namespace geotrain::cli
