// AdamW (Loshchilov & Hutter, "Decoupled Weight Decay Regularization") over a stage's parameters.
//
// Written here rather than taken from torch::optim because the runtime needs three things that
// class does not give: the update split in two (the moments first, so that the quantized-momentum
// data-parallel mode can average the first moment between replicas before it is applied), its
// state as named tensors for our safetensors checkpoints, and bitwise-reproducible arithmetic
// whose order we fix. Matches torch.optim.AdamW (bias-corrected moments, decay p -= lr * wd * p
// before the step) to float rounding.
//
// Not thread-safe; must not run while the stage computes.
#pragma once

#include <ATen/ATen.h>

#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "models/transformer/parameter_table.h"

namespace geotrain::runtime {

struct AdamWOptions {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.01;
  // HF Trainer convention: no decay on 1-D tensors (biases, norm weights).
  bool decay_one_dim = false;
};

class AdamW {
 public:
  // The tensors are shared with the stage and updated in place; their grad() is read.
  AdamW(std::vector<models::NamedParameter> parameters, AdamWOptions options);

  // One full step with learning rate `lr`: UpdateMoments() then ApplyUpdate(lr).
  void Step(double lr);
  // m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g²;  counts the step. Parameters without a
  // gradient are skipped (their moments stay).
  void UpdateMoments();
  // p -= lr * wd * p;  p -= lr * m̂ / (sqrt(v̂) + eps), with bias corrections of step().
  void ApplyUpdate(double lr);

  int64_t step() const { return step_; }
  // First moments in parameter order (the quantized-momentum mode replaces them in place).
  std::vector<at::Tensor>& first_moments() { return exp_avg_; }

  // The state as named tensors: "<param>.exp_avg", "<param>.exp_avg_sq" (float32) and
  // "adamw.step" (int64 scalar).
  std::map<std::string, at::Tensor> StateTensors() const;
  // Restores StateTensors() output; INVALID_ARGUMENT naming the tensor when one is missing or its
  // shape differs from the parameter's.
  Status LoadStateTensors(const std::map<std::string, at::Tensor>& state);

 private:
  std::vector<models::NamedParameter> parameters_;
  AdamWOptions options_;
  std::vector<at::Tensor> exp_avg_;
  std::vector<at::Tensor> exp_avg_sq_;
  int64_t step_ = 0;
};

}  // namespace geotrain::runtime
