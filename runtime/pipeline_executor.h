// PipelineExecutor: this stage's part of the pipeline, micro-batch by micro-batch.
//
// One Forward serves training and evaluation. For a micro-batch it takes the first stage's token
// ids (read by the caller) or receives the activation from the previous stage, reads the
// sample ids' padding mask and segments (and, on the last stage, labels), runs the autoencoder's
// decoder, the stage's layers and the encoder (or the loss) under autocast, and sends the
// activation on. What differs is a Pass:
//                    training (RunSchedule)              evaluation (Evaluate)
//   message kind     kActivation                         kEvalActivation
//   data             training split                      validation split
//   autograd         the received activation is a leaf   none (NoGradGuard)
//                    that requires grad
//   loss             divided by the micro-batch count    as is, with the logits for the scores
//   codec            the link's once warm-up is over     plain float32, never touching codec state
//   timing           data / forward phases, trace spans  the caller times the whole evaluation
//
// Backward (training only) receives the gradient of the stage's output from the next stage (the
// last stage starts from its loss), runs autograd and sends the gradient of the received
// activation back in the activation's dtype; with backward_epilogue_only only the drain phase's
// gradient sends are compressed. RunSchedule runs the stage's op list (GPipe or 1F1B) over the
// step's micro-batches and flushes the sends.
//
// Receiving and decoding are timed by the link ends (their totals go to the StepLedger), so the
// forward and backward phases hold compute alone. Every stage of the replica must run the same
// schedule for the same step: each message is checked against the step, micro-batch and kind
// the schedule expects. Not thread-safe: the runtime thread calls it (on a CUDA device, the
// thread that built the stage: autocast and the current stream are per thread).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "common/status.h"
#include "runtime/classification_metrics.h"
#include "runtime/micro_batch_message.h"
#include "runtime/pipeline_schedule.h"
#include "runtime/stage_parts.h"
#include "runtime/step_result.h"

namespace geotrain::runtime {

class PipelineExecutor {
 public:
  // What this stage's evaluation of training.eval_batches micro-batches found (last stage).
  struct Evaluation {
    double loss_sum = 0;                       // of the micro-batches' mean losses
    std::optional<ConfusionCounts> confusion;  // a classifier's predictions
  };

  // `parts` must outlive the executor.
  explicit PipelineExecutor(StageParts& parts) : parts_(parts) {}

  // The schedule of the step numbered `step` (0-based), compressed when `compress`; adds the data,
  // forward and backward seconds to *phases. Returns the last stage's loss (the sum of the
  // micro-batch losses divided by their count), NaN on the other stages.
  StatusOr<double> RunSchedule(int64_t step, bool compress, StepPhases* phases);

  // Forward only, over training.eval_batches validation micro-batches, after step `step`.
  StatusOr<Evaluation> Evaluate(int64_t step);

 private:
  struct Pass;
  // What a micro-batch keeps between its forward and its backward.
  struct MicroBatch {
    std::vector<uint64_t> sample_ids;
    at::Tensor tokens;  // first stage: the input ids, on the device
    at::Tensor input;   // other stages: the received activation (in training a leaf with grad)
    at::Tensor output;  // the scaled loss (last stage), or the activation sent
    at::Tensor labels;  // last stage: the labels, on the host
    at::Tensor logits;  // last stage in evaluation: the head's output, for the scores
    // The received activation's type: its gradient goes back in it (under autocast a bfloat16
    // activation's sender would round a float32 gradient to bfloat16 anyway, so this halves the
    // bytes and changes nothing).
    at::ScalarType received_dtype = at::kFloat;
  };

  // The first stage's micro-batch from a batch of the data.
  MicroBatch FromBatch(models::data::Batch batch) const;
  Status Forward(const Pass& pass, uint32_t index, MicroBatch& mb);
  Status Backward(const Pass& pass, const PipelineOp& op, MicroBatch& mb);
  Status FlushSends();
  // A batch's padding mask and segments (TrainingData, on the host) on the stage's device.
  models::SequenceContext OnDevice(models::SequenceContext context) const;

  StageParts& parts_;
};

}  // namespace geotrain::runtime
