// GPT-NeoX (model_type "gpt_neox": Pythia, GPT-NeoX-20B) as stage parts.
//
// Token embeddings (gpt_neox.embed_in; positions enter through rotary embeddings); blocks with
// two LayerNorms and, with use_parallel_residual (the default), x + attention(ln1(x)) +
// mlp(ln2(x)), else the sequential x + attention(ln1(x)) then + mlp(ln2(.)); a fused
// query_key_value projection laid out per head ([heads, q|k|v, head_dim] along its output);
// rotate-half rotary embeddings on the first rotary_pct of each head; an MLP dense_h_to_4h ->
// activation (exact GELU by default) -> dense_4h_to_h; a final LayerNorm and embed_out (untied by
// default).
#pragma once

#include "models/model_config.h"
#include "models/stage_plan.h"
#include "models/transformer/parameter_table.h"
#include "models/transformer/stage_parts.h"

namespace geotrain::models {

// Takes the tensors of StageTensorSpecs(config, plan) from `parameters`. Errors surface through
// parameters.CheckComplete(); LibTorch may throw (the caller catches).
StageParts MakeGptNeoXStageParts(const ModelConfig& config, const StagePlan& plan,
                                 ParameterTable& parameters);

}  // namespace geotrain::models
