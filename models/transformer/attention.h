// Causal self-attention over heads, with grouped-query attention.
//
// LibTorch 2.x has a fused at::scaled_dot_product_attention (flash / memory-efficient kernels on
// GPUs); LibTorch 1.13, which Debian ships, does not. The choice is made at compile time from the
// headers of the LibTorch being built against, so the same code builds on both; the plain path
// computes what the fused one does: the softmax (in float32 for 16-bit inputs, as transformers
// does) of scaled scores with future positions masked, then the weighted sum. Stateless;
// thread-safe.
#pragma once

#include <ATen/ATen.h>

namespace geotrain::models {

// query [B, H, S, D]; key and value [B, Hkv, S, D] where Hkv divides H (each key/value head
// serves H / Hkv consecutive query heads, as transformers' repeat_kv). Scores are scaled by
// 1/sqrt(D). Returns [B, H, S, D]. Throws c10::Error on mismatched shapes.
at::Tensor CausalSelfAttention(const at::Tensor& query, const at::Tensor& key,
                               const at::Tensor& value);

// Encoder attention: every query sees every key except padding. query, key and value
// [B, H, S, D]; attention_mask [B, S] (nonzero = token; undefined = no padding). Scores are
// scaled by 1/sqrt(D); padded keys get the dtype's lowest score, as transformers' additive mask.
at::Tensor BidirectionalSelfAttention(const at::Tensor& query, const at::Tensor& key,
                                      const at::Tensor& value, const at::Tensor& attention_mask);

// Whether CausalSelfAttention uses LibTorch's fused kernel (reported by benchmarks and logs).
bool HasFusedAttention();

}  // namespace geotrain::models
