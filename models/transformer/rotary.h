// Rotary position embeddings (RoPE) as transformers applies them.
//
// Position p turns each pair of rotated dimensions (a, b) by angle p * theta^(-2i/R), R being the
// number of rotated dimensions (the whole head for Llama and Qwen2, its first rotary_dim for
// GPT-NeoX and GPT-J; the rest of the head passes unchanged). Two conventions pair the dimensions:
//   - rotate-half (Llama, Qwen2, GPT-NeoX): pair i is (x[i], x[i + R/2]);
//   - interleaved (GPT-J's rotate_every_two): pair i is (x[2i], x[2i + 1]).
// The angles are computed in float32 exactly as transformers computes them (float64 for float64
// activations) and cast to the activations' dtype afterwards, so 16-bit runs round as the
// reference does. Tables are recomputed per call (S * R values, negligible next to the attention
// itself), which keeps blocks stateless. Thread-safe.
#pragma once

#include <ATen/ATen.h>

namespace geotrain::models {

enum class RotaryPairing { kHalves, kInterleaved };

struct RotaryTables {
  at::Tensor cos;  // [S, R], in the activations' dtype
  at::Tensor sin;
  RotaryPairing pairing = RotaryPairing::kHalves;
};

// Tables for positions 0 .. seq_len-1 rotating `rotary_dim` (even) dimensions, base `theta`.
RotaryTables MakeRotaryTables(int64_t seq_len, int64_t rotary_dim, double theta,
                              const at::TensorOptions& options,
                              RotaryPairing pairing = RotaryPairing::kHalves);

// Rotates the first R dimensions of x [B, H, S, D] by position along dimension 2.
at::Tensor ApplyRotary(const at::Tensor& x, const RotaryTables& tables);

}  // namespace geotrain::models
