// OPT (model_type "opt") as stage parts.
//
// Token embeddings (word_embed_proj_dim wide, mapped to hidden_size by project_in when the two
// differ) plus learned position embeddings at position + 2 (OPT's offset); pre-LayerNorm blocks
// (self_attn_layer_norm, q/k/v/out_proj, final_layer_norm, fc1 -> activation (ReLU) -> fc2),
// biases unless enable_bias is false; a final LayerNorm, project_out when projected, and lm_head
// (the token embedding when tied, the default). OPT-350m's post-LayerNorm layout
// (do_layer_norm_before: false) is refused by ParseModelConfig.
#pragma once

#include "models/model_config.h"
#include "models/stage_plan.h"
#include "models/transformer/parameter_table.h"
#include "models/transformer/stage_parts.h"

namespace geotrain::models {

// Takes the tensors of StageTensorSpecs(config, plan) from `parameters`. Errors surface through
// parameters.CheckComplete(); LibTorch may throw (the caller catches).
StageParts MakeOptStageParts(const ModelConfig& config, const StagePlan& plan,
                             ParameterTable& parameters);

}  // namespace geotrain::models
