// The CUDA tah codec writes TahCodec's frames byte for byte and decodes them to TahCodec's values
// bit for bit; it refuses what TahCodec refuses, with the same Status. Runs on a GPU (label gpu),
// skips elsewhere. The CPU-side evidence for the same arithmetic is
// tests/compression/cuda_tah_math_test.cc.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "common/half.h"
#include "common/hash_random.h"
#include "compression/synthetic_tensors.h"
#include "compression/tah_format.h"
#include "tests/compression/cuda/cuda_test_util.h"
#include "tests/compression/tah_test_util.h"

namespace geotrain::compression::cuda {
namespace {

using tah_test::TahConfig;

// Activation-like rows plus a spike in every fifth tile: every setting rotates tiles.
std::vector<float> Spiky(int64_t rows, int64_t cols, int tile, uint64_t seed) {
  std::vector<float> x = MakeActivationLike(rows, cols, seed, 6);
  for (int64_t k = 0; k < rows * cols / tile; k += 5) x[k * tile + (k * 7) % tile] = 90.0f;
  return x;
}

// Encodes on both, compares the frames, decodes the CPU frame on both and compares the values.
void ExpectGpuMatchesCpu(const CodecConfig& config, const std::vector<float>& x, const Shape& shape,
                         const std::string& what) {
  auto cpu = MakeCodec(config);
  auto gpu = MakeCudaCodec(config);
  ASSERT_TRUE(cpu.ok() && gpu.ok()) << what;
  const std::vector<uint8_t> expected = CpuFrame(**cpu, x, shape);
  const std::vector<uint8_t> got = GpuFrame(**gpu, x, shape);
  ASSERT_EQ(got.size(), expected.size()) << what;
  if (got != expected) {
    size_t at = 0;
    while (got[at] == expected[at]) ++at;
    FAIL() << what << ": frames differ first at byte " << at << " of " << got.size();
  }
  DecodedTensor cpu_decoded;
  ASSERT_TRUE(DecodeFrame(**cpu, expected, FrameLimits(), &cpu_decoded).ok()) << what;
  ExpectSameFloats(GpuDecode(**gpu, expected), cpu_decoded.values, what + " (decode)");
}

struct Case {
  int tile;
  EntropyUnit unit;
  int high_bits, low_bits;
  double ratio, tau;
  int64_t rows, cols;
  float multiplier;  // 3000: beyond fp16, float32 zero/scale
};

std::string Name(const Case& c) {
  return "G=" + std::to_string(c.tile) + (c.unit == EntropyUnit::kToken ? " token" : " tile") +
         " bits " + std::to_string(c.high_bits) + "/" + std::to_string(c.low_bits) + " ratio " +
         std::to_string(c.ratio) + " tau " + std::to_string(c.tau) + " " + std::to_string(c.rows) +
         "x" + std::to_string(c.cols) + " x" + std::to_string(c.multiplier);
}

class TahCudaTest : public ::testing::TestWithParam<Case> {};

TEST_P(TahCudaTest, FramesAndDecodedValuesMatchTheCpuCodec) {
  GEOTRAIN_SKIP_WITHOUT_GPU();
  const Case c = GetParam();
  std::vector<float> x = Spiky(c.rows, c.cols, c.tile, c.tile * 31 + c.high_bits);
  for (float& v : x) v *= c.multiplier;
  ExpectGpuMatchesCpu(TahConfig(c.tile, c.high_bits, c.low_bits, c.ratio, c.unit, c.tau), x,
                      {c.rows, c.cols}, Name(c));
}

std::vector<Case> AllCases() {
  std::vector<Case> cases;
  for (EntropyUnit unit : {EntropyUnit::kToken, EntropyUnit::kTile}) {
    for (int tile = 8; tile <= 1024; tile *= 2) {  // every threads-per-tile instantiation
      cases.push_back({tile, unit, 4, 3, 0.8, 2.0, 37, 2048, 1.0f});
      cases.push_back({tile, unit, 8, 2, 0.5, 1.0, 5, 4096, 1.0f});  // τ = 1: every tile rotates
    }
    for (int tile : {8, 64, 1024}) {
      cases.push_back({tile, unit, 2, 7, 0.3, 2.0, 16, 3072, 3000.0f});  // f32 zero/scale
      cases.push_back({tile, unit, 5, 5, 1.0, 2.5, 3, 1024, 1.0f});
      cases.push_back({tile, unit, 6, 3, 0.0, 2.0, 3, 1024, 1.0f});
    }
    cases.push_back({64, unit, 4, 3, 0.8, 2.0, 4 * 1024, 1600, 1.0f});  // README's shape
    cases.push_back({8, unit, 4, 3, 0.8, 2.0, 1024, 1600, 1.0f});       // 2·10^5 tile units
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(TahSettings, TahCudaTest, ::testing::ValuesIn(AllCases()));

TEST(TahCuda, HostileInputsMatchTheCpuCodec) {
  GEOTRAIN_SKIP_WITHOUT_GPU();
  struct Input {
    std::string name;
    std::vector<float> x;
    Shape shape;
  };
  std::vector<Input> inputs;
  {
    const std::vector<float> row = MakeGaussian(256, 9);
    std::vector<float> x;
    for (int r = 0; r < 24; ++r) x.insert(x.end(), row.begin(), row.end());
    inputs.push_back({"identical rows (tied entropies)", x, {24, 256}});
  }
  {
    SplitMix64 shuffle(13);
    const std::vector<float> base = MakeGaussian(128, 12, 2.0f);
    inputs.push_back({"permuted rows (near-tied entropies)",
                      tah_test::PermutedCopies(base, 96, &shuffle),
                      {96, 128}});
  }
  {
    std::vector<float> x(32 * 128, 0.0f);
    std::fill(x.begin() + 128, x.begin() + 256, 0.75f);
    std::fill(x.begin() + 256, x.begin() + 384, -2.5f);
    std::fill(x.begin() + 384, x.begin() + 512, -0.0f);
    inputs.push_back({"zero and constant tiles", x, {32, 128}});
  }
  for (float top : {65504.0f, 8188.0f, 8187.9f}) {
    std::vector<float> x = MakeGaussian(8 * 256, 4);
    x[77] = top;
    x[300] = -top;
    inputs.push_back({"fp16 edge " + std::to_string(top), x, {8, 256}});
  }
  {
    std::vector<float> x(256, 1e37f);
    x[1] = 5e36f;
    x[130] = -2e37f;
    inputs.push_back({"huge values", x, {256}});
  }
  {
    std::vector<float> x = MakeGaussian(16 * 64, 14);
    for (size_t i = 64; i < x.size(); ++i) x[i] *= 1e-42f;
    x[3] = 2e6f;
    inputs.push_back({"f32 with subnormal tiles", x, {16, 64}});
  }
  {
    std::vector<float> x = MakeGaussian(64 * 64, 8);
    for (float& v : x) v = BFloat16ToFloat(FloatToBFloat16(v * 4));
    inputs.push_back({"bf16 duplicates", x, {64, 64}});
  }
  inputs.push_back({"rank one", MakeGaussian(64, 3), {64}});
  inputs.push_back({"empty rows", {}, {0, 64}});
  inputs.push_back({"empty cols", {}, {3, 0}});
  for (const Input& in : inputs) {
    for (EntropyUnit unit : {EntropyUnit::kToken, EntropyUnit::kTile}) {
      for (int tile : {8, 32, 64}) {
        if (in.shape.back() % tile != 0) continue;
        for (double tau : {1.0, 2.0}) {
          ExpectGpuMatchesCpu(TahConfig(tile, 4, 3, 0.8, unit, tau), in.x, in.shape,
                              in.name + " G=" + std::to_string(tile));
          if (HasFatalFailure()) return;
        }
      }
    }
  }
}

// Encode errors carry TahCodec's message.
Status GpuEncodeStatus(const CodecConfig& config, const std::vector<float>& x, Shape shape) {
  auto gpu = MakeCudaCodec(config);
  EXPECT_TRUE(gpu.ok());
  DeviceArray<float> device = ToDevice(x);
  std::vector<uint8_t> frame;
  return EncodeDeviceFrame(**gpu, TensorView{device.data(), DType::kFloat32, shape}, &frame);
}
Status CpuEncodeStatus(const CodecConfig& config, const std::vector<float>& x, Shape shape) {
  auto cpu = MakeCodec(config);
  EXPECT_TRUE(cpu.ok());
  std::vector<uint8_t> frame;
  return EncodeFrame(**cpu, TensorView{x.data(), DType::kFloat32, shape}, &frame);
}

TEST(TahCuda, RefusesWhatTheCpuCodecRefusesWithItsMessage) {
  GEOTRAIN_SKIP_WITHOUT_GPU();
  const CodecConfig config = TahConfig(32, 4, 3, 0.8, EntropyUnit::kToken);
  std::vector<float> x(128, 1.0f);
  x[77] = std::numeric_limits<float>::quiet_NaN();
  x[100] = std::numeric_limits<float>::infinity();
  std::vector<std::pair<std::vector<float>, Shape>> bad = {{x, {2, 64}}};
  x[77] = 1.0f;
  x[3] = -std::numeric_limits<float>::infinity();
  bad.push_back({x, {2, 64}});
  std::vector<float> unsafe(64, 3e38f);
  unsafe[1] = -3e38f;
  bad.push_back({unsafe, {64}});
  bad.push_back({std::vector<float>(200, 1.0f), {2, 100}});  // 32 does not divide 100
  for (const auto& [values, shape] : bad) {
    const Status cpu = CpuEncodeStatus(config, values, shape);
    const Status gpu = GpuEncodeStatus(config, values, shape);
    EXPECT_FALSE(cpu.ok());
    EXPECT_EQ(gpu.code(), cpu.code()) << gpu.ToString() << " vs " << cpu.ToString();
    EXPECT_EQ(gpu.message(), cpu.message());
  }
  EXPECT_NE(GpuEncodeStatus(config, bad[0].first, {2, 64}).message().find("input[77]: NaN"),
            std::string::npos);
}

TEST(TahCuda, CorruptFramesAreRefusedLikeTheCpuDecoderBeforeAnythingIsWritten) {
  GEOTRAIN_SKIP_WITHOUT_GPU();
  std::vector<float> x = MakeActivationLike(10, 96, 17, 3);
  x[5] = 80.0f;
  x[96 + 40] = -70.0f;
  const CodecConfig config = TahConfig(16, 4, 3, 0.5, EntropyUnit::kToken);
  auto cpu = MakeCodec(config);
  auto gpu = MakeCudaCodec(config);
  ASSERT_TRUE(cpu.ok() && gpu.ok());
  const std::vector<uint8_t> frame = CpuFrame(**cpu, x, {10, 96});
  FrameContent good;
  std::vector<uint8_t> scratch;
  ASSERT_TRUE(ParseFrame(frame, FrameLimits(), &scratch, &good).ok());
  const std::vector<uint8_t> payload(good.payload.begin(), good.payload.end());
  const std::vector<uint8_t> params(good.params.begin(), good.params.end());
  const std::vector<float> sentinel(x.size(), 12345.0f);
  DeviceArray<float> out = ToDevice(sentinel);
  SplitMix64 rng(5);
  int refused = 0;
  for (int trial = 0; trial < 400; ++trial) {
    std::vector<uint8_t> p = params, q = payload;
    const uint64_t r = rng.Next();
    if (trial % 4 == 0) {
      p[r % p.size()] ^= static_cast<uint8_t>(1u << (r >> 32) % 8);
    } else if (trial % 4 == 3) {
      q.resize(r % q.size());
    } else {
      q[r % q.size()] ^= static_cast<uint8_t>(1u << (r >> 32) % 8);
    }
    FrameContent content = good;
    content.params = Span<const uint8_t>(p.data(), p.size());
    content.payload = Span<const uint8_t>(q.data(), q.size());
    std::vector<float> cpu_out(x.size());
    const Status cpu_status = (*cpu)->Decode(content, cpu_out.data());
    const Status gpu_status = (*gpu)->Decode(content, out.data());
    ASSERT_TRUE(Synchronize(nullptr, "decode").ok());
    ASSERT_EQ(gpu_status.code(), cpu_status.code())
        << trial << ": " << gpu_status.ToString() << " vs " << cpu_status.ToString();
    ASSERT_EQ(gpu_status.message(), cpu_status.message()) << trial;
    if (!gpu_status.ok()) {
      ++refused;
      ExpectSameFloats(ToHost(out, x.size()), sentinel, "untouched after a refusal");
    } else {
      ExpectSameFloats(ToHost(out, x.size()), cpu_out,
                       "accepted corrupt frame " + std::to_string(trial));
      ASSERT_TRUE(CopyToDevice(out.data(), sentinel.data(), 4 * sentinel.size(), nullptr).ok());
    }
  }
  EXPECT_GT(refused, 100);
  // A frame whose checksum no longer matches is refused by the frame layer.
  std::vector<uint8_t> broken = frame;
  broken[broken.size() - 20] ^= 1;
  DeviceDecodedTensor decoded;
  EXPECT_EQ(DecodeDeviceFrame(**gpu, broken, FrameLimits(), &decoded).code(),
            StatusCode::kDataLoss);
}

TEST(TahCuda, UnalignedPointersAndReconfigureKeepTheBytes) {
  GEOTRAIN_SKIP_WITHOUT_GPU();
  const std::vector<float> x = Spiky(8, 512, 64, 2);
  auto gpu = MakeCudaCodec(TahConfig(64, 4, 3, 0.8, EntropyUnit::kToken));
  ASSERT_TRUE(gpu.ok());
  std::vector<float> shifted(x.size() + 1, 0.0f);
  std::copy(x.begin(), x.end(), shifted.begin() + 1);
  DeviceArray<float> device = ToDevice(shifted);
  for (CodecConfig c :
       {TahConfig(64, 4, 3, 0.8, EntropyUnit::kToken), TahConfig(8, 2, 2, 0.1, EntropyUnit::kTile),
        TahConfig(256, 8, 5, 0.5, EntropyUnit::kToken, 1.0),
        TahConfig(512, 3, 4, 0.9, EntropyUnit::kTile, 1.0)}) {
    ASSERT_TRUE((*gpu)->Reconfigure(c).ok());
    auto cpu = MakeCodec(c);
    ASSERT_TRUE(cpu.ok());
    std::vector<uint8_t> got;
    ASSERT_TRUE(
        EncodeDeviceFrame(**gpu, TensorView{device.data() + 1, DType::kFloat32, {8, 512}}, &got)
            .ok());
    const std::vector<uint8_t> expected = CpuFrame(**cpu, x, {8, 512});
    ASSERT_TRUE(got == expected) << c.Describe();
    // Decode into an unaligned device buffer.
    FrameContent content;
    std::vector<uint8_t> scratch;
    ASSERT_TRUE(ParseFrame(expected, FrameLimits(), &scratch, &content).ok());
    DeviceArray<float> out;
    ASSERT_TRUE(out.Reserve(x.size() + 1).ok());
    ASSERT_TRUE((*gpu)->Decode(content, out.data() + 1).ok());
    ASSERT_TRUE(Synchronize(nullptr, "decode").ok());
    std::vector<float> all = ToHost(out, x.size() + 1);
    DecodedTensor cpu_decoded;
    ASSERT_TRUE(DecodeFrame(**cpu, expected, FrameLimits(), &cpu_decoded).ok());
    ExpectSameFloats(std::vector<float>(all.begin() + 1, all.end()), cpu_decoded.values,
                     c.Describe());
  }
}

TEST(TahCuda, HalfPrecisionDeviceInputGivesTheCpuFrame) {
  GEOTRAIN_SKIP_WITHOUT_GPU();
  const CodecConfig config = TahConfig(64, 4, 3, 0.8, EntropyUnit::kTile);
  auto cpu = MakeCodec(config);
  auto gpu = MakeCudaCodec(config);
  ASSERT_TRUE(cpu.ok() && gpu.ok());
  ExpectBFloat16DeviceFrameIsTheCpuFrame(**cpu, **gpu, Spiky(32, 256, 64, 3), {32, 256});
}

// Not a pass/fail check: encode and decode rates of the README's shape, for the record.
TEST(TahCuda, ReportsThroughput) {
  GEOTRAIN_SKIP_WITHOUT_GPU();
  const int64_t rows = 4 * 1024, cols = 1600;
  const std::vector<float> x = MakeActivationLike(rows, cols, 42);
  DeviceArray<float> device = ToDevice(x);
  for (EntropyUnit unit : {EntropyUnit::kToken, EntropyUnit::kTile}) {
    auto gpu = MakeCudaCodec(TahConfig(64, 4, 3, 0.8, unit));
    ASSERT_TRUE(gpu.ok());
    const TensorView view{device.data(), DType::kFloat32, {rows, cols}};
    std::vector<uint8_t> frame;
    ASSERT_TRUE(EncodeDeviceFrame(**gpu, view, &frame).ok());  // warm-up, allocation
    const int reps = 20;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) ASSERT_TRUE(EncodeDeviceFrame(**gpu, view, &frame).ok());
    auto t1 = std::chrono::steady_clock::now();
    DeviceDecodedTensor decoded;
    ASSERT_TRUE(DecodeDeviceFrame(**gpu, frame, FrameLimits(), &decoded).ok());
    auto t2 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) {
      ASSERT_TRUE(DecodeDeviceFrame(**gpu, frame, FrameLimits(), &decoded).ok());
    }
    auto t3 = std::chrono::steady_clock::now();
    const double bytes = 4.0 * rows * cols;
    const double enc = std::chrono::duration<double>(t1 - t0).count() / reps;
    const double dec = std::chrono::duration<double>(t3 - t2).count() / reps;
    std::printf(
        "tah %s units, %lld x %lld: encode %.1f us (%.1f GB/s of float32 input, frame to "
        "host included), decode %.1f us (%.1f GB/s of float32 output, frame from host "
        "included)\n",
        unit == EntropyUnit::kToken ? "token" : "tile", static_cast<long long>(rows),
        static_cast<long long>(cols), enc * 1e6, bytes / enc / 1e9, dec * 1e6, bytes / dec / 1e9);
  }
}

}  // namespace
}  // namespace geotrain::compression::cuda
