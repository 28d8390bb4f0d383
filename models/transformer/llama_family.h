// Llama (model_type "llama") and Qwen2 (model_type "qwen2") as stage parts.
//
// Token embeddings only (positions enter through RoPE in every attention); pre-RMSNorm blocks
// with separate q/k/v/o projections (nn.Linear layout, [out, in]), rotary position embeddings
// with rope_theta, grouped-query attention (num_key_value_heads), and a SwiGLU MLP
// down(silu(gate(x)) * up(x)); a final RMSNorm (model.norm) and lm_head, or the embedding
// matrix when tie_word_embeddings. Qwen2 differs only in its q/k/v biases; Llama may have
// attention_bias (q/k/v/o) and mlp_bias.
#pragma once

#include "models/model_config.h"
#include "models/stage_plan.h"
#include "models/transformer/parameter_table.h"
#include "models/transformer/stage_parts.h"

namespace geotrain::models {

// Takes the tensors of StageTensorSpecs(config, plan) from `parameters`. Errors surface through
// parameters.CheckComplete(); LibTorch may throw (the caller catches).
StageParts MakeLlamaStageParts(const ModelConfig& config, const StagePlan& plan,
                               ParameterTable& parameters);

}  // namespace geotrain::models
