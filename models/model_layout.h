// The tensors of a model (or of one pipeline stage): Hugging Face names, shapes and initialisation.
//
// This is the single list that loading (which tensors a stage reads from a checkpoint), saving
// (the names a stage writes) and InitRandomModel (what a fresh checkpoint contains) share, so the
// three can never disagree. Names are those transformers writes today; for GPT-2 the
// "transformer."-less spelling of checkpoints saved from GPT2Model (the original openai-community
// files) is accepted on load as `legacy_name`. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/model_config.h"
#include "models/stage_plan.h"

namespace geotrain::models {

enum class TensorInit {
  kNormal,          // N(0, initializer_range): weights and embeddings
  kNormalResidual,  // N(0, initializer_range / sqrt(2 * num_layers)): GPT-2's residual projections
  kZeros,           // biases
  kOnes,            // norm weights
};

struct TensorSpec {
  std::string name;         // written by geotrain, tried first on load
  std::string legacy_name;  // also accepted on load; empty when none
  std::vector<int64_t> shape;
  TensorInit init = TensorInit::kNormal;
};

// The tensors a stage reads and trains, in a stable order: embeddings, layers in order, final
// norm, LM head. With tied embeddings a last stage lists the token embedding matrix as its LM
// head (once, when the stage is also the first). The plan must be valid (ValidateStagePlan).
std::vector<TensorSpec> StageTensorSpecs(const ModelConfig& config, const StagePlan& plan);

// StageTensorSpecs of the whole model: what a complete checkpoint holds.
std::vector<TensorSpec> ModelTensorSpecs(const ModelConfig& config);

// The token embedding matrix's name ("transformer.wte.weight", "model.embed_tokens.weight").
std::string TokenEmbeddingName(const ModelConfig& config);

// Tensors that every stage holding a layer keeps its own copy of, because every layer reads them
// (DeBERTa's relative embeddings and their LayerNorm); empty for other models. A pipeline sums
// their gradients over the stages, so the copies stay equal and get the unsplit gradient.
std::vector<std::string> PipelineSharedTensorNames(const ModelConfig& config);

}  // namespace geotrain::models
