// ModelConfig: the architecture of a transformer, read from a Hugging Face config.json.
//
// One struct covers every supported family, in family-neutral names (hidden_size, num_layers, ...);
// ParseModelConfig maps each family's own spelling onto it (GPT-2's n_embd, Llama's hidden_size)
// and fills absent optional fields with the defaults of the matching transformers config class, so
// a file means here what it means to transformers. Settings that would change the computation in a
// way geotrain does not implement (rope scaling, sliding-window attention, another activation) are
// refused by name, never silently ignored. Plain value; thread-safe to read.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace geotrain::models {

enum class ModelFamily {
  kGpt2,       // model_type "gpt2"
  kLlama,      // model_type "llama"
  kQwen2,      // model_type "qwen2": Llama with q/k/v biases
  kOpt,        // model_type "opt": learned positions (offset 2), pre-LN, ReLU, project_in/out
  kGptNeoX,    // model_type "gpt_neox": parallel residual, partial rotary, fused per-head q|k|v
  kGptJ,       // model_type "gptj": one LayerNorm, parallel residual, interleaved partial rotary
  kBert,       // model_type "bert": post-LayerNorm encoder with a sequence-classification head
  kDebertaV2,  // model_type "deberta-v2" (DeBERTa-v2 and -v3): disentangled relative attention
};

// "gpt2", "llama", "qwen2", "opt", "gpt_neox", "gptj", "bert", "deberta-v2": the config.json
// model_type.
const char* ModelTypeName(ModelFamily family);

// The MLP's nonlinearity.
enum class Activation {
  kGeluTanh,  // gelu_new, gelu_pytorch_tanh
  kGelu,      // gelu (the exact, erf form)
  kRelu,
  kSilu,  // the Llama family's SwiGLU gate
};

// The transformers ACT2FN name: "gelu_new", "gelu", "relu", "silu".
const char* ActivationName(Activation activation);

struct ModelConfig {
  ModelFamily family = ModelFamily::kGpt2;
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;          // gpt2: n_embd
  int64_t num_layers = 0;           // gpt2: n_layer; llama: num_hidden_layers
  int64_t num_heads = 0;            // gpt2: n_head
  int64_t num_kv_heads = 0;         // == num_heads for GPT-2 (no grouped-query attention)
  int64_t head_dim = 0;             // hidden_size / num_heads unless config.json says otherwise
  int64_t intermediate_size = 0;    // gpt2: n_inner (null: 4 * n_embd)
  int64_t max_positions = 0;        // gpt2: n_positions; llama: max_position_embeddings
  double norm_eps = 0;              // gpt2: layer_norm_epsilon; llama: rms_norm_eps
  double rope_theta = 10000.0;      // Llama family only
  bool tie_word_embeddings = true;  // the LM head reuses the token embedding matrix
  bool attention_bias = false;      // gpt2: always; llama: q/k/v/o (attention_bias); qwen2: q/k/v
  bool mlp_bias = false;            // gpt2: always; llama: gate/up/down (mlp_bias); qwen2: never
  double initializer_range = 0.02;  // std of the normal init (InitRandomModel)
  Activation activation = Activation::kGeluTanh;
  // Width of the token embeddings and of the LM head's input: opt's word_embed_proj_dim (its
  // project_in / project_out map it to and from hidden_size when they differ); deberta-v2's
  // embedding_size (its embed_proj maps the summed embeddings to hidden_size when they differ);
  // hidden_size for every other family.
  int64_t embedding_dim = 0;
  // Dimensions of each head that rotary embeddings turn: head_dim for the Llama family,
  // head_dim * rotary_pct for gpt_neox, rotary_dim for gptj; 0 for learned positions.
  int64_t rotary_dim = 0;
  // gpt_neox's use_parallel_residual: x + attention(ln1(x)) + mlp(ln2(x)).
  bool parallel_residual = false;
  bool lm_head_bias = false;    // gptj's LM head has a bias
  int64_t type_vocab_size = 0;  // bert, deberta-v2: segment (token type) embeddings; 0 when none
  // Encoders: the classes of the sequence-classification head (len(id2label), or num_labels;
  // transformers' default 2). 0 for language models.
  int64_t num_labels = 0;
  // The pooler's nonlinearity after its dense layer: deberta-v2's pooler_hidden_act (BERT's
  // pooler is always tanh and does not read this).
  Activation pooler_activation = Activation::kGelu;

  // DeBERTa-v2's disentangled attention (model_type "deberta-v2"; unused by other families).
  // Absolute position embeddings added to the token embeddings (position_biased_input; DeBERTa-v3
  // has none and relies on relative positions alone).
  bool position_biased_input = false;
  // Relative-position terms in every attention, from the shared table
  // deberta.encoder.rel_embeddings [2 * RelativeAttentionSpan(), hidden].
  bool relative_attention = false;
  // Relative distances are clamped to +-max_relative_positions (config.json's -1, or any value
  // < 1, means max_position_embeddings: stored resolved); with log buckets, the distance at
  // which the buckets reach their last one.
  int64_t max_relative_positions = 0;
  // Log-bucketed relative positions (make_log_bucket_position) when > 0; 0 when none
  // (config.json's -1).
  int64_t position_buckets = 0;
  // pos_att_type: the content-to-position and position-to-content terms.
  bool attention_c2p = false;
  bool attention_p2c = false;
  // share_att_key: the relative embeddings go through the content query_proj / key_proj rather
  // than their own pos_query_proj / pos_key_proj.
  bool share_attention_key = false;
  // norm_rel_ebd "layer_norm": deberta.encoder.LayerNorm normalises the relative embeddings
  // before every layer uses them.
  bool norm_relative_embeddings = false;
  // conv_kernel_size > 0 (deberta-v2-xlarge, -xxlarge): ConvLayer after the first layer, a
  // Conv1d over the sequence of the first layer's input (deberta.encoder.conv.conv, odd kernel,
  // conv_groups groups), its padded positions zeroed, conv_act, added to the first layer's output
  // and normalised (deberta.encoder.conv.LayerNorm), then multiplied by the attention mask. Only
  // the stage holding layer 0 holds it. 0 when none.
  int64_t conv_kernel_size = 0;
  int64_t conv_groups = 1;
  Activation conv_activation = Activation::kGelu;

  bool IsLlamaFamily() const {
    return family == ModelFamily::kLlama || family == ModelFamily::kQwen2;
  }
  // The token embedding is followed by learned position embeddings (gpt2, opt, bert; deberta-v2
  // with position_biased_input), which bound the sequence length by max_positions.
  bool HasLearnedPositions() const {
    return family == ModelFamily::kGpt2 || family == ModelFamily::kOpt ||
           family == ModelFamily::kBert ||
           (family == ModelFamily::kDebertaV2 && position_biased_input);
  }
  // A bidirectional encoder family (bert, deberta-v2): every such model is a classifier, and no
  // other family is.
  bool IsEncoder() const {
    return family == ModelFamily::kBert || family == ModelFamily::kDebertaV2;
  }
  // A bidirectional encoder whose last stage classifies the sequence (logits [B, num_labels]).
  bool IsClassifier() const { return num_labels > 0; }
  // DeBERTa's attention span: relative positions index [0, 2 * span) of the relative embeddings
  // (position_buckets when bucketed, else max_relative_positions). 0 without relative attention.
  int64_t RelativeAttentionSpan() const {
    if (!relative_attention) return 0;
    return position_buckets > 0 ? position_buckets : max_relative_positions;
  }
};

// Bounds of every size and count (ValidateModelConfig): far beyond any real model, small enough
// that products of two sizes cannot overflow int64.
constexpr uint64_t kMaxModelDimension = 1 << 24;
constexpr uint64_t kMaxModelLayers = 1 << 12;

// Parses config.json text; `source` names the file in errors, which also name the field:
// "config.json: n_head: 5 does not divide n_embd 64".
StatusOr<ModelConfig> ParseModelConfig(const std::string& text, const std::string& source);
// Reads `model_dir`/config.json.
StatusOr<ModelConfig> LoadModelConfig(const std::string& model_dir);

// Checks the invariants every consumer relies on (positive sizes, heads dividing the hidden size,
// kv heads dividing heads, an even head_dim for RoPE). ParseModelConfig calls it; so does anything
// that builds a ModelConfig by hand before using it.
Status ValidateModelConfig(const ModelConfig& config, const std::string& source);

// The config.json transformers writes for `config` (architectures, model_type and the family's own
// field names), so the directories geotrain writes load in transformers too.
std::string ModelConfigToJson(const ModelConfig& config);

}  // namespace geotrain::models
