// JobSpec: a training job as written in its YAML file (docs/job-spec.md), and the
// StageAssignment of each of its ranks.
//
// The YAML is the user-facing form of StageAssignment: sections model, data, pipeline,
// data_parallel, compression, optimizer and training, every field of StageAssignment's nested
// structs reachable, every key optional (its default is StageAssignment's). Parsing is strict:
// an unknown or duplicated key, a value of the wrong type, a number out of range or an unknown
// enum name is a problem naming the full key path and the line ("compression.forward.bitz
// (line 14): unknown key"); so is every failure of StageAssignment::Problems() and of the
// job-level checks ("pipeline.micro_batches: 0 is not positive (line 9)"). ParseJobSpec reports
// them all at once, in one InvalidArgument: the problem itself when there is one, else
// "N problems:" and one indented problem per line. A value that failed to parse is not checked
// further, so each mistake appears once. JobSpecToYaml writes every key, so
// ParseJobSpec(JobSpecToYaml(spec)) gives `spec` back.
//
// LibTorch-free (library geotrain_runtime_config): the coordinator parses job files too.
// Plain functions over values; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "runtime/stage_assignment.h"

namespace geotrain::runtime {

struct JobSpec {
  std::string name;    // required; names the job in logs, metrics and the coordinator
  int num_stages = 1;  // pipeline.stages
  int dp_size = 1;     // data_parallel.replicas
  // model.layers: layers [first, last) of each stage, contiguous from 0; empty: an even split.
  std::vector<std::pair<int64_t, int64_t>> stage_layers;
  // Everything else; stage 0, dp_rank 0, num_stages and dp_size as above, stage 0's layers.
  StageAssignment base;
  // training.max_restarts: how many times the coordinator re-places the job after a failure
  // before giving up; 0: never.
  int max_restarts = 3;
};

StatusOr<JobSpec> ParseJobSpec(const std::string& yaml_text);
// Reads `path` (at most 1 MiB) and parses it; errors are prefixed with `path`.
StatusOr<JobSpec> LoadJobSpecFile(const std::string& path);

// Every key, in the order of docs/job-spec.md.
std::string JobSpecToYaml(const JobSpec& spec);

// The assignment of rank (stage, dp_rank): `base` with those set, and the stage's layers when
// model.layers gives them. Preconditions: 0 <= stage < num_stages, 0 <= dp_rank < dp_size.
StageAssignment AssignmentFor(const JobSpec& spec, int stage, int dp_rank);

}  // namespace geotrain::runtime
