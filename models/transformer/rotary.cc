#include "models/transformer/rotary.h"

namespace geotrain::models {

RotaryTables MakeRotaryTables(int64_t seq_len, int64_t head_dim, double theta,
                              const at::TensorOptions& options) {
  // float32 for 16-bit (and float32) activations, as transformers; float64 stays float64.
  const at::TensorOptions wide =
      options.dtype(at::promote_types(options.dtype().toScalarType(), at::kFloat));
  // inv_freq = 1 / theta^(2i / D), as transformers' default rope init.
  const at::Tensor exponents = at::arange(0, head_dim, 2, wide) / static_cast<double>(head_dim);
  const at::Tensor inv_freq = 1.0 / at::pow(theta, exponents);
  const at::Tensor positions = at::arange(seq_len, wide);
  const at::Tensor angles = at::outer(positions, inv_freq);  // [S, D/2]
  const at::Tensor both_halves = at::cat({angles, angles}, -1);
  return RotaryTables{both_halves.cos().to(options.dtype()), both_halves.sin().to(options.dtype())};
}

at::Tensor ApplyRotary(const at::Tensor& x, const RotaryTables& tables) {
  const int64_t half = x.size(-1) / 2;
  const at::Tensor first = x.narrow(-1, 0, half);
  const at::Tensor second = x.narrow(-1, half, half);
  const at::Tensor rotated_half = at::cat({-second, first}, -1);
  return x * tables.cos + rotated_half * tables.sin;
}

}  // namespace geotrain::models
