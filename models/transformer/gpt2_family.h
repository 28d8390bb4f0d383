// GPT-2 (model_type "gpt2") as stage parts.
//
// Learned token and position embeddings; pre-LayerNorm blocks whose projections are Hugging
// Face "Conv1D" layers (weights stored [in, out], i.e. transposed against nn.Linear, applied as
// bias + x @ W); fused q/k/v projection (c_attn); GELU with the tanh approximation ("gelu_new");
// a final LayerNorm (ln_f) and an LM head that is the token embedding matrix unless
// tie_word_embeddings is false. No dropout: geotrain computes deterministically.
#pragma once

#include "models/model_config.h"
#include "models/stage_plan.h"
#include "models/transformer/parameter_table.h"
#include "models/transformer/stage_parts.h"

namespace geotrain::models {

// Takes the tensors of StageTensorSpecs(config, plan) from `parameters`. Errors surface through
// parameters.CheckComplete(); LibTorch may throw (the caller catches).
StageParts MakeGpt2StageParts(const ModelConfig& config, const StagePlan& plan,
                              ParameterTable& parameters);

}  // namespace geotrain::models
