// GPT-J (model_type "gptj") as stage parts.
//
// Token embeddings (transformer.wte; positions enter through rotary embeddings); blocks with one
// LayerNorm feeding attention and MLP in parallel, x + attention(ln_1(x)) + mlp(ln_1(x));
// separate q/k/v/out_proj without biases; interleaved ("rotate_every_two") rotary embeddings on
// the first rotary_dim dimensions of each head, base 10000; an MLP fc_in -> activation (gelu_new)
// -> fc_out; a final LayerNorm (ln_f) and lm_head with a bias (untied by default).
#pragma once

#include "models/model_config.h"
#include "models/stage_plan.h"
#include "models/transformer/parameter_table.h"
#include "models/transformer/stage_parts.h"

namespace geotrain::models {

// Takes the tensors of StageTensorSpecs(config, plan) from `parameters`. Errors surface through
// parameters.CheckComplete(); LibTorch may throw (the caller catches).
StageParts MakeGptJStageParts(const ModelConfig& config, const StagePlan& plan,
                              ParameterTable& parameters);

}  // namespace geotrain::models
