// ValidateModelConfig (model_config.h): the invariants every consumer of a ModelConfig relies on,
// whether it was read from config.json or built by hand.
#include "models/model_config.h"

#include <string>

namespace geotrain::models {

Status ValidateModelConfig(const ModelConfig& c, const std::string& source) {
  const auto positive = [&](const char* field, int64_t value) -> Status {
    if (value <= 0 || static_cast<uint64_t>(value) > kMaxModelDimension) {
      return InvalidArgument(source + ": " + field + ": " + std::to_string(value) +
                             " is not in [1, " + std::to_string(kMaxModelDimension) + "]");
    }
    return OkStatus();
  };
  GEOTRAIN_RETURN_IF_ERROR(positive("vocab_size", c.vocab_size));
  GEOTRAIN_RETURN_IF_ERROR(positive("hidden_size", c.hidden_size));
  GEOTRAIN_RETURN_IF_ERROR(positive("num_layers", c.num_layers));
  GEOTRAIN_RETURN_IF_ERROR(positive("num_heads", c.num_heads));
  GEOTRAIN_RETURN_IF_ERROR(positive("num_kv_heads", c.num_kv_heads));
  GEOTRAIN_RETURN_IF_ERROR(positive("head_dim", c.head_dim));
  GEOTRAIN_RETURN_IF_ERROR(positive("intermediate_size", c.intermediate_size));
  GEOTRAIN_RETURN_IF_ERROR(positive("max_positions", c.max_positions));
  if (c.num_heads % c.num_kv_heads != 0) {
    return InvalidArgument(source + ": num_kv_heads: " + std::to_string(c.num_kv_heads) +
                           " does not divide num_heads " + std::to_string(c.num_heads));
  }
  if (c.family == ModelFamily::kGpt2 &&
      (c.num_kv_heads != c.num_heads || c.head_dim * c.num_heads != c.hidden_size)) {
    return InvalidArgument(source + ": gpt2 needs num_kv_heads == num_heads and head_dim * " +
                           "num_heads == hidden_size");
  }
  if (c.IsLlamaFamily() && c.head_dim % 2 != 0) {
    return InvalidArgument(source + ": head_dim: " + std::to_string(c.head_dim) + " is odd");
  }
  if (c.family == ModelFamily::kOpt || c.family == ModelFamily::kDebertaV2) {
    GEOTRAIN_RETURN_IF_ERROR(positive("embedding_dim", c.embedding_dim));
  }
  if (c.IsEncoder() != c.IsClassifier() || (c.IsClassifier() && c.num_labels < 2)) {
    return InvalidArgument(
        source + ": num_labels: " + std::to_string(c.num_labels) +
        (c.IsEncoder() ? " (a classifier needs >= 2)" : " (only encoders classify)"));
  }
  if (c.family == ModelFamily::kDebertaV2 && c.relative_attention) {
    GEOTRAIN_RETURN_IF_ERROR(positive("max_relative_positions", c.max_relative_positions));
    if (c.position_buckets > 0 &&
        (c.position_buckets < 2 || c.max_relative_positions - 1 <= c.position_buckets / 2)) {
      return InvalidArgument(source + ": position_buckets: " + std::to_string(c.position_buckets) +
                             " needs >= 2 buckets and max_relative_positions (" +
                             std::to_string(c.max_relative_positions) + ") > buckets / 2 + 1");
    }
  }
  if (c.family == ModelFamily::kDebertaV2 && c.conv_kernel_size != 0) {
    if (c.conv_kernel_size < 0 || c.conv_kernel_size % 2 == 0 ||
        static_cast<uint64_t>(c.conv_kernel_size) > kMaxModelDimension) {
      return InvalidArgument(source + ": conv_kernel_size: " + std::to_string(c.conv_kernel_size) +
                             " must be odd and positive");
    }
    if (c.conv_groups <= 0 || c.hidden_size % c.conv_groups != 0) {
      return InvalidArgument(source + ": conv_groups: " + std::to_string(c.conv_groups) +
                             " does not divide hidden_size " + std::to_string(c.hidden_size));
    }
  }
  if ((c.family == ModelFamily::kGptNeoX || c.family == ModelFamily::kGptJ) &&
      (c.rotary_dim < 2 || c.rotary_dim > c.head_dim || c.rotary_dim % 2 != 0)) {
    return InvalidArgument(source + ": rotary_dim: " + std::to_string(c.rotary_dim) +
                           " must be even and in [2, head_dim " + std::to_string(c.head_dim) + "]");
  }
  if (!c.IsLlamaFamily() && c.family != ModelFamily::kGpt2 &&
      (c.num_kv_heads != c.num_heads || c.head_dim * c.num_heads != c.hidden_size)) {
    return InvalidArgument(source + ": " + ModelTypeName(c.family) +
                           " needs num_kv_heads == num_heads and head_dim * num_heads == "
                           "hidden_size");
  }
  if (!(c.norm_eps > 0) || !(c.rope_theta > 0) || !(c.initializer_range > 0)) {
    return InvalidArgument(source +
                           ": norm_eps, rope_theta and initializer_range must be positive");
  }
  return OkStatus();
}

}  // namespace geotrain::models
