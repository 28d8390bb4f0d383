#include "runtime/autoencoder.h"

#include <string>

#include "common/hash_random.h"

namespace geotrain::runtime {
namespace {

// [dim, hidden] with orthonormal rows, identical on every machine for the same arguments (the
// Gaussian comes from our own SplitMix64 stream, not LibTorch's generator, and QR runs in double).
at::Tensor OrthonormalRows(int64_t hidden, int64_t dim, uint64_t seed, int link) {
  SplitMix64 random(seed ^ (0x6175746f656e63ULL + static_cast<uint64_t>(link)));
  at::Tensor gaussian = at::empty({hidden, dim}, at::kDouble);
  double* values = gaussian.data_ptr<double>();
  for (int64_t i = 0; i < hidden * dim; ++i) values[i] = random.Normal();
  at::Tensor q = std::get<0>(at::linalg_qr(gaussian));  // [hidden, dim], orthonormal columns
  return q.t().contiguous();
}

}  // namespace

models::NamedParameter MakeAutoencoderEncoder(int64_t hidden, int64_t dim, uint64_t seed, int link,
                                              at::ScalarType dtype, at::Device device) {
  at::Tensor weight =
      OrthonormalRows(hidden, dim, seed, link).to(device, dtype).requires_grad_(true);
  return {"autoencoder." + std::to_string(link) + ".encoder.weight", weight};
}

models::NamedParameter MakeAutoencoderDecoder(int64_t hidden, int64_t dim, uint64_t seed, int link,
                                              at::ScalarType dtype, at::Device device) {
  at::Tensor weight = OrthonormalRows(hidden, dim, seed, link)
                          .t()
                          .contiguous()
                          .to(device, dtype)
                          .requires_grad_(true);
  return {"autoencoder." + std::to_string(link) + ".decoder.weight", weight};
}

at::Tensor ApplyLinear(const at::Tensor& x, const at::Tensor& weight) {
  return at::matmul(x, weight.t());
}

}  // namespace geotrain::runtime
