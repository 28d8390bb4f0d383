#include "runtime/pipeline_executor.h"

#include <limits>
#include <string>
#include <utility>

#include "runtime/autocast_scope.h"
#include "runtime/autoencoder.h"
#include "runtime/scoped_phase.h"

namespace geotrain::runtime {

// How one forward differs between training and evaluation (the table in the header).
struct PipelineExecutor::Pass {
  MessageKind kind;
  uint64_t step;
  bool training;
  bool compress;
  // Training: where the data and forward seconds go, and the trace the spans go to; null in
  // evaluation.
  StepPhases* phases;
  TraceWriter* trace;
};

PipelineExecutor::MicroBatch PipelineExecutor::FromBatch(models::data::Batch batch) const {
  MicroBatch mb;
  mb.tokens = TrainingData::BatchTokens(batch, parts_.assignment.data.seq_length).to(parts_.device);
  mb.sample_ids = std::move(batch.sample_ids);
  return mb;
}

StatusOr<double> PipelineExecutor::RunSchedule(int64_t step, bool compress, StepPhases* phases) {
  const StageAssignment& assignment = parts_.assignment;
  std::vector<MicroBatch> batches(static_cast<size_t>(assignment.training.micro_batches));
  if (assignment.is_first_stage()) {
    const ScopedPhase reading(&phases->data);
    for (MicroBatch& mb : batches) {
      GEOTRAIN_ASSIGN_OR_RETURN(models::data::Batch batch, parts_.data->NextTrain());
      mb = FromBatch(std::move(batch));
    }
  }
  const Pass pass{
      MessageKind::kActivation, static_cast<uint64_t>(step), /*training=*/true, compress, phases,
      parts_.trace.get()};
  // The last stage's scaled micro-batch losses, read once the schedule has run: reading each
  // at its forward would make the host wait for the GPU there.
  std::vector<at::Tensor> losses;
  for (const PipelineOp& op : parts_.schedule) {
    MicroBatch& mb = batches[op.micro_batch];
    if (op.kind == PipelineOp::Kind::kForward) {
      GEOTRAIN_RETURN_IF_ERROR(Forward(pass, static_cast<uint32_t>(op.micro_batch), mb));
      if (assignment.is_last_stage()) losses.push_back(mb.output.detach());
    } else {
      GEOTRAIN_RETURN_IF_ERROR(Backward(pass, op, mb));
    }
  }
  GEOTRAIN_RETURN_IF_ERROR(FlushSends());
  if (!assignment.is_last_stage()) return std::numeric_limits<double>::quiet_NaN();
  double loss_sum = 0;
  for (const at::Tensor& loss : losses) loss_sum += loss.item<double>();
  return loss_sum;
}

StatusOr<PipelineExecutor::Evaluation> PipelineExecutor::Evaluate(int64_t step) {
  const StageAssignment& assignment = parts_.assignment;
  at::NoGradGuard no_grad;
  const ScopedPhase span(TraceSpan{parts_.trace.get(), "evaluate", "compute"}, nullptr);
  std::unique_ptr<models::data::BatchIterator> batches;
  if (assignment.is_first_stage()) {
    GEOTRAIN_ASSIGN_OR_RETURN(batches, parts_.data->ValidationBatches());
  }
  Evaluation evaluation;
  if (assignment.is_last_stage() && parts_.data->classification()) {
    evaluation.confusion.emplace(parts_.stage->config().num_labels);
  }
  const Pass pass{MessageKind::kEvalActivation,
                  static_cast<uint64_t>(step),
                  /*training=*/false,
                  /*compress=*/false,
                  nullptr,
                  nullptr};
  for (int64_t i = 0; i < assignment.training.eval_batches; ++i) {
    MicroBatch mb;
    if (assignment.is_first_stage()) {
      GEOTRAIN_ASSIGN_OR_RETURN(models::data::Batch batch, batches->Next());
      mb = FromBatch(std::move(batch));
    }
    GEOTRAIN_RETURN_IF_ERROR(Forward(pass, static_cast<uint32_t>(i), mb));
    if (!assignment.is_last_stage()) continue;
    evaluation.loss_sum += mb.output.item<double>();
    if (evaluation.confusion) {
      const at::Tensor predicted = mb.logits.argmax(-1).to(at::kCPU);
      for (int64_t row = 0; row < mb.labels.size(0); ++row) {
        evaluation.confusion->Add(mb.labels[row].item<int64_t>(), predicted[row].item<int64_t>());
      }
    }
  }
  if (parts_.ends.to_next) GEOTRAIN_RETURN_IF_ERROR(parts_.ends.to_next->Flush());
  return evaluation;
}

Status PipelineExecutor::Forward(const Pass& pass, uint32_t index, MicroBatch& mb) {
  const StageAssignment& assignment = parts_.assignment;
  at::Tensor received;  // receiving and decoding count in the link's totals, not here
  if (!assignment.is_first_stage()) {
    MicroBatchHeader header;
    GEOTRAIN_ASSIGN_OR_RETURN(received,
                              parts_.ends.from_prev->Recv(pass.kind, pass.step, index, &header));
    mb.sample_ids = std::move(header.sample_ids);
  }
  {
    const ScopedPhase span(TraceSpan{pass.trace, "forward", "compute", {{"micro_batch", index}}},
                           nullptr);
    models::SequenceContext context;
    at::Tensor labels;  // on the device
    {
      const ScopedPhase reading(pass.phases ? &pass.phases->data : nullptr);
      GEOTRAIN_ASSIGN_OR_RETURN(context, parts_.data->Context(mb.sample_ids, !pass.training));
      context = OnDevice(std::move(context));
      if (assignment.is_last_stage()) {
        GEOTRAIN_ASSIGN_OR_RETURN(mb.labels, parts_.data->Labels(mb.sample_ids, !pass.training));
        labels = mb.labels.to(parts_.device);
      }
    }
    const ScopedPhase computing(pass.phases ? &pass.phases->forward : nullptr);
    // The forward's ops (and the loss) under autocast; the backward runs outside it.
    const CudaAutocastScope autocast(parts_.autocast);
    const models::Stage& stage = *parts_.stage;
    at::Tensor input;
    if (assignment.is_first_stage()) {
      input = mb.tokens;
    } else {
      mb.received_dtype = received.scalar_type();
      mb.input = received.to(stage.dtype());
      if (pass.training) mb.input.requires_grad_(true);
      // Under autocast the decoder's matmul gives bfloat16; the stage takes its own dtype.
      input = parts_.decoder ? ApplyLinear(mb.input, parts_.decoder->tensor).to(stage.dtype())
                             : mb.input;
    }
    GEOTRAIN_ASSIGN_OR_RETURN(at::Tensor output, stage.Forward(input, context));
    if (assignment.is_last_stage()) {
      GEOTRAIN_ASSIGN_OR_RETURN(at::Tensor loss, stage.Loss(output, labels));
      if (pass.training) {
        mb.output = loss / static_cast<double>(assignment.training.micro_batches);
      } else {
        mb.output = loss;
        mb.logits = output;
      }
    } else {
      mb.output = parts_.encoder ? ApplyLinear(output, parts_.encoder->tensor) : output;
    }
  }
  if (assignment.is_last_stage()) return OkStatus();
  MicroBatchHeader header{pass.kind, pass.step, index, mb.sample_ids};
  return parts_.ends.to_next->Send(header, mb.output.detach(), pass.compress)
      .WithContext("sending the activation of micro-batch " + std::to_string(index));
}

Status PipelineExecutor::Backward(const Pass& pass, const PipelineOp& op, MicroBatch& mb) {
  const StageAssignment& assignment = parts_.assignment;
  const uint32_t index = static_cast<uint32_t>(op.micro_batch);
  at::Tensor received;  // receiving and decoding count in the link's totals, not here
  if (!assignment.is_last_stage()) {
    MicroBatchHeader header;
    GEOTRAIN_ASSIGN_OR_RETURN(
        received, parts_.ends.from_next->Recv(MessageKind::kGradient, pass.step, index, &header));
  }
  {
    const ScopedPhase computing(
        TraceSpan{pass.trace, "backward", "compute", {{"micro_batch", index}}},
        &pass.phases->backward);
    const at::Tensor gradient =
        received.defined() ? received.to(mb.output.scalar_type()) : at::Tensor();
    try {
      if (gradient.defined()) {
        mb.output.backward(gradient);
      } else {
        mb.output.backward();
      }
    } catch (const c10::Error& e) {
      return Internal("backward of micro-batch " + std::to_string(index) + ": " +
                      e.what_without_backtrace());
    }
  }
  if (!assignment.is_first_stage()) {
    const bool compress =
        pass.compress && (!assignment.compression.backward_epilogue_only || op.epilogue);
    MicroBatchHeader header{MessageKind::kGradient, pass.step, index, mb.sample_ids};
    at::Tensor gradient_out = mb.input.grad();
    if (gradient_out.scalar_type() != mb.received_dtype) {
      gradient_out = gradient_out.to(mb.received_dtype);
    }
    GEOTRAIN_RETURN_IF_ERROR(
        parts_.ends.to_prev->Send(header, gradient_out, compress)
            .WithContext("sending the gradient of micro-batch " + std::to_string(index)));
  }
  mb = MicroBatch{};  // frees the activations of this micro-batch
  return OkStatus();
}

Status PipelineExecutor::FlushSends() {
  if (parts_.ends.to_next) GEOTRAIN_RETURN_IF_ERROR(parts_.ends.to_next->Flush());
  if (parts_.ends.to_prev) GEOTRAIN_RETURN_IF_ERROR(parts_.ends.to_prev->Flush());
  return OkStatus();
}

models::SequenceContext PipelineExecutor::OnDevice(models::SequenceContext context) const {
  if (context.attention_mask.defined()) {
    context.attention_mask = context.attention_mask.to(parts_.device);
  }
  if (context.token_type_ids.defined()) {
    context.token_type_ids = context.token_type_ids.to(parts_.device);
  }
  return context;
}

}  // namespace geotrain::runtime
