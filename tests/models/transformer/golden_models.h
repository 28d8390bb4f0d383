// Test helpers for models/transformer: the golden Hugging Face checkpoints under
// tests/golden/models/ (scripts/golden/make_model_golden.py), tensors read from safetensors in
// any dtype, and a hand-driven pipeline that passes activations forward and gradients backward
// between stages as the runtime will.
#pragma once

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "models/safetensors.h"
#include "models/transformer/stage.h"

namespace geotrain::models::testing {

// The golden checkpoints, one per family variant.
inline const std::vector<std::string>& GoldenModelNames() {
  static const std::vector<std::string> names = {"gpt2", "llama",    "llama_variant",    "qwen2",
                                                 "opt",  "gpt_neox", "gpt_neox_variant", "gptj"};
  return names;
}

inline std::string GoldenModelDir(const std::string& name) {
  return std::string(GEOTRAIN_SOURCE_DIR) + "/tests/golden/models/" + name;
}

// A tensor of reference.safetensors (I64, F32 or F64) as a CPU tensor.
inline at::Tensor ReadTensor(const SafetensorsFile& file, const std::string& name) {
  const StatusOr<TensorView> view = file.Get(name);
  EXPECT_TRUE(view.ok()) << view.status().ToString();
  if (!view.ok()) return at::Tensor();
  at::ScalarType dtype = at::kFloat;
  if (view->dtype == SafetensorsDType::kI64) dtype = at::kLong;
  if (view->dtype == SafetensorsDType::kF64) dtype = at::kDouble;
  at::Tensor tensor = at::empty(view->shape, at::TensorOptions().dtype(dtype));
  EXPECT_EQ(static_cast<size_t>(tensor.nbytes()), view->bytes.size()) << name;
  std::memcpy(tensor.data_ptr(), view->bytes.data(), view->bytes.size());
  return tensor;
}

// Inputs and transformers' float64 outputs for one golden checkpoint.
struct GoldenReference {
  at::Tensor input_ids;  // int64 [B, S]
  at::Tensor labels;     // int64 [B, S], with some kIgnoreLabel
  at::Tensor logits;     // float64 [B, S, vocab]
  at::Tensor loss;       // float64 scalar
};

inline GoldenReference ReadGoldenReference(const std::string& model_dir) {
  auto file = SafetensorsFile::Open(model_dir + "/reference.safetensors");
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  if (!file.ok()) return GoldenReference();
  return GoldenReference{ReadTensor(**file, "input_ids"), ReadTensor(**file, "labels"),
                         ReadTensor(**file, "logits"), ReadTensor(**file, "loss")};
}

inline std::unique_ptr<Stage> MustLoadStage(const std::string& model_dir, const StagePlan& plan,
                                            at::ScalarType dtype = at::kFloat) {
  StatusOr<std::unique_ptr<Stage>> stage = LoadStage(model_dir, plan, at::kCPU, dtype);
  EXPECT_TRUE(stage.ok()) << model_dir << " " << plan.ToString() << ": "
                          << stage.status().ToString();
  return stage.ok() ? std::move(*stage) : nullptr;
}

// Loads `model_dir` split into `num_stages` even stages.
inline std::vector<std::unique_ptr<Stage>> LoadPipeline(const std::string& model_dir,
                                                        int64_t num_stages,
                                                        at::ScalarType dtype = at::kFloat) {
  std::vector<std::unique_ptr<Stage>> stages;
  const StatusOr<ModelConfig> config = LoadModelConfig(model_dir);
  EXPECT_TRUE(config.ok()) << config.status().ToString();
  if (!config.ok()) return stages;
  const StatusOr<std::vector<StagePlan>> plans = SplitLayersEvenly(*config, num_stages);
  EXPECT_TRUE(plans.ok()) << plans.status().ToString();
  if (!plans.ok()) return stages;
  for (const StagePlan& plan : *plans) stages.push_back(MustLoadStage(model_dir, plan, dtype));
  return stages;
}

struct PipelineResult {
  at::Tensor logits;
  at::Tensor loss;
  // Parameter gradients by Hugging Face name, summed over stages (a tied embedding's two copies
  // add up to the gradient of the single shared matrix of an unsplit model).
  std::map<std::string, at::Tensor> gradients;
};

// One training step's forward and backward through the chain of stages, by hand: each stage
// after the first gets a detached copy of the previous output with requires_grad, and the
// gradient that reaches that copy is passed back into the previous stage's output.
inline PipelineResult RunPipeline(const std::vector<std::unique_ptr<Stage>>& stages,
                                  const at::Tensor& input_ids, const at::Tensor& labels) {
  PipelineResult result;
  std::vector<at::Tensor> inputs, outputs;
  for (size_t i = 0; i < stages.size(); ++i) {
    const at::Tensor input = i == 0 ? input_ids : outputs.back().detach().requires_grad_(true);
    StatusOr<at::Tensor> output = stages[i]->Forward(input);
    EXPECT_TRUE(output.ok()) << output.status().ToString();
    if (!output.ok()) return result;
    inputs.push_back(input);
    outputs.push_back(*output);
  }
  StatusOr<at::Tensor> loss = stages.back()->Loss(outputs.back(), labels);
  EXPECT_TRUE(loss.ok()) << loss.status().ToString();
  if (!loss.ok()) return result;
  loss->backward();
  for (size_t i = stages.size() - 1; i > 0; --i) {
    EXPECT_TRUE(inputs[i].grad().defined()) << "no gradient reached stage " << i;
    outputs[i - 1].backward(inputs[i].grad());
  }
  result.logits = outputs.back().detach();
  result.loss = loss->detach();
  for (const auto& stage : stages) {
    for (const NamedParameter& parameter : stage->Parameters()) {
      const at::Tensor grad = parameter.tensor.grad();
      EXPECT_TRUE(grad.defined()) << parameter.name << " has no gradient";
      if (!grad.defined()) continue;
      auto it = result.gradients.find(parameter.name);
      if (it == result.gradients.end()) {
        result.gradients[parameter.name] = grad.clone();
      } else {
        it->second = it->second + grad;
      }
    }
  }
  return result;
}

inline double MaxAbsDiff(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
}

inline double MaxAbs(const at::Tensor& a) { return a.to(at::kDouble).abs().max().item<double>(); }

}  // namespace geotrain::models::testing
