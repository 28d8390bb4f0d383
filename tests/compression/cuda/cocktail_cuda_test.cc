// The CUDA cocktail codec writes CocktailCodec's bytes, keeps its residual bit for bit, decodes to
// its values and refuses the frames it refuses, with the same errors.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "common/hash_random.h"
#include "compression/cocktail_codec.h"
#include "compression/cuda/cocktail_cuda_codec.h"
#include "compression/synthetic_tensors.h"
#include "tests/compression/cocktail_test_util.h"
#include "tests/compression/cuda/cuda_test_util.h"

namespace geotrain::compression::cuda {
namespace {

using cocktail_test::CocktailConfig;
using cocktail_test::Data;
using cocktail_test::MakeData;

std::vector<float> CpuDecode(Codec& codec, const std::vector<uint8_t>& frame) {
  DecodedTensor out;
  const Status s = DecodeFrame(codec, frame, FrameLimits(), &out);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out.values;
}

TEST(CocktailCuda, HasKernelsAndIsMadeByTheFactory) {
  EXPECT_TRUE(HasCudaKernels(CodecId::kCocktail));
  CodecConfig config = CocktailConfig(MaskMode::kRolling, 0.1, 0.2, 4, 128, true);
  auto codec = MakeCudaCodec(config);  // allocates nothing: no device needed
  ASSERT_TRUE(codec.ok()) << codec.status().ToString();
  EXPECT_EQ((*codec)->id(), CodecId::kCocktail);
  config.topk_ratio = 0;
  EXPECT_FALSE(MakeCudaCodec(config).ok());
}

struct Case {
  MaskMode mode;
  double p, topk;
  int q, group;
  Rounding rounding;
  int64_t rows, cols;
  Data data;
};

class CocktailCudaFrames : public ::testing::TestWithParam<Case> {};

TEST_P(CocktailCudaFrames, FramesAndDecodedValuesMatchTheCpuCodec) {
  GEOTRAIN_SKIP_WITHOUT_GPU();
  const Case c = GetParam();
  const CodecConfig config = CocktailConfig(c.mode, c.p, c.topk, c.q, c.group, false, c.rounding);
  auto cpu = MakeCodec(config);
  auto gpu = MakeCudaCodec(config);
  ASSERT_TRUE(cpu.ok() && gpu.ok());
  const Shape shape{c.rows, c.cols};
  for (uint64_t step : {0, 1, 7, 123457}) {
    const std::vector<float> x = MakeData(c.data, c.rows * c.cols, 11 * step + c.cols);
    const std::vector<uint8_t> expected = CpuFrame(**cpu, x, shape, {}, step);
    const std::vector<uint8_t> got = GpuFrame(**gpu, x, shape, {}, step);
    ASSERT_EQ(got.size(), expected.size()) << "step " << step;
    ASSERT_TRUE(got == expected) << "frames differ at step " << step;
    ExpectSameFloats(GpuDecode(**gpu, expected), CpuDecode(**cpu, expected),
                     "decoded, step " + std::to_string(step));
  }
}

INSTANTIATE_TEST_SUITE_P(
    MasksRatiosAndTies, CocktailCudaFrames,
    ::testing::Values(
        Case{MaskMode::kRolling, 0.1, 0.2, 4, 128, Rounding::kNearest, 64, 1000, Data::kGaussian},
        Case{MaskMode::kSeeded, 0.1, 0.2, 4, 128, Rounding::kNearest, 64, 1000, Data::kGaussian},
        Case{MaskMode::kRolling, 0.3, 0.5, 8, 64, Rounding::kStochastic, 37, 333, Data::kWideRange},
        Case{MaskMode::kSeeded, 0.3, 0.05, 2, 32, Rounding::kStochastic, 37, 333, Data::kWideRange},
        Case{MaskMode::kRolling, 1.0, 0.01, 3, 128, Rounding::kNearest, 16, 4097, Data::kFewLevels},
        Case{MaskMode::kSeeded, 1.0, 0.3, 4, 7, Rounding::kNearest, 16, 4097, Data::kFewLevels},
        Case{MaskMode::kRolling, 0.5, 0.2, 4, 128, Rounding::kNearest, 1, 100003,
             Data::kSameMagnitude},
        Case{MaskMode::kSeeded, 0.5, 0.2, 4, 128, Rounding::kNearest, 1, 100003,
             Data::kSameMagnitude},
        Case{MaskMode::kRolling, 0.05, 1.0, 5, 128, Rounding::kNearest, 10, 1000,
             Data::kZerosAndTiny},
        Case{MaskMode::kSeeded, 0.2, 0.2, 6, 128, Rounding::kNearest, 10, 1000,
             Data::kZerosAndTiny},
        // Large: many blocks in every histogram pass, multi-block scans.
        Case{MaskMode::kRolling, 0.1, 0.2, 4, 128, Rounding::kNearest, 1024, 4096, Data::kGaussian},
        Case{MaskMode::kSeeded, 0.1, 0.2, 4, 128, Rounding::kNearest, 1024, 4096, Data::kFewLevels},
        // Tiny and empty tensors.
        Case{MaskMode::kRolling, 0.5, 0.2, 4, 128, Rounding::kNearest, 1, 1, Data::kGaussian},
        Case{MaskMode::kSeeded, 0.5, 0.2, 4, 128, Rounding::kNearest, 1, 33, Data::kGaussian},
        Case{MaskMode::kRolling, 0.1, 0.2, 4, 128, Rounding::kNearest, 0, 16, Data::kGaussian},
        Case{MaskMode::kSeeded, 0.001, 0.2, 4, 128, Rounding::kNearest, 3, 100, Data::kGaussian}));

std::unique_ptr<CocktailCodec> MakeCpu(const CodecConfig& config) {
  auto codec = CocktailCodec::Create(config);
  EXPECT_TRUE(codec.ok()) << codec.status().ToString();
  return codec.ok() ? std::move(*codec) : nullptr;
}

std::unique_ptr<CocktailCudaCodec> MakeGpu(const CodecConfig& config) {
  auto codec = CocktailCudaCodec::Create(config);
  EXPECT_TRUE(codec.ok()) << codec.status().ToString();
  return codec.ok() ? std::move(*codec) : nullptr;
}

void ExpectSameResidual(CocktailCodec& cpu, CocktailCudaCodec& gpu, const std::string& what) {
  std::vector<float> got;
  ASSERT_TRUE(gpu.CopyResidualToHost(&got).ok());
  const Span<const float> want = cpu.residual();
  ExpectSameFloats(got, std::vector<float>(want.begin(), want.end()), what);
  EXPECT_EQ(gpu.residual_shape(), cpu.residual_shape()) << what;
}

Status EncodeOn(CocktailCudaCodec& gpu, const std::vector<float>& x, const Shape& shape,
                uint64_t step, std::vector<uint8_t>* frame, EncodeStats* stats = nullptr) {
  DeviceArray<float> device = ToDevice(x);
  return EncodeDeviceFrame(gpu, TensorView{device.data(), DType::kFloat32, shape, {}, step}, frame,
                           stats);
}

TEST(CocktailCuda, ErrorFeedbackFramesAndResidualMatchTheCpuCodecOverManySteps) {
  GEOTRAIN_SKIP_WITHOUT_GPU();
  for (MaskMode mode : {MaskMode::kRolling, MaskMode::kSeeded}) {
    for (Data data : {Data::kGaussian, Data::kFewLevels, Data::kSameMagnitude}) {
      const CodecConfig config = CocktailConfig(mode, 0.25, 0.2, 4, 32, true);
      auto cpu = MakeCpu(config);
      auto gpu = MakeGpu(config);
      ASSERT_TRUE(cpu && gpu);
      std::vector<float> before;
      ASSERT_TRUE(gpu->CopyResidualToHost(&before).ok());
      EXPECT_TRUE(before.empty());
      for (uint64_t step = 0; step < 30; ++step) {
        // Shape changes at steps 10 and 20 reset both residuals; a NaN at step 15 fails both
        // encodes and leaves both residuals zero.
        const int64_t n = step < 10 ? 20000 : step < 20 ? 13370 : 32 * 640;
        const Shape shape = step < 20 ? Shape{n} : Shape{32, 640};
        std::vector<float> x = MakeData(data, n, 1000 + step);
        if (step == 15) x[n / 2] = std::numeric_limits<float>::quiet_NaN();
        const std::string what = "mode " + std::to_string(static_cast<int>(mode)) + " data " +
                                 std::to_string(static_cast<int>(data)) + " step " +
                                 std::to_string(step);
        std::vector<uint8_t> cpu_frame, gpu_frame;
        EncodeStats cpu_stats, gpu_stats;
        const Status cs =
            EncodeFrame(*cpu, {x.data(), DType::kFloat32, shape, {}, step}, &cpu_frame, &cpu_stats);
        const Status gs = EncodeOn(*gpu, x, shape, step, &gpu_frame, &gpu_stats);
        ASSERT_EQ(gs.code(), cs.code()) << what << ": " << gs.ToString() << " vs " << cs.ToString();
        ASSERT_EQ(gs.message(), cs.message()) << what;
        if (cs.ok()) {
          ASSERT_TRUE(gpu_frame == cpu_frame) << what << ": frames differ";
          EXPECT_NEAR(gpu_stats.rel_error, cpu_stats.rel_error, 1e-9 + 1e-9 * cpu_stats.rel_error)
              << what;
        }
        ExpectSameResidual(*cpu, *gpu, what);
      }
    }
  }
}

TEST(CocktailCuda, OverflowingResidualFailsLikeTheCpuCodec) {
  GEOTRAIN_SKIP_WITHOUT_GPU();
  const CodecConfig config = CocktailConfig(MaskMode::kRolling, 0.1, 0.2, 4, 128, true);
  auto cpu = MakeCpu(config);
  auto gpu = MakeGpu(config);
  std::vector<float> big(1000, 3e38f);
  ASSERT_TRUE(cpu->RestoreResidual({1000}, big).ok());
  ASSERT_TRUE(gpu->RestoreResidual({1000}, big).ok());
  ExpectSameResidual(*cpu, *gpu, "restored");
  std::vector<uint8_t> cpu_frame, gpu_frame;
  const Status cs = EncodeFrame(*cpu, {big.data(), DType::kFloat32, {1000}}, &cpu_frame);
  const Status gs = EncodeOn(*gpu, big, {1000}, 0, &gpu_frame);
  EXPECT_EQ(gs.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(gs.message(), cs.message());
  EXPECT_NE(gs.message().find("overflows float32"), std::string::npos) << gs.ToString();
  ExpectSameResidual(*cpu, *gpu, "after the failure");  // zeros
  // Restore refuses what the CPU codec refuses.
  big[3] = std::numeric_limits<float>::infinity();
  EXPECT_EQ(gpu->RestoreResidual({1000}, big).message(),
            cpu->RestoreResidual({1000}, big).message());
}

TEST(CocktailCuda, ReconfigureKeepsOrDropsTheResidualLikeTheCpuCodec) {
  GEOTRAIN_SKIP_WITHOUT_GPU();
  CodecConfig config = CocktailConfig(MaskMode::kSeeded, 0.2, 0.2, 4, 128, true);
  auto cpu = MakeCpu(config);
  auto gpu = MakeGpu(config);
  for (uint64_t step = 0; step < 8; ++step) {
    if (step == 3) {  // other ratios and bits, residual kept
      config.random_ratio = 0.5;
      config.topk_ratio = 0.1;
      config.quant_bits = 3;
      config.mask_mode = MaskMode::kRolling;
    }
    if (step == 6) config.error_feedback = false;  // residual dropped
    ASSERT_TRUE(cpu->Reconfigure(config).ok());
    ASSERT_TRUE(gpu->Reconfigure(config).ok());
    const std::vector<float> x = MakeGaussian(5000, step);
    std::vector<uint8_t> cpu_frame, gpu_frame;
    ASSERT_TRUE(EncodeFrame(*cpu, {x.data(), DType::kFloat32, {5000}, {}, step}, &cpu_frame).ok());
    ASSERT_TRUE(EncodeOn(*gpu, x, {5000}, step, &gpu_frame).ok());
    ASSERT_TRUE(gpu_frame == cpu_frame) << "step " << step;
    ExpectSameResidual(*cpu, *gpu, "step " + std::to_string(step));
  }
}

// ----- Hostile frames: the device decoder refuses what the CPU decoder refuses ---------------

class CocktailCudaHostile : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!DeviceAvailable()) GTEST_SKIP() << "no CUDA device: this test runs on a GPU machine";
    for (MaskMode mode : {MaskMode::kRolling, MaskMode::kSeeded}) {
      const CodecConfig config = CocktailConfig(mode, 0.1, 0.2, 4, 128, false);
      auto cpu = MakeCodec(config);
      ASSERT_TRUE(cpu.ok());
      const std::vector<float> x = MakeGaussian(1003, 13);
      good_.push_back(CpuFrame(**cpu, x, {1003}, {}, 4));
    }
    auto gpu = MakeCudaCodec(CocktailConfig(MaskMode::kRolling, 0.1, 0.2, 4, 128, false));
    ASSERT_TRUE(gpu.ok());
    gpu_ = std::move(*gpu);
    auto cpu = MakeCodec(CocktailConfig(MaskMode::kRolling, 0.1, 0.2, 4, 128, false));
    ASSERT_TRUE(cpu.ok());
    cpu_ = std::move(*cpu);
  }

  // Both decoders' verdicts on a frame (after ParseFrame, so params and payload can be anything):
  // the same status; on success the same values.
  void ExpectSameVerdict(const std::vector<uint8_t>& params, const std::vector<uint8_t>& payload,
                         int64_t elements, const std::string& what, bool* ok = nullptr) {
    FrameContent c;
    c.codec = CodecId::kCocktail;
    c.shape = {elements};
    c.elements = elements;
    c.params = Span<const uint8_t>(params.data(), params.size());
    c.payload = Span<const uint8_t>(payload.data(), payload.size());
    std::vector<float> want(elements + 16, 7.0f);
    const Status cs = cpu_->Decode(c, want.data());
    DeviceArray<float> out;
    ASSERT_TRUE(out.Reserve(elements + 16).ok());
    std::vector<float> sentinel(elements + 16, 7.0f);
    ASSERT_TRUE(CopyToDevice(out.data(), sentinel.data(), sentinel.size() * 4, nullptr).ok());
    const Status gs = gpu_->Decode(c, out.data());
    ASSERT_TRUE(Synchronize(nullptr, "test decode").ok());
    ASSERT_EQ(gs.code(), cs.code()) << what << ": " << gs.ToString() << " vs " << cs.ToString();
    ASSERT_EQ(gs.message(), cs.message()) << what;
    std::vector<float> got = ToHost(out, elements + 16);
    if (cs.ok()) {
      ExpectSameFloats(got, want, what);
    } else {
      for (float v : got) ASSERT_EQ(v, 7.0f) << what << ": written before refusing";
    }
    if (ok) *ok = cs.ok();
  }

  // Splits a frame into params and payload (no zstd).
  void Split(const std::vector<uint8_t>& frame, std::vector<uint8_t>* params,
             std::vector<uint8_t>* payload, int64_t* elements) {
    std::vector<uint8_t> scratch;
    FrameContent c;
    ASSERT_TRUE(ParseFrame(frame, FrameLimits(), &scratch, &c).ok());
    params->assign(c.params.begin(), c.params.end());
    payload->assign(c.payload.begin(), c.payload.end());
    *elements = c.elements;
  }

  std::vector<std::vector<uint8_t>> good_;
  std::unique_ptr<CudaCodec> gpu_;
  std::unique_ptr<Codec> cpu_;
};

TEST_F(CocktailCudaHostile, TargetedCorruptionsGetTheCpuDecodersErrors) {
  for (const auto& frame : good_) {
    std::vector<uint8_t> params, payload;
    int64_t n = 0;
    Split(frame, &params, &payload, &n);
    bool ok = false;
    ExpectSameVerdict(params, payload, n, "unmodified", &ok);
    EXPECT_TRUE(ok);
    const size_t kept_at = params.size() - 6 - 8;  // u64 kept before u8 bits, u8 mode, u32 group
    auto with = [&](size_t at, auto value) {
      std::vector<uint8_t> p = params;
      std::memcpy(p.data() + at, &value, sizeof(value));
      return p;
    };
    uint64_t k;
    std::memcpy(&k, params.data() + kept_at, 8);
    ExpectSameVerdict(with(kept_at, k + 1), payload, n, "kept + 1");
    ExpectSameVerdict(with(kept_at, k - 1), payload, n, "kept - 1");
    ExpectSameVerdict(with(kept_at, uint64_t{0}), payload, n, "kept 0");
    ExpectSameVerdict(with(kept_at, ~uint64_t{0}), payload, n, "kept huge");
    ExpectSameVerdict(with(0, uint8_t{7}), payload, n, "mask mode");
    ExpectSameVerdict(with(9, uint64_t{0}), payload, n, "stride 0 / seed 0");
    ExpectSameVerdict(with(9, ~uint64_t{0}), payload, n, "stride / seed huge");
    ExpectSameVerdict(with(kept_at + 8, uint8_t{9}), payload, n, "bits 9");
    ExpectSameVerdict(with(kept_at + 8, uint8_t{1}), payload, n, "bits 1");
    ExpectSameVerdict(with(kept_at + 9, uint8_t{0}), payload, n, "scale mode");
    ExpectSameVerdict(with(kept_at + 10, uint32_t{0}), payload, n, "group 0");
    ExpectSameVerdict(with(kept_at + 10, uint32_t{5}), payload, n, "group 5");
    std::vector<uint8_t> bad = payload;
    bad[0] ^= 0x80;
    ExpectSameVerdict(params, bad, n, "bitmap bit");
    bad = payload;
    const uint64_t m = frame == good_[0] ? 100 : 0;
    if (m % 8 != 0) {
      bad[m / 8] |= 0x01;
      ExpectSameVerdict(params, bad, n, "padding bit");
    }
    for (size_t cut = 0; cut < payload.size(); cut += 3) {
      ExpectSameVerdict(params, std::vector<uint8_t>(payload.begin(), payload.begin() + cut), n,
                        "payload cut at " + std::to_string(cut));
    }
    bad = payload;
    bad.push_back(0);
    ExpectSameVerdict(params, bad, n, "payload too long");
    ExpectSameVerdict(params, payload, 2003, "more elements");
    // An infinite fp16 scale in the fixpoint block (after the bitmap).
    const size_t bitmap_bytes = payload.size() - (1 + 2 * ((k + 127) / 128) + (4 * k + 7) / 8);
    bad = payload;
    bad[bitmap_bytes + 1] = 0x00;
    bad[bitmap_bytes + 2] = 0x7c;
    ExpectSameVerdict(params, bad, n, "infinite scale");
  }
}

TEST_F(CocktailCudaHostile, RandomCorruptionsGetTheCpuDecodersVerdicts) {
  SplitMix64 rng(99);
  for (int trial = 0; trial < 400; ++trial) {
    std::vector<uint8_t> params, payload;
    int64_t n = 0;
    Split(good_[trial % 2], &params, &payload, &n);
    std::vector<uint8_t>& target = rng.Next() % 2 ? params : payload;
    const int flips = 1 + static_cast<int>(rng.Next() % 3);
    for (int f = 0; f < flips; ++f) target[rng.Next() % target.size()] ^= 1u << (rng.Next() % 8);
    if (rng.Next() % 4 == 0) target.resize(rng.Next() % (target.size() + 1));
    ExpectSameVerdict(params, payload, n, "trial " + std::to_string(trial));
  }
}

TEST_F(CocktailCudaHostile, DamagedFrameIsRefusedByDecodeDeviceFrame) {
  std::vector<uint8_t> frame = good_[0];
  frame[60] ^= 4;  // checksum
  DeviceDecodedTensor out;
  EXPECT_EQ(DecodeDeviceFrame(*gpu_, frame, FrameLimits(), &out).code(), StatusCode::kDataLoss);
}

// Not a benchmark: a rough timing of one large encode, printed for the record.
TEST(CocktailCuda, LargeTensorTiming) {
  GEOTRAIN_SKIP_WITHOUT_GPU();
  const int64_t n = int64_t{1} << 25;  // 32M values (128 MiB)
  for (MaskMode mode : {MaskMode::kRolling, MaskMode::kSeeded}) {
    const CodecConfig config = CocktailConfig(mode, 0.1, 0.2, 4, 128, true);
    auto cpu = MakeCpu(config);
    auto gpu = MakeGpu(config);
    const std::vector<float> x = MakeGaussian(n, 3);
    DeviceArray<float> device = ToDevice(x);
    std::vector<uint8_t> gpu_frame, cpu_frame;
    const TensorView view{device.data(), DType::kFloat32, {n}, {}, 1};
    ASSERT_TRUE(EncodeDeviceFrame(*gpu, view, &gpu_frame).ok());  // warm-up (allocations)
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_TRUE(
        EncodeDeviceFrame(*gpu, TensorView{device.data(), DType::kFloat32, {n}, {}, 2}, &gpu_frame)
            .ok());
    const auto t1 = std::chrono::steady_clock::now();
    ASSERT_TRUE(EncodeFrame(*cpu, {x.data(), DType::kFloat32, {n}, {}, 1}, &cpu_frame).ok());
    const auto t2 = std::chrono::steady_clock::now();
    ASSERT_TRUE(EncodeFrame(*cpu, {x.data(), DType::kFloat32, {n}, {}, 2}, &cpu_frame).ok());
    const auto t3 = std::chrono::steady_clock::now();
    EXPECT_TRUE(gpu_frame == cpu_frame);
    ExpectSameResidual(*cpu, *gpu, "large");
    DeviceDecodedTensor decoded;
    const auto t4 = std::chrono::steady_clock::now();
    ASSERT_TRUE(DecodeDeviceFrame(*gpu, gpu_frame, FrameLimits(), &decoded).ok());
    const auto t5 = std::chrono::steady_clock::now();
    auto ms = [](auto a, auto b) {
      return std::chrono::duration<double, std::milli>(b - a).count();
    };
    std::printf("cocktail %s n=%lld: GPU encode %.2f ms, CPU encode %.2f ms, GPU decode %.2f ms\n",
                mode == MaskMode::kRolling ? "rolling" : "seeded", static_cast<long long>(n),
                ms(t0, t1), ms(t2, t3), ms(t4, t5));
  }
}

}  // namespace
}  // namespace geotrain::compression::cuda
