#include "models/transformer/rotary.h"

namespace geotrain::models {

RotaryTables MakeRotaryTables(int64_t seq_len, int64_t rotary_dim, double theta,
                              const at::TensorOptions& options, RotaryPairing pairing) {
  // float32 for 16-bit (and float32) activations, as transformers; float64 stays float64.
  const at::TensorOptions wide =
      options.dtype(at::promote_types(options.dtype().toScalarType(), at::kFloat));
  // inv_freq = 1 / theta^(2i / R), as transformers' default rope init.
  const at::Tensor exponents = at::arange(0, rotary_dim, 2, wide) / static_cast<double>(rotary_dim);
  const at::Tensor inv_freq = 1.0 / at::pow(theta, exponents);
  const at::Tensor positions = at::arange(seq_len, wide);
  const at::Tensor angles = at::outer(positions, inv_freq);  // [S, R/2]
  const at::Tensor per_dimension = pairing == RotaryPairing::kHalves
                                       ? at::cat({angles, angles}, -1)
                                       : at::repeat_interleave(angles, 2, -1);
  return RotaryTables{per_dimension.cos().to(options.dtype()),
                      per_dimension.sin().to(options.dtype()), pairing};
}

namespace {

// The partner of each dimension, signed so that x * cos + Partner(x) * sin is the rotation.
at::Tensor Partner(const at::Tensor& x, RotaryPairing pairing) {
  if (pairing == RotaryPairing::kHalves) {
    const int64_t half = x.size(-1) / 2;
    return at::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
  }
  // (x0, x1, x2, x3, ...) -> (-x1, x0, -x3, x2, ...)
  const at::Tensor even = x.slice(-1, 0, x.size(-1), 2);
  const at::Tensor odd = x.slice(-1, 1, x.size(-1), 2);
  return at::stack({-odd, even}, -1).flatten(-2);
}

}  // namespace

at::Tensor ApplyRotary(const at::Tensor& x, const RotaryTables& tables) {
  const int64_t rotated = tables.cos.size(-1);
  if (rotated == x.size(-1)) return x * tables.cos + Partner(x, tables.pairing) * tables.sin;
  const at::Tensor part = x.narrow(-1, 0, rotated);
  const at::Tensor rest = x.narrow(-1, rotated, x.size(-1) - rotated);
  return at::cat({part * tables.cos + Partner(part, tables.pairing) * tables.sin, rest}, -1);
}

}  // namespace geotrain::models
