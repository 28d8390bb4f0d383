#include "models/transformer/stage.h"

#include <ATen/core/Reduction.h>

#include "models/model_layout.h"
#include "models/safetensors_writer.h"
#include "models/transformer/bert_family.h"
#include "models/transformer/deberta_v2_family.h"
#include "models/transformer/gpt2_family.h"
#include "models/transformer/gpt_neox_family.h"
#include "models/transformer/gptj_family.h"
#include "models/transformer/llama_family.h"
#include "models/transformer/opt_family.h"
#include "models/transformer/torch_status.h"

namespace geotrain::models {
namespace {

StageParts MakeStageParts(const ModelConfig& config, const StagePlan& plan,
                          ParameterTable& parameters) {
  switch (config.family) {
    case ModelFamily::kGpt2:
      return MakeGpt2StageParts(config, plan, parameters);
    case ModelFamily::kLlama:
    case ModelFamily::kQwen2:
      return MakeLlamaStageParts(config, plan, parameters);
    case ModelFamily::kOpt:
      return MakeOptStageParts(config, plan, parameters);
    case ModelFamily::kGptNeoX:
      return MakeGptNeoXStageParts(config, plan, parameters);
    case ModelFamily::kGptJ:
      return MakeGptJStageParts(config, plan, parameters);
    case ModelFamily::kBert:
      return MakeBertStageParts(config, plan, parameters);
    case ModelFamily::kDebertaV2:
      return MakeDebertaV2StageParts(config, plan, parameters);
  }
  return StageParts();
}

std::string ShapeString(const at::Tensor& t) {
  std::string text = "[";
  for (int64_t i = 0; i < t.dim(); ++i) text += (i ? ", " : "") + std::to_string(t.size(i));
  return text + "]";
}

bool IsIntegral(const at::Tensor& t) {
  return at::isIntegralType(t.scalar_type(), /*includeBool=*/false);
}

}  // namespace

Status Stage::CheckInput(const at::Tensor& input) const {
  const std::string where = "stage " + plan_.ToString() + " input " +
                            (input.defined() ? ShapeString(input) : "(undefined)") + ": ";
  if (!input.defined()) return InvalidArgument(where + "no tensor");
  if (input.device() != device_) {
    return InvalidArgument(where + "on " + input.device().str() + ", the stage is on " +
                           device_.str());
  }
  if (plan_.is_first) {
    if (input.dim() != 2 || !IsIntegral(input)) {
      return InvalidArgument(where + "expected integer token ids [batch, seq]");
    }
    if (input.size(1) == 0 ||
        (config_.HasLearnedPositions() && input.size(1) > config_.max_positions)) {
      return InvalidArgument(where + "sequence length must be in [1, " +
                             std::to_string(config_.max_positions) + "]");
    }
    if (input.numel() > 0) {
      GEOTRAIN_ASSIGN_OR_RETURN(bool in_range, CatchTorchErrors("checking token ids", [&] {
                                  return input.min().item<int64_t>() >= 0 &&
                                         input.max().item<int64_t>() < config_.vocab_size;
                                }));
      if (!in_range) {
        return InvalidArgument(where + "token ids must be in [0, " +
                               std::to_string(config_.vocab_size) + ")");
      }
    }
    return OkStatus();
  }
  if (input.dim() != 3 || input.size(2) != config_.hidden_size) {
    return InvalidArgument(where + "expected hidden states [batch, seq, " +
                           std::to_string(config_.hidden_size) + "]");
  }
  if (input.scalar_type() != dtype_) {
    return InvalidArgument(where + "dtype " + std::string(c10::toString(input.scalar_type())) +
                           ", the stage computes in " + c10::toString(dtype_));
  }
  return OkStatus();
}

Status Stage::CheckContext(const at::Tensor& input, const SequenceContext& context) const {
  const auto check = [&](const at::Tensor& t, const char* name) -> Status {
    if (!t.defined()) return OkStatus();
    if (t.dim() != 2 || t.size(0) != input.size(0) || t.size(1) != input.size(1) ||
        !(IsIntegral(t) || t.scalar_type() == at::kBool)) {
      return InvalidArgument("stage " + plan_.ToString() + " " + name + " " + ShapeString(t) +
                             ": expected integers [batch, seq] matching the input " +
                             ShapeString(input));
    }
    if (t.device() != device_) {
      return InvalidArgument("stage " + plan_.ToString() + " " + name + ": on " + t.device().str() +
                             ", the stage is on " + device_.str());
    }
    return OkStatus();
  };
  GEOTRAIN_RETURN_IF_ERROR(check(context.attention_mask, "attention_mask"));
  GEOTRAIN_RETURN_IF_ERROR(check(context.token_type_ids, "token_type_ids"));
  if (context.token_type_ids.defined() && plan_.is_first) {
    GEOTRAIN_ASSIGN_OR_RETURN(bool in_range, CatchTorchErrors("checking token type ids", [&] {
                                return context.token_type_ids.min().item<int64_t>() >= 0 &&
                                       context.token_type_ids.max().item<int64_t>() <
                                           std::max<int64_t>(config_.type_vocab_size, 1);
                              }));
    if (!in_range) {
      return InvalidArgument("stage " + plan_.ToString() + " token_type_ids: must be in [0, " +
                             std::to_string(std::max<int64_t>(config_.type_vocab_size, 1)) + ")");
    }
  }
  return OkStatus();
}

StatusOr<at::Tensor> Stage::Forward(const at::Tensor& input, const SequenceContext& context) const {
  GEOTRAIN_RETURN_IF_ERROR(CheckInput(input));
  GEOTRAIN_RETURN_IF_ERROR(CheckContext(input, context));
  return CatchTorchErrors("stage " + plan_.ToString() + " forward", [&] {
    at::Tensor hidden = parts_.input ? parts_.input->Forward(input.to(at::kLong), context) : input;
    for (const auto& block : parts_.blocks) hidden = block->Forward(hidden, context);
    return parts_.output ? parts_.output->Forward(hidden, context) : hidden;
  });
}

StatusOr<at::Tensor> Stage::Loss(const at::Tensor& logits, const at::Tensor& labels) const {
  if (!plan_.is_last) {
    return FailedPrecondition("stage " + plan_.ToString() + ": only the last stage has a loss");
  }
  if (config_.IsClassifier()) return ClassificationLoss(logits, labels);
  if (!logits.defined() || !labels.defined() || logits.dim() != 3 || labels.dim() != 2 ||
      logits.size(0) != labels.size(0) || logits.size(1) != labels.size(1) ||
      logits.size(2) != config_.vocab_size || logits.size(1) < 2 || !IsIntegral(labels)) {
    return InvalidArgument("loss: expected logits [batch, seq >= 2, " +
                           std::to_string(config_.vocab_size) +
                           "] and integer labels [batch, seq], got " +
                           (logits.defined() ? ShapeString(logits) : "(undefined)") + " and " +
                           (labels.defined() ? ShapeString(labels) : "(undefined)"));
  }
  return CatchTorchErrors("loss", [&] {
    const int64_t seq = logits.size(1);
    // Position t predicts token t + 1; the last position predicts nothing.
    // At least float32, as transformers upcasts 16-bit logits for the loss.
    const at::Tensor predictions = logits.narrow(1, 0, seq - 1)
                                       .reshape({-1, config_.vocab_size})
                                       .to(at::promote_types(logits.scalar_type(), at::kFloat));
    const at::Tensor targets =
        labels.narrow(1, 1, seq - 1).reshape({-1}).to(logits.device(), at::kLong);
    return at::cross_entropy_loss(predictions, targets, /*weight=*/{}, at::Reduction::Mean,
                                  kIgnoreLabel);
  });
}

StatusOr<at::Tensor> Stage::ClassificationLoss(const at::Tensor& logits,
                                               const at::Tensor& labels) const {
  if (!logits.defined() || !labels.defined() || logits.dim() != 2 || labels.dim() != 1 ||
      logits.size(0) != labels.size(0) || logits.size(1) != config_.num_labels ||
      !IsIntegral(labels)) {
    return InvalidArgument("loss: expected logits [batch, " + std::to_string(config_.num_labels) +
                           "] and integer labels [batch], got " +
                           (logits.defined() ? ShapeString(logits) : "(undefined)") + " and " +
                           (labels.defined() ? ShapeString(labels) : "(undefined)"));
  }
  return CatchTorchErrors("loss", [&] {
    // At least float32, as transformers upcasts 16-bit logits for the loss.
    return at::cross_entropy_loss(logits.to(at::promote_types(logits.scalar_type(), at::kFloat)),
                                  labels.to(logits.device(), at::kLong), /*weight=*/{},
                                  at::Reduction::Mean, kIgnoreLabel);
  });
}

Status Stage::Save(const std::string& path, SafetensorsDType stored_as) const {
  SafetensorsWriter writer;
  writer.SetMetadata("format", "pt");
  writer.SetMetadata("geotrain.stage", plan_.ToString());
  std::vector<at::Tensor> host_copies;  // the writer borrows their data until Write returns
  for (const NamedParameter& parameter : parameters_) {
    GEOTRAIN_ASSIGN_OR_RETURN(
        at::Tensor host, CatchTorchErrors("saving " + parameter.name, [&] {
          return parameter.tensor.detach().to(at::kCPU, at::kFloat).contiguous();
        }));
    host_copies.push_back(host);
    GEOTRAIN_RETURN_IF_ERROR(writer.AddFloat32(
        parameter.name, host.sizes().vec(),
        Span<const float>(host.data_ptr<float>(), static_cast<size_t>(host.numel())), stored_as));
  }
  return writer.Write(path);
}

StatusOr<std::unique_ptr<Stage>> LoadStage(const std::string& model_dir, const StagePlan& plan,
                                           at::Device device, at::ScalarType dtype) {
  GEOTRAIN_ASSIGN_OR_RETURN(ModelConfig config, LoadModelConfig(model_dir));
  GEOTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsCheckpoint> checkpoint,
                            SafetensorsCheckpoint::OpenDirectory(model_dir));
  StatusOr<std::unique_ptr<Stage>> stage = LoadStage(config, *checkpoint, plan, device, dtype);
  if (!stage.ok()) return stage.status().WithContext(model_dir);
  return stage;
}

StatusOr<std::unique_ptr<Stage>> LoadStage(const ModelConfig& config,
                                           SafetensorsCheckpoint& checkpoint, const StagePlan& plan,
                                           at::Device device, at::ScalarType dtype) {
  GEOTRAIN_RETURN_IF_ERROR(ValidateModelConfig(config, "model config"));
  GEOTRAIN_RETURN_IF_ERROR(ValidateStagePlan(plan, config));
  if (!at::isFloatingType(dtype)) {
    return InvalidArgument(std::string("stage dtype ") + c10::toString(dtype) +
                           " is not a floating-point type");
  }
  GEOTRAIN_ASSIGN_OR_RETURN(
      ParameterTable table,
      ParameterTable::Load(checkpoint, StageTensorSpecs(config, plan), device, dtype));
  std::unique_ptr<Stage> stage(new Stage(config, plan, device, dtype));
  GEOTRAIN_ASSIGN_OR_RETURN(stage->parts_, CatchTorchErrors("building stage", [&] {
                              return MakeStageParts(config, plan, table);
                            }));
  GEOTRAIN_RETURN_IF_ERROR(table.CheckComplete());
  stage->parameters_ = table.Parameters();
  // The concrete device ("cuda:0" where the caller said "cuda"), which inputs are checked against.
  if (!stage->parameters_.empty()) stage->device_ = stage->parameters_.front().tensor.device();
  return stage;
}

}  // namespace geotrain::models
