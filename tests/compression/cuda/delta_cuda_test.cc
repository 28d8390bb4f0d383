// The CUDA delta codec and its device activation cache stay in step with the CPU codec: same
// frames over many steps (first visits, deltas, evictions), same decoded values, same cache bytes,
// and frames cross between a GPU end and a CPU end.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "compression/activation_cache.h"
#include "compression/cuda/device_activation_cache.h"
#include "compression/delta_codec.h"
#include "compression/synthetic_tensors.h"
#include "tests/compression/cuda/cuda_test_util.h"

namespace geotrain::compression::cuda {
namespace {

CodecConfig DeltaConfig(int bits, Rounding rounding, int64_t max_samples) {
  CodecConfig config;
  config.codec = CodecId::kDelta;
  config.bits = bits;
  config.rounding = rounding;
  config.max_cache_samples = max_samples;
  config.seed = 5;
  return config;
}

// Activations of `ids` at `step`: a per-sample base that drifts slowly, as between epochs.
std::vector<float> Activations(const std::vector<uint64_t>& ids, int64_t rows, int64_t cols,
                               uint64_t step) {
  std::vector<float> values;
  for (uint64_t id : ids) {
    std::vector<float> base = MakeActivationLike(rows, cols, 1000 + id);
    const std::vector<float> drift = MakeGaussian(rows * cols, 7 * step + id, 0.05f);
    for (size_t i = 0; i < base.size(); ++i) values.push_back(base[i] + drift[i]);
  }
  return values;
}

struct Schedule {
  int bits;
  Rounding rounding;
  int64_t max_samples;
};

class DeltaCudaTest : public ::testing::TestWithParam<Schedule> {};

TEST_P(DeltaCudaTest, FramesCachesAndValuesMatchTheCpuCodecOverManySteps) {
  GEOTRAIN_SKIP_WITHOUT_GPU();
  const Schedule p = GetParam();
  const CodecConfig config = DeltaConfig(p.bits, p.rounding, p.max_samples);
  auto cpu_sender = MakeCodec(config);
  auto cpu_receiver = MakeCodec(config);
  auto gpu_sender = MakeCudaCodec(config);
  auto gpu_receiver = MakeCudaCodec(config);
  ASSERT_TRUE(cpu_sender.ok() && cpu_receiver.ok() && gpu_sender.ok() && gpu_receiver.ok());
  const int64_t rows = 24, cols = 200;
  const std::vector<std::vector<uint64_t>> batches = {{1, 2, 3}, {4, 5, 6}, {1, 2, 3}, {7, 8, 1},
                                                      {4, 5, 6}, {2, 9, 3}, {1, 2, 3}, {6, 5, 4}};
  for (size_t step = 0; step < batches.size(); ++step) {
    const std::vector<uint64_t>& ids = batches[step];
    const std::vector<float> x = Activations(ids, rows, cols, step);
    const Shape shape{static_cast<int64_t>(ids.size()), rows, cols};
    const std::vector<uint8_t> expected = CpuFrame(**cpu_sender, x, shape, ids, step);
    const std::vector<uint8_t> got = GpuFrame(**gpu_sender, x, shape, ids, step);
    ASSERT_TRUE(got == expected) << "frames differ at step " << step;

    DecodedTensor cpu_decoded;
    ASSERT_TRUE(DecodeFrame(**cpu_receiver, expected, FrameLimits(), &cpu_decoded).ok());
    const std::vector<float> gpu_decoded = GpuDecode(**gpu_receiver, expected);
    ASSERT_EQ(gpu_decoded.size(), cpu_decoded.values.size());
    ASSERT_EQ(std::memcmp(gpu_decoded.data(), cpu_decoded.values.data(), 4 * gpu_decoded.size()), 0)
        << "decoded values differ at step " << step;
  }
  const ActivationCache* cpu_cache = DeltaCodecCache(**cpu_sender);
  DeviceActivationCache* gpu_cache = DeltaCudaCodecCache(gpu_sender->get());
  ASSERT_NE(gpu_cache, nullptr);
  ASSERT_EQ(gpu_cache->size(), cpu_cache->size());
  for (uint64_t id : cpu_cache->IdsByRecency()) {
    auto bytes = gpu_cache->SampleBytes(id);
    ASSERT_TRUE(bytes.ok());
    const Span<const uint8_t> expected = cpu_cache->SampleBytes(id);
    ASSERT_EQ(bytes->size(), expected.size());
    EXPECT_EQ(std::memcmp(bytes->data(), expected.data(), expected.size()), 0) << "sample " << id;
    EXPECT_EQ(gpu_cache->ContentHash(id), cpu_cache->ContentHash(id));
  }
}

INSTANTIATE_TEST_SUITE_P(BitsRoundingAndEviction, DeltaCudaTest,
                         ::testing::Values(Schedule{4, Rounding::kNearest, 100},
                                           Schedule{2, Rounding::kStochastic, 100},
                                           Schedule{8, Rounding::kNearest, 5},
                                           Schedule{3, Rounding::kStochastic, 4}));

TEST(DeltaCuda, RefusesOutOfRangeValuesAndLeavesTheCacheAsItWas) {
  GEOTRAIN_SKIP_WITHOUT_GPU();
  auto gpu = MakeCudaCodec(DeltaConfig(4, Rounding::kNearest, 10));
  ASSERT_TRUE(gpu.ok());
  const std::vector<uint64_t> ids = {1, 2};
  std::vector<float> x = Activations(ids, 4, 64, 0);
  GpuFrame(**gpu, x, {2, 4, 64}, ids, 0);
  DeviceActivationCache* cache = DeltaCudaCodecCache(gpu->get());
  const uint64_t hash = cache->ContentHash(2);
  x[4 * 64 + 3] = 1e6f;  // sample 2, beyond fp16
  DeviceArray<float> device = ToDevice(x);
  std::vector<uint8_t> frame;
  const Status s = EncodeDeviceFrame(
      **gpu, TensorView{device.data(), DType::kFloat32, {2, 4, 64}, ids, 1}, &frame);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("input[1] (sample 2)"), std::string::npos) << s.ToString();
  EXPECT_EQ(cache->ContentHash(2), hash);
}

TEST(DeltaCuda, RefusesALostFrameByTheCacheHash) {
  GEOTRAIN_SKIP_WITHOUT_GPU();
  const CodecConfig config = DeltaConfig(4, Rounding::kNearest, 10);
  auto sender = MakeCodec(config);
  auto receiver = MakeCudaCodec(config);
  ASSERT_TRUE(sender.ok() && receiver.ok());
  const std::vector<uint64_t> ids = {3};
  GpuDecode(**receiver, CpuFrame(**sender, Activations(ids, 2, 32, 0), {1, 2, 32}, ids, 0));
  CpuFrame(**sender, Activations(ids, 2, 32, 1), {1, 2, 32}, ids, 1);  // lost on the way
  const std::vector<uint8_t> next =
      CpuFrame(**sender, Activations(ids, 2, 32, 2), {1, 2, 32}, ids, 2);
  DeviceDecodedTensor decoded;
  const Status s = DecodeDeviceFrame(**receiver, next, FrameLimits(), &decoded);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("delta.base_hashes[0]"), std::string::npos) << s.ToString();
}

TEST(DeltaCuda, DeltaLowBitsStaysOnTheCpu) {
  CodecConfig config = DeltaConfig(4, Rounding::kNearest, 10);
  config.codec = CodecId::kDeltaLowBits;
  EXPECT_FALSE(HasCudaKernels(CodecId::kDeltaLowBits));
  EXPECT_EQ(MakeCudaCodec(config).status().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace geotrain::compression::cuda
