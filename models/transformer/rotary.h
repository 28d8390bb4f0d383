// Rotary position embeddings (RoPE) as transformers applies them to Llama and Qwen2.
//
// The "rotate_half" convention: the head dimension is split into two halves [x1, x2] and position
// p turns (x1, x2) by angle p * theta^(-2i/D) into (x1 cos - x2 sin, x2 cos + x1 sin). The angles
// are computed in float32 exactly as transformers computes them (float64 for float64 activations)
// and cast to the activations' dtype afterwards, so 16-bit runs round as the reference does. Tables
// are recomputed per call (S * D values, negligible next to the attention itself), which keeps
// blocks stateless. Thread-safe.
#pragma once

#include <ATen/ATen.h>

namespace geotrain::models {

struct RotaryTables {
  at::Tensor cos;  // [S, D], in the activations' dtype
  at::Tensor sin;
};

// Tables for positions 0 .. seq_len-1 of a head of size head_dim (even), with base `theta`.
RotaryTables MakeRotaryTables(int64_t seq_len, int64_t head_dim, double theta,
                              const at::TensorOptions& options);

// Rotates x [B, H, S, D] by position along dimension 2.
at::Tensor ApplyRotary(const at::Tensor& x, const RotaryTables& tables);

}  // namespace geotrain::models
