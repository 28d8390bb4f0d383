// Names of job and worker states as the CLI prints them, and which job states are final.
#pragma once

#include <string>

#include "geotrain/v1/job.pb.h"
#include "geotrain/v1/worker.pb.h"

namespace geotrain::cli {

// "running" for JOB_STATE_RUNNING; "unknown(9)" for a value this build does not know.
std::string JobStateName(v1::JobState state);
// "idle" for WORKER_STATE_IDLE.
std::string WorkerStateName(v1::WorkerState state);
// Succeeded, failed or cancelled: the job will not change again.
bool IsFinishedJobState(v1::JobState state);

}  // namespace geotrain::cli
