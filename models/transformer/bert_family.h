// BERT (model_type "bert") with a sequence-classification head, as stage parts.
//
// Embeddings: word + learned position (0..S-1) + token type (segment), then a LayerNorm.
// Post-LayerNorm blocks: x = LN(x + dense(attention(x))); x = LN(x + dense(act(dense(x)))), the
// attention bidirectional with padded keys masked out (SequenceContext::attention_mask). Head:
// the pooler (dense + tanh on the first, [CLS], position) and the classifier, logits
// [B, num_labels], as BertForSequenceClassification.
#pragma once

#include "models/model_config.h"
#include "models/stage_plan.h"
#include "models/transformer/parameter_table.h"
#include "models/transformer/stage_parts.h"

namespace geotrain::models {

// Takes the tensors of StageTensorSpecs(config, plan) from `parameters`. Errors surface through
// parameters.CheckComplete(); LibTorch may throw (the caller catches).
StageParts MakeBertStageParts(const ModelConfig& config, const StagePlan& plan,
                              ParameterTable& parameters);

}  // namespace geotrain::models
