#include "worker/task_command.h"

#include <ATen/Parallel.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <iostream>

#include "common/io/path_confinement.h"
#include "runtime/job_paths.h"
#include "runtime/rank_runner.h"
#include "runtime/step_line.h"
#include "worker/assignment_file.h"
#include "worker/coordinator_channel.h"
#include "worker/coordinator_store.h"
#include "worker/task_assignment.h"

namespace geotrain::worker {
namespace {

constexpr int kExitFailed = 1;
constexpr int kExitBadAssignment = 2;

// The daemon reports the last error line of stderr; a message of several lines must stay whole.
std::string OneLine(std::string text) {
  for (size_t at; (at = text.find('\n')) != std::string::npos;) text.replace(at, 1, "; ");
  return text;
}

// The job's paths confined to --data-root and --allow-path and its outputs claimed
// (runtime/job_paths.h); the assignment then names canonical paths only.
Status ConfinePaths(const TaskCommandOptions& options, runtime::StageAssignment* stage) {
  std::error_code ec;
  const std::string root =
      options.data_root.empty() ? std::filesystem::current_path(ec).string() : options.data_root;
  GEOTRAIN_ASSIGN_OR_RETURN(io::PathConfinement confinement,
                            io::PathConfinement::Create(root, options.allowed_paths));
  GEOTRAIN_RETURN_IF_ERROR(runtime::ConfineJobPaths(confinement, stage));
  std::vector<std::string> notes;
  GEOTRAIN_RETURN_IF_ERROR(runtime::ClaimJobOutputs(stage, io::Env::Default(), &notes));
  for (const std::string& note : notes) spdlog::warn("{}", note);
  return OkStatus();
}

Status Train(const TaskCommandOptions& options, const geotrain::v1::Assignment& assignment,
             const runtime::StageAssignment& stage) {
  runtime::RankRunOptions run;
  run.assignment = stage;
  run.bind_address = options.bind_address;
  // Group names key the frame sealing (one subkey per group incarnation), so they name the job
  // and the generation: a later placement never reuses a predecessor's nonces.
  run.group_prefix =
      "geotrain/" + assignment.job_id() + "/g" + std::to_string(assignment.generation());
  run.frame_key = assignment.frame_key();
  // RunRank uses it only for weights from model_init_seed; inside the task directory it is kept
  // for inspection and cleaned up with the task.
  const std::filesystem::path task_dir =
      std::filesystem::path(options.assignment_path).parent_path();
  run.init_dir = (task_dir / "init").string();
  run.poll_changes = runtime::CodecChangePoller(options.config_changes_path.empty()
                                                    ? (task_dir / kConfigChangesFileName).string()
                                                    : options.config_changes_path);
  // A job of one rank joins no group and needs no rendezvous.
  if (stage.world_size() > 1) {
    const auto timeout =
        std::chrono::milliseconds(static_cast<int64_t>(stage.training.timeout_seconds * 1000));
    GEOTRAIN_ASSIGN_OR_RETURN(std::shared_ptr<grpc::ChannelCredentials> credentials,
                              auth::MakeChannelCredentials(options.credentials));
    run.store = c10::make_intrusive<CoordinatorStore>(
        CoordinatorChannel(options.coordinator, std::move(credentials)), assignment.rendezvous(),
        timeout, options.coordinator);
    spdlog::info("rank {}: joining the job's groups through the coordinator at {}",
                 stage.global_rank(), options.coordinator);
  }
  return runtime::RunRank(run, [&](const runtime::StepResult& result) {
    std::cout << runtime::StepLineText(runtime::StepLineOf(stage, result)) << std::endl;  // flushed
  });
}

}  // namespace

int RunTaskCommand(const TaskCommandOptions& options) {
  StatusOr<geotrain::v1::Assignment> assignment = ReadAssignmentFile(options.assignment_path);
  if (!assignment.ok()) {
    spdlog::error("{}", OneLine(assignment.status().message()));
    return kExitBadAssignment;
  }
  StatusOr<runtime::StageAssignment> stage = StageAssignmentOf(*assignment);
  if (!stage.ok()) {
    spdlog::error("{}", OneLine(stage.status().message()));
    return kExitBadAssignment;
  }
  // Before anything is read or written: a path outside the data root, or an output that would
  // replace a file the job did not create, is a bad job (exit 2, no retry can fix it).
  if (const Status confined = ConfinePaths(options, &*stage); !confined.ok()) {
    spdlog::error("job {}: {}", assignment->job_id(), OneLine(confined.message()));
    return kExitBadAssignment;
  }
  if (options.threads > 0) at::set_num_threads(options.threads);
  spdlog::info("task of job {} generation {}: stage {} of {}, replica {} of {}{}",
               assignment->job_id(), assignment->generation(), stage->stage, stage->num_stages,
               stage->dp_rank, stage->dp_size, stage->training.resume ? " (resuming)" : "");
  try {
    const Status status = Train(options, *assignment, *stage);
    if (!status.ok()) {
      spdlog::error("{}", OneLine(status.ToString()));
      return kExitFailed;
    }
  } catch (const std::exception& e) {
    // RunRank reports its errors as values; an exception here escaped the store or LibTorch.
    spdlog::error("rank {}: {}", stage->global_rank(), OneLine(e.what()));
    return kExitFailed;
  }
  spdlog::info("rank {}: trained to the end", stage->global_rank());
  return 0;
}

}  // namespace geotrain::worker
