// The config.json keys that several families spell alike, read and written in one place so the
// families cannot drift apart: transformers' "hidden_size" spelling of the sizes (SharedKeys),
// the activation names, the rotary settings and a classifier's labels.
//
// Readers fill a ModelConfig from ConfigFields and return the first problem, naming the field;
// writers add keys to a config.json object being built. Plain functions; thread-safe.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/status.h"
#include "models/config_json/config_fields.h"
#include "models/model_config.h"

namespace geotrain::models {

// The keys of transformers' common spelling, with the defaults of one family's config class.
// ParseSharedKeys reads them in this order; WriteSharedKeys writes them.
struct SharedKeys {
  // vocab_size, hidden_size, num_hidden_layers, num_attention_heads and the MLP width under this
  // key ("intermediate_size"; OPT's "ffn_dim"). Read by ParseStandardSizes/ParseMultiHeadSizes.
  const char* mlp_field;
  int64_t max_positions;  // max_position_embeddings
  // Encoders' type_vocab_size (a default of 0 lets it be 0: no segment embeddings); nullopt: no
  // such key.
  std::optional<int64_t> type_vocab_size;
  // The norm epsilon's key ("layer_norm_eps", "rms_norm_eps") and default; nullptr: none (OPT).
  const char* norm_eps_field;
  double norm_eps;
  // tie_word_embeddings' default, where it is read here (it is always written with model_type).
  std::optional<bool> tie_word_embeddings;
  // hidden_act's default; nullptr: the family reads and writes its activation itself.
  const char* activation;
};

// vocab_size, hidden_size, num_hidden_layers, num_attention_heads and `keys.mlp_field`.
Status ParseStandardSizes(const ConfigFields& fields, const SharedKeys& keys, ModelConfig* config);
// ParseStandardSizes for a model with plain multi-head attention (every head its own keys and
// values, heads of hidden_size / num_attention_heads, refused when that does not divide) whose
// embeddings are hidden_size wide unless the caller reads otherwise.
Status ParseMultiHeadSizes(const ConfigFields& fields, const SharedKeys& keys, ModelConfig* config);
// The keys after the sizes: max_position_embeddings, type_vocab_size, the norm epsilon,
// tie_word_embeddings and hidden_act, those `keys` names.
Status ParseSharedKeys(const ConfigFields& fields, const SharedKeys& keys, ModelConfig* config);
// The sizes and the keys ParseSharedKeys reads, from `c`.
void WriteSharedKeys(const ModelConfig& c, const SharedKeys& keys, nlohmann::json* out);

// The activation names transformers' ACT2FN maps to the functions geotrain implements (gelu,
// gelu_new, gelu_pytorch_tanh, relu), under `field` with `fallback` when absent.
StatusOr<Activation> ParseActivation(const ConfigFields& fields, const std::string& field,
                                     const std::string& fallback);

// rope_theta sits at the top level in configs written before transformers 5 (SmolLM2, Qwen2.5),
// and inside rope_parameters since; rope_scaling (old) or a rope_type other than "default" (new)
// change the frequencies, which geotrain does not implement.
// `partial_rotary_factor` (the share of each head that rotates) is read from rope_parameters when
// given there; without it, it stays as the caller set it.
Status ParseRope(const ConfigFields& fields, ModelConfig* config,
                 double* partial_rotary_factor = nullptr);
// Rotary over the first `dim` dimensions of each head: even, and at most the head.
Status CheckRotaryDim(const ConfigFields& fields, const std::string& field, int64_t dim,
                      int64_t head_dim);

// A sequence classifier's head (bert, deberta-v2): biases everywhere, no LM head to tie, and the
// classes: num_labels when given, else len(id2label) (what transformers writes), else its default
// of 2. Only single-label classification is implemented.
Status ParseClassifierHead(const ConfigFields& fields, ModelConfig* config);
// id2label and label2id with transformers' default names: transformers counts the classes from
// id2label.
void WriteClassifierLabels(int64_t num_labels, nlohmann::json* out);

}  // namespace geotrain::models
