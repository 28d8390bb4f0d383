// The checks of a job that read without problems: the job-level limits (name, stages x replicas,
// model.layers, training.max_restarts) and StageAssignment::Problems() of its first rank, every
// problem named by its YAML key path ("pipeline.micro_batches", not StageAssignment's
// "training.micro_batches"), so the user sees the key they wrote.
//
// LibTorch-free (library geotrain_runtime_config). Plain functions; thread-safe.
#pragma once

#include <vector>

#include "runtime/job_spec.h"
#include "runtime/stage_assignment.h"

namespace geotrain::runtime {

// Every problem of `spec`, in a fixed order: the job-level ones first. ParseJobSpec drops those
// that touch a value which failed to read, and those of a field already reported.
std::vector<FieldProblem> JobProblems(const JobSpec& spec);

}  // namespace geotrain::runtime
