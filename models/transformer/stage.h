// Stage: one pipeline stage of a transformer, loaded from a Hugging Face directory.
//
// A stage computes the layers [first_layer, last_layer) of its StagePlan, plus the embeddings
// when it is the first stage and the final norm + LM head when it is the last. LoadStage reads
// only the tensors the stage needs (a sharded checkpoint maps only the shards holding them), so
// a worker never touches the rest of the model. Every parameter is a trainable leaf tensor
// (requires_grad), and Forward is differentiable with respect to its input: the pipeline runtime
// feeds a non-first stage a received activation with requires_grad set, then calls
// output.backward(gradient from the next stage) and sends input.grad() upstream.
//
// With tied embeddings, a last stage that is not also the first holds its own copy of the token
// embedding matrix (loaded from wte / embed_tokens, saved under the same name); the two copies
// receive different gradients (embedding lookup vs LM head) whose sum is the unsplit gradient,
// which is what the runtime's embedding synchronisation adds up.
//
// LibTorch exceptions never escape: Forward, Loss and Save return errors as values. Thread
// safety: Forward and Loss are const and may run concurrently; updating parameters (an
// optimizer step) must not overlap them. Owns its parameters.
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "models/model_config.h"
#include "models/safetensors_checkpoint.h"
#include "models/safetensors_dtype.h"
#include "models/stage_plan.h"
#include "models/transformer/parameter_table.h"
#include "models/transformer/stage_parts.h"

namespace geotrain::models {

// Labels equal to this are left out of the loss (transformers' convention, e.g. padding).
constexpr int64_t kIgnoreLabel = -100;

class Stage {
 public:
  const ModelConfig& config() const { return config_; }
  const StagePlan& plan() const { return plan_; }
  at::Device device() const { return device_; }
  at::ScalarType dtype() const { return dtype_; }

  // First stage: int64 (or int32) token ids [B, S] with 1 <= S <= max_positions for learned
  // positions. Other stages: hidden states [B, S, hidden_size] in the stage's dtype. Returns
  // hidden states [B, S, hidden_size], or from the last stage logits [B, S, vocab_size] (a
  // classifier's: [B, num_labels]). Inputs must be on the stage's device. INVALID_ARGUMENT for a
  // malformed input.
  // `context` carries an encoder's padding mask (every stage) and segment ids (first stage);
  // decoders ignore it.
  StatusOr<at::Tensor> Forward(const at::Tensor& input, const SequenceContext& context = {}) const;

  // Last stage only: the mean next-token cross-entropy (a float32 scalar, float64 for float64
  // logits) of `logits` [B, S, vocab]
  // against `labels` [B, S], which are aligned with the input tokens as in transformers: position
  // t predicts labels[:, t + 1]; labels equal to kIgnoreLabel are left out. S must be >= 2.
  // A classifier's (ModelConfig::IsClassifier) loss is the mean cross-entropy of logits
  // [B, num_labels] against integer labels [B].
  StatusOr<at::Tensor> Loss(const at::Tensor& logits, const at::Tensor& labels) const;

  // The trainable tensors, under their Hugging Face names, in a stable order (embeddings,
  // layers in order, final norm, LM head). The tensors are shared with the stage: an optimizer
  // updates them in place.
  const std::vector<NamedParameter>& Parameters() const { return parameters_; }

  // Writes the parameters to one safetensors file at `path` (atomically), under their Hugging
  // Face names, stored as F32, F16 or BF16. The shards of all stages of a run together hold every
  // tensor of the model (a tied embedding in two of them).
  Status Save(const std::string& path, SafetensorsDType stored_as = SafetensorsDType::kF32) const;

 private:
  friend StatusOr<std::unique_ptr<Stage>> LoadStage(const ModelConfig&, SafetensorsCheckpoint&,
                                                    const StagePlan&, at::Device, at::ScalarType);
  Stage(ModelConfig config, StagePlan plan, at::Device device, at::ScalarType dtype)
      : config_(std::move(config)), plan_(plan), device_(device), dtype_(dtype) {}
  Status CheckInput(const at::Tensor& input) const;
  Status CheckContext(const at::Tensor& input, const SequenceContext& context) const;
  StatusOr<at::Tensor> ClassificationLoss(const at::Tensor& logits, const at::Tensor& labels) const;

  ModelConfig config_;
  StagePlan plan_;
  at::Device device_;
  at::ScalarType dtype_;
  StageParts parts_;
  std::vector<NamedParameter> parameters_;
};

// Loads `plan`'s part of the model in `model_dir` (config.json + model.safetensors or a sharded
// model.safetensors.index.json), with parameters on `device` in `dtype` (a floating type).
StatusOr<std::unique_ptr<Stage>> LoadStage(const std::string& model_dir, const StagePlan& plan,
                                           at::Device device, at::ScalarType dtype);

// The same from a parsed config and an open checkpoint (tests check which shards were opened).
StatusOr<std::unique_ptr<Stage>> LoadStage(const ModelConfig& config,
                                           SafetensorsCheckpoint& checkpoint, const StagePlan& plan,
                                           at::Device device, at::ScalarType dtype);

}  // namespace geotrain::models
