#include "models/transformer/attention.h"

#include <cmath>
#include <limits>

// at::scaled_dot_product_attention appeared in LibTorch 2.0; its header is the exact test.
#if __has_include(<ATen/ops/scaled_dot_product_attention.h>)
#define GEOTRAIN_HAS_FUSED_ATTENTION 1
#else
#define GEOTRAIN_HAS_FUSED_ATTENTION 0
#endif

namespace geotrain::models {
namespace {

// [B, Hkv, S, D] -> [B, Hkv * groups, S, D], each head repeated `groups` times in a row.
at::Tensor RepeatKvHeads(const at::Tensor& x, int64_t groups) {
  if (groups == 1) return x;
  const int64_t batch = x.size(0), kv_heads = x.size(1), seq = x.size(2), dim = x.size(3);
  return x.unsqueeze(2)
      .expand({batch, kv_heads, groups, seq, dim})
      .reshape({batch, kv_heads * groups, seq, dim});
}

#if !GEOTRAIN_HAS_FUSED_ATTENTION
at::Tensor PlainCausalAttention(const at::Tensor& query, const at::Tensor& key,
                                const at::Tensor& value) {
  const int64_t seq = query.size(2);
  const double scale = 1.0 / std::sqrt(static_cast<double>(query.size(3)));
  at::Tensor scores = at::matmul(query, key.transpose(-2, -1)) * scale;
  const at::Tensor future =
      at::ones({seq, seq}, query.options().dtype(at::kBool)).triu(/*diagonal=*/1);
  scores = scores.masked_fill(future, -std::numeric_limits<double>::infinity());
  // Softmax in float32 for 16-bit activations, as transformers does (float64 stays float64).
  const at::ScalarType softmax_type = at::promote_types(query.scalar_type(), at::kFloat);
  const at::Tensor weights = at::softmax(scores, -1, softmax_type).to(query.scalar_type());
  return at::matmul(weights, value);
}
#endif

}  // namespace

at::Tensor CausalSelfAttention(const at::Tensor& query, const at::Tensor& key,
                               const at::Tensor& value) {
  TORCH_CHECK(query.dim() == 4 && key.dim() == 4 && value.dim() == 4,
              "attention expects [batch, heads, seq, head_dim] tensors");
  TORCH_CHECK(key.size(1) > 0 && query.size(1) % key.size(1) == 0, "key/value heads (", key.size(1),
              ") must divide query heads (", query.size(1), ")");
  const int64_t groups = query.size(1) / key.size(1);
  const at::Tensor k = RepeatKvHeads(key, groups);
  const at::Tensor v = RepeatKvHeads(value, groups);
#if GEOTRAIN_HAS_FUSED_ATTENTION
  return at::scaled_dot_product_attention(query, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0,
                                          /*is_causal=*/true);
#else
  return PlainCausalAttention(query, k, v);
#endif
}

at::Tensor BidirectionalSelfAttention(const at::Tensor& query, const at::Tensor& key,
                                      const at::Tensor& value, const at::Tensor& attention_mask) {
  TORCH_CHECK(
      query.dim() == 4 && key.dim() == 4 && value.dim() == 4 && query.size(1) == key.size(1),
      "attention expects [batch, heads, seq, head_dim] tensors with as many key heads");
  const double scale = 1.0 / std::sqrt(static_cast<double>(query.size(3)));
  // Softmax in float32 for 16-bit activations, as transformers does (float64 stays float64).
  const at::ScalarType softmax_type = at::promote_types(query.scalar_type(), at::kFloat);
  at::Tensor scores = (at::matmul(query, key.transpose(-2, -1)) * scale).to(softmax_type);
  if (attention_mask.defined()) {
    // The lowest finite score, as transformers' additive mask: a padded query row still
    // attends somewhere, so no row is all -inf (NaN).
    const at::Tensor padding = (attention_mask == 0).view({query.size(0), 1, 1, key.size(2)});
    scores = scores.masked_fill(padding, softmax_type == at::kDouble
                                             ? std::numeric_limits<double>::lowest()
                                             : std::numeric_limits<float>::lowest());
  }
  return at::matmul(at::softmax(scores, -1).to(query.scalar_type()), value);
}

bool HasFusedAttention() { return GEOTRAIN_HAS_FUSED_ATTENTION; }

}  // namespace geotrain::models
