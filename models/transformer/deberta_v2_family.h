// DeBERTa-v2 and -v3 (model_type "deberta-v2") with a sequence-classification head, as stage
// parts.
//
// Embeddings: word (embedding_size wide) + learned position (only with position_biased_input) +
// token type (only when type_vocab_size > 0), embed_proj to the hidden size when embedding_size
// differs, a LayerNorm, then zeroed at padded positions (multiplied by the attention mask).
// Post-LayerNorm blocks as BERT's, with disentangled self-attention: the content scores
// q·k plus, from the relative embeddings (deberta.encoder.rel_embeddings, after
// deberta.encoder.LayerNorm with norm_rel_ebd), a content-to-position term q·pos_k[δ] (c2p) and a
// position-to-content term k·pos_q[-δ] (p2c), where δ = i - j is the relative position, log-
// bucketed with position_buckets and clamped to the attention span; all scaled by
// 1/sqrt(head_dim * (1 + number of terms)). pos_k / pos_q are the relative embeddings through
// key_proj / query_proj (share_att_key) or their own pos_key_proj / pos_query_proj. Padded keys,
// and every key of a padded query, get the dtype's lowest score. Head: ContextPooler (dense on
// the first position, then pooler_hidden_act) and the classifier, logits [B, num_labels], as
// DebertaV2ForSequenceClassification.
//
// Where transformers computes in float32 whatever the model's dtype, this does too (the log
// buckets, which are integers) or computes in max(dtype, float32) (the attention scale, then cast
// to the dtype, as transformers casts it); the scores and their softmax stay in the model's dtype,
// as transformers keeps them. Every stage that holds a layer holds its own copy of the relative
// embeddings (model_layout.h).
//
// With conv_kernel_size > 0 (deberta-v2-xlarge, -xxlarge), layer 0's block ends with ConvLayer:
// a Conv1d over the sequence of the block's input (deberta.encoder.conv.conv, padding
// (kernel - 1) / 2, conv_groups), zeroed at padded positions, conv_act, added to the block's
// output and normalised (deberta.encoder.conv.LayerNorm), then multiplied by the attention mask.
// Only the stage holding layer 0 holds these tensors.
#pragma once

#include "models/model_config.h"
#include "models/stage_plan.h"
#include "models/transformer/parameter_table.h"
#include "models/transformer/stage_parts.h"

namespace geotrain::models {

// Takes the tensors of StageTensorSpecs(config, plan) from `parameters`. Errors surface through
// parameters.CheckComplete(); LibTorch may throw (the caller catches).
StageParts MakeDebertaV2StageParts(const ModelConfig& config, const StagePlan& plan,
                                   ParameterTable& parameters);

// Relative positions i - j of query i and key j, [seq, seq] int64 on `device`, log-bucketed as
// transformers' make_log_bucket_position when config.position_buckets > 0 (in float32, as
// transformers computes them). Exposed for tests.
at::Tensor DebertaRelativePositions(const ModelConfig& config, int64_t seq, at::Device device);

}  // namespace geotrain::models
