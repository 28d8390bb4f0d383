// The MCBench learned autoencoder of a pipeline link (Bian et al., MLSys'24, arXiv 2301.02654).
//
// The sending stage ends with an encoder z = x Eᵀ (E: [dim, hidden]); the receiving stage starts
// with a decoder x̂ = z Dᵀ (D: [hidden, dim]). Only z, dim values per token instead of hidden,
// crosses the link (through the link's codec like any activation), and in the backward pass only
// ∂L/∂z comes back. Both matrices are trainable parameters of their stage, updated by the same
// optimizer and data-parallel sync as the model.
//
// Initialisation: E has orthonormal rows drawn from a Gaussian seeded by (seed, link), and D = Eᵀ,
// so both ends build their half independently and dec(enc(x)) starts as the orthogonal
// projection onto a random dim-dimensional subspace; a fine-tune from a pretrained model then
// starts close to it instead of from a random bottleneck.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

#include "models/transformer/parameter_table.h"

namespace geotrain::runtime {

// The encoder at the end of stage `link` (the link between stages link and link+1), on `device`
// (drawn on the CPU in double, then moved: the same values on every device).
models::NamedParameter MakeAutoencoderEncoder(int64_t hidden, int64_t dim, uint64_t seed, int link,
                                              at::ScalarType dtype, at::Device device = at::kCPU);
// The decoder at the start of stage link+1.
models::NamedParameter MakeAutoencoderDecoder(int64_t hidden, int64_t dim, uint64_t seed, int link,
                                              at::ScalarType dtype, at::Device device = at::kCPU);

// z = x Eᵀ and x̂ = z Dᵀ over the last dimension.
at::Tensor ApplyLinear(const at::Tensor& x, const at::Tensor& weight);

}  // namespace geotrain::runtime
