#include "runtime/stage_runtime.h"

#include <spdlog/spdlog.h>

#include <limits>
#include <utility>

#include "runtime/codec_change_queue.h"
#include "runtime/gradient_sync.h"
#include "runtime/lr_schedule.h"
#include "runtime/pipeline_executor.h"
#include "runtime/scoped_phase.h"
#include "runtime/stage_builder.h"
#include "runtime/stage_checkpointer.h"
#include "runtime/step_ledger.h"

namespace geotrain::runtime {

StatusOr<std::unique_ptr<StageRuntime>> StageRuntime::Create(const StageAssignment& assignment,
                                                             StageLinks links) {
  GEOTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<StageParts> parts,
                            BuildStageParts(assignment, std::move(links)));
  return std::unique_ptr<StageRuntime>(new StageRuntime(std::move(parts)));
}

StageRuntime::StageRuntime(std::unique_ptr<StageParts> parts) : parts_(std::move(parts)) {
  StageParts& p = *parts_;
  ledger_ = std::make_unique<StepLedger>(p);
  pipeline_ = std::make_unique<PipelineExecutor>(p);
  gradient_sync_ = std::make_unique<GradientSync>(p, ledger_.get());
  codec_changes_ = std::make_unique<CodecChangeQueue>(p.assignment, p.ends.to_next.get(),
                                                      p.ends.to_prev.get(), p.data_parallel.get());
  if (p.checkpoints) checkpointer_ = std::make_unique<StageCheckpointer>(p);
}

StageRuntime::~StageRuntime() = default;

StatusOr<StepResult> StageRuntime::Step() {
  GEOTRAIN_ASSIGN_OR_RETURN(StepResult result, TrainStep());
  EndReport(&result);
  return result;
}

StatusOr<StepResult> StageRuntime::TrainStep() {
  codec_changes_->ApplyDue(step_ + 1);  // numbered as its StepResult will be
  StepResult result;
  {
    const ScopedPhase step(&result.step_seconds);
    GEOTRAIN_RETURN_IF_ERROR(RunSchedule(&result));           // forward, backward
    GEOTRAIN_RETURN_IF_ERROR(SynchronizeGradients(&result));  // sync, clip
    GEOTRAIN_RETURN_IF_ERROR(ApplyOptimizer(&result));        // update
  }
  return result;
}

Status StageRuntime::RunSchedule(StepResult* result) {
  const TrainingSettings& training = parts_->assignment.training;
  const bool compress = parts_->CompressionActive(step_);
  result->step = step_ + 1;
  result->compressed = compress;
  result->tokens =
      training.micro_batches * training.micro_batch_size * parts_->assignment.data.seq_length;
  ledger_->BeginSchedule();
  double seconds = 0;
  {
    const ScopedPhase schedule(&seconds);
    GEOTRAIN_ASSIGN_OR_RETURN(result->loss,
                              pipeline_->RunSchedule(step_, compress, &result->phases));
  }
  ledger_->EndSchedule(seconds, result);
  return OkStatus();
}

Status StageRuntime::SynchronizeGradients(StepResult* result) {
  const ScopedPhase sync(TraceSpan{parts_->trace.get(), "sync gradients", "sync"},
                         &result->phases.sync, &result->comm_seconds);
  GEOTRAIN_ASSIGN_OR_RETURN(result->grad_norm,
                            gradient_sync_->Synchronize(step_, parts_->CompressionActive(step_)));
  gradient_sync_->Clip(result->grad_norm);
  return OkStatus();
}

Status StageRuntime::ApplyOptimizer(StepResult* result) {
  const bool compress = parts_->CompressionActive(step_);
  const TrainingSettings& training = parts_->assignment.training;
  result->lr = LearningRate(parts_->assignment.optimizer, step_, training.total_steps);
  StepPhases& phases = result->phases;
  AdamW& adam = *parts_->optimizer;
  DataParallelSync& data_parallel = *parts_->data_parallel;
  TraceWriter* trace = parts_->trace.get();
  {
    const ScopedPhase moments(&phases.optimizer, &result->compute_seconds);
    adam.UpdateMoments();
  }
  {
    const ScopedPhase sync(&phases.sync, &result->comm_seconds);
    GEOTRAIN_RETURN_IF_ERROR(data_parallel.AfterMoments(step_, compress)
                                 .WithContext(parts_->DataParallelErrorContext()));
  }
  {
    const ScopedPhase update(TraceSpan{trace, "optimizer", "compute"}, &phases.optimizer,
                             &result->compute_seconds);
    adam.ApplyUpdate(result->lr);
  }
  {
    const ScopedPhase sync(TraceSpan{trace, "sync parameters", "sync"}, &phases.sync,
                           &result->comm_seconds);
    GEOTRAIN_RETURN_IF_ERROR(
        data_parallel.AfterUpdate(step_, compress).WithContext(parts_->DataParallelErrorContext()));
  }
  {
    const ScopedPhase zeroing(&phases.optimizer);
    for (const models::NamedParameter& p : parts_->parameters) {
      if (p.tensor.grad().defined()) p.tensor.mutable_grad().zero_();
    }
  }
  ledger_->EndStep(result);
  ++step_;
  return OkStatus();
}

void StageRuntime::EndReport(StepResult* result) {
  ledger_->EndReport(codec_changes_->data_parallel_settings(), result);
}

Status StageRuntime::FlushDataParallel() {
  return parts_->data_parallel->Flush().WithContext(parts_->DataParallelErrorContext());
}

StatusOr<double> StageRuntime::Evaluate() {
  if (!parts_->data->has_validation()) {
    return FailedPrecondition("evaluate: data.valid has no sources");
  }
  GEOTRAIN_RETURN_IF_ERROR(FlushDataParallel());
  GEOTRAIN_ASSIGN_OR_RETURN(PipelineExecutor::Evaluation evaluation, pipeline_->Evaluate(step_));
  if (!parts_->assignment.is_last_stage()) return std::numeric_limits<double>::quiet_NaN();
  GEOTRAIN_ASSIGN_OR_RETURN(double mean,
                            AverageOverReplicas(evaluation.loss_sum, &evaluation.confusion));
  if (evaluation.confusion) last_eval_metrics_ = evaluation.confusion->Metrics();
  return mean;
}

StatusOr<double> StageRuntime::AverageOverReplicas(double loss_sum,
                                                   std::optional<ConfusionCounts>* confusion) {
  // The replicas evaluated disjoint shares: their last stages agree on the mean (the exchange
  // the data-parallel sync may run in the background was flushed before the evaluation).
  const StageAssignment& assignment = parts_->assignment;
  float mean = static_cast<float>(loss_sum / static_cast<double>(assignment.training.eval_batches));
  net::Transport* replicas = parts_->links.data_parallel.get();
  if (replicas == nullptr) return static_cast<double>(mean);
  GEOTRAIN_RETURN_IF_ERROR(replicas->AllReduceSum(Span<float>(&mean, 1), parts_->timeout())
                               .WithContext("averaging the evaluation loss over the replicas"));
  mean /= static_cast<float>(assignment.dp_size);
  if (*confusion) {
    std::vector<float>& counts = (*confusion)->counts();
    GEOTRAIN_RETURN_IF_ERROR(
        replicas->AllReduceSum(Span<float>(counts.data(), counts.size()), parts_->timeout())
            .WithContext("summing the evaluation's predictions over the replicas"));
  }
  return static_cast<double>(mean);
}

Status StageRuntime::Checkpoint() {
  if (!checkpointer_) return FailedPrecondition("checkpoint: training.checkpoint_dir is empty");
  GEOTRAIN_RETURN_IF_ERROR(FlushDataParallel());
  return checkpointer_->Write(step_);
}

StatusOr<int64_t> StageRuntime::Resume() {
  if (!checkpointer_ || !parts_->assignment.training.resume) return int64_t{0};
  GEOTRAIN_ASSIGN_OR_RETURN(std::optional<int64_t> restored, checkpointer_->RestoreNewest());
  if (!restored) return int64_t{0};
  step_ = *restored;
  return step_;
}

void StageRuntime::ScheduleCodecChange(const CodecChange& change) {
  codec_changes_->Schedule(change);
}

Status StageRuntime::Run(const std::function<void(const StepResult&)>& on_step,
                         const std::function<void()>& before_step) {
  const TrainingSettings& training = parts_->assignment.training;
  while (step_ < training.total_steps) {
    if (before_step) before_step();
    GEOTRAIN_ASSIGN_OR_RETURN(StepResult result, TrainStep());
    if (training.eval_every > 0 && step_ % training.eval_every == 0 &&
        parts_->data->has_validation()) {
      double eval_loss = 0;
      {
        const ScopedPhase evaluating(&result.phases.eval);
        GEOTRAIN_ASSIGN_OR_RETURN(eval_loss, Evaluate());
      }
      if (parts_->assignment.is_last_stage()) {
        result.eval_loss = eval_loss;
        result.eval_metrics = last_eval_metrics_;
      }
    }
    const bool last = step_ == training.total_steps;
    if (checkpointer_ && training.checkpoint_every > 0 &&
        (step_ % training.checkpoint_every == 0 || last)) {
      Status written;
      {
        const ScopedPhase checkpointing(&result.phases.checkpoint);
        // A transport error of the flush is the job's failure, not the storage's.
        GEOTRAIN_RETURN_IF_ERROR(FlushDataParallel());
        written = checkpointer_->Write(step_);
      }
      const bool storage_failed = written.code() == StatusCode::kResourceExhausted ||
                                  written.code() == StatusCode::kUnavailable;
      if (written.ok()) {
        result.checkpointed = true;
      } else if (last || !storage_failed) {
        return written;
      } else {
        result.checkpoint_error = written.message();
        spdlog::warn(
            "checkpoint of step {} not written: {}; training goes on, a restart resumes "
            "from the newest complete checkpoint, the next one is due at step {}",
            step_, written.message(), step_ + training.checkpoint_every);
      }
    }
    result.total_steps = training.total_steps;
    EndReport(&result);
    if (on_step) on_step(result);
  }
  GEOTRAIN_RETURN_IF_ERROR(FlushDataParallel());
  return parts_->trace->Flush();
}

}  // namespace geotrain::runtime
