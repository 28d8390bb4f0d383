// StageRuntime: the training loop of one rank, stage s of replica r.
//
// One step (TrainStep; runtime/README.md draws it) reads like the algorithm:
//   RunSchedule           forward and backward of the step's micro-batches by the pipeline
//                         schedule (GPipe or 1F1B): PipelineExecutor (pipeline_executor.h)
//   SynchronizeGradients  tied embeddings, pipeline-shared tensors, the data-parallel sync's
//                         BeforeClip, the global norm over the pipeline; then clipping:
//                         GradientSync (gradient_sync.h)
//   ApplyOptimizer        AdamW's moments, the data-parallel AfterMoments, the update with the
//                         scheduled learning rate, AfterUpdate; gradients are zeroed
// Every stage decides the same things from the step number alone (warm-up, learning rate), so
// they need no extra messages to agree.
//
// The parts, each in its own file: BuildStageParts (stage_builder.h) makes what the rank trains
// with (StageParts, owned here); CodecChangeQueue (codec_change_queue.h) applies adaptive
// compression's scheduled changes before the step they are due at; StageCheckpointer
// (stage_checkpointer.h) writes and restores this rank's part of a checkpoint; StepLedger
// (step_ledger.h) is the one accounting of the step's bytes; ScopedPhase (scoped_phase.h) is the
// one timer of the step's phases.
//
// Device (model.device, runtime/README.md "Devices"): the stage's parameters, gradients and
// AdamW state live on the CPU or one CUDA device; batches, labels and masks are moved there,
// received activations and gradients arrive there (tensor_link.h stages them through pinned
// buffers), and what crosses a link or a collective goes through host memory, except the
// gradient all-reduce of replicas in one region, which NCCL runs on the device (dp_backend.h).
// With model.autocast bf16, each micro-batch's forward and loss run under CUDA autocast
// (autocast_scope.h) while the parameters stay float32.
//
// Not thread-safe: one thread drives a StageRuntime (the links' send threads are internal); on
// a CUDA device it must be the thread that made it (autocast and the current stream are
// per thread).
#pragma once

#include <ATen/ATen.h>

#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "common/status.h"
#include "runtime/classification_metrics.h"
#include "runtime/config_change.h"
#include "runtime/stage_assignment.h"
#include "runtime/stage_links.h"
#include "runtime/stage_parts.h"
#include "runtime/step_result.h"
#include "runtime/step_traffic.h"

namespace geotrain::runtime {

class CodecChangeQueue;
class GradientSync;
class PipelineExecutor;
class StageCheckpointer;
class StepLedger;

class StageRuntime {
 public:
  // Loads the stage, opens the data, builds codecs and the data-parallel sync (BuildStageParts,
  // stage_builder.h). `links` must hold the transports stage_links.h describes for `assignment`.
  static StatusOr<std::unique_ptr<StageRuntime>> Create(const StageAssignment& assignment,
                                                        StageLinks links);
  ~StageRuntime();

  // Restores the newest complete checkpoint when training.resume is set and one exists; returns
  // its step, or 0 when starting fresh.
  StatusOr<int64_t> Resume();

  // Runs steps until training.total_steps, evaluating and checkpointing at their cadence (and a
  // final checkpoint when checkpoints are on). A periodic checkpoint the storage refuses (full
  // disk: ResourceExhausted; an I/O error: Unavailable) does not end the run: the step reports
  // it in checkpoint_error, the older complete checkpoints stay, and the next one is tried at
  // its cadence. Losing hours of training to a full disk is worse than a longer replay after a
  // later crash. The final checkpoint is the job's result, so its failure ends the run. `on_step`
  // sees every step's result; `before_step`, when set, runs before each step starts (where changes
  // get scheduled).
  Status Run(const std::function<void(const StepResult&)>& on_step,
             const std::function<void()>& before_step = nullptr);

  // Queues `change` for the first step numbered >= change.effective_step (StepResult::step
  // numbering), or the next step when that one has passed. Changes of one step apply in
  // effective_step order, then in the order they were scheduled.
  void ScheduleCodecChange(const CodecChange& change);

  // One training step (the three parts above), its traffic measured up to its end.
  StatusOr<StepResult> Step();
  // The mean loss over training.eval_batches validation micro-batches of every replica (last
  // stage; NaN on others). Every rank of the job must call it at the same point. A classifier's
  // last stage also scores the predictions of every replica: last_eval_metrics().
  StatusOr<double> Evaluate();
  const std::optional<ClassificationMetrics>& last_eval_metrics() const {
    return last_eval_metrics_;
  }
  // Writes this rank's part of the checkpoint of the current step.
  Status Checkpoint();

  int64_t step() const { return step_; }
  const models::Stage& stage() const { return *parts_->stage; }
  at::Device device() const { return parts_->device; }
  // Every trainable tensor of the rank: the stage's, then any autoencoder halves.
  const std::vector<models::NamedParameter>& parameters() const { return parts_->parameters; }

  // The parts of Step(), for tests that look at gradients between them.
  Status RunSchedule(StepResult* result);
  Status SynchronizeGradients(StepResult* result);
  Status ApplyOptimizer(StepResult* result);

 private:
  explicit StageRuntime(std::unique_ptr<StageParts> parts);

  // Step() without the report's traffic, which Run() measures after the evaluation and
  // checkpoint.
  StatusOr<StepResult> TrainStep();
  // Closes the report period of `result`: its traffic since the previous report.
  void EndReport(StepResult* result);
  // Waits for and applies the data-parallel exchange in flight (before an evaluation, a
  // checkpoint or the end).
  Status FlushDataParallel();
  // The replicas' mean of the evaluation loss `loss_sum` and the sum of their `confusion`.
  StatusOr<double> AverageOverReplicas(double loss_sum, std::optional<ConfusionCounts>* confusion);

  std::unique_ptr<StageParts> parts_;  // first: the parts below borrow from it
  std::unique_ptr<StepLedger> ledger_;
  std::unique_ptr<PipelineExecutor> pipeline_;
  std::unique_ptr<GradientSync> gradient_sync_;
  std::unique_ptr<CodecChangeQueue> codec_changes_;
  std::unique_ptr<StageCheckpointer> checkpointer_;  // null without training.checkpoint_dir
  int64_t step_ = 0;
  std::optional<ClassificationMetrics> last_eval_metrics_;
};

}  // namespace geotrain::runtime
