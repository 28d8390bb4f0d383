// The CUDA tah codec's arithmetic (compression/tah_math.h) and host frame checks
// (compression/tah_frame_check.h), run on the CPU against the CPU codec's own functions.
//
// Three levels, from the pieces up:
//   1. each GEOTRAIN_HOST_DEVICE function against the CPU function it copies, bit for bit, on
//      random and adversarial values (bit patterns, ties, zeros, subnormals, fp16 limits, inf/NaN);
//      for the scalar quantizer pieces the CPU codec calls itself (fp16 rounding, zero/scale,
//      quantize/dequantize) that is the same source, and tah_kernels_test.cc holds the independent
//      check (against exact directed rounding and the AVX2/F16C paths);
//   2. a host model of every kernel of tah_device.cu, built from those functions with the
//      kernels' thread decomposition (8 lanes and a shuffle-xor tree per tile in pass 1; G/8 groups
//      of 8 values per tile, cross-group butterflies and reductions in pass 2; ranking by a stable
//      sort of (key, index); bitmap ranks from byte prefix counts; one byte per thread for the
//      bitmaps and pivot fields), whose frames must equal TahCodec's byte for byte and whose
//      decoded values must equal TahCodec's bit for bit over many settings and hostile inputs;
//   3. CheckTahFrame against TahCodec::Decode on corrupted frames: same Status, code and message
//      (TahCodec calls CheckTahFrame too; this guards the checks it makes after it).
// No CUDA needed: what only a GPU can check (the shuffles and barriers themselves) is in
// tests/compression/cuda/tah_cuda_test.cc.
//
// The whole tree is built with -ffp-contract=off and the CUDA target with --fmad=false, so
// tah_math.h runs here with the same roundings as on the device.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "common/half.h"
#include "common/hash_random.h"
#include "compression/codec.h"
#include "compression/frame.h"
#include "compression/hadamard.h"
#include "compression/synthetic_tensors.h"
#include "compression/tah_bit_allocation.h"
#include "compression/tah_format.h"
#include "compression/tah_frame_check.h"
#include "compression/tah_math.h"
#include "compression/tah_tile_quantizer.h"
#include "compression/tah_tile_stats.h"
#include "tests/compression/tah_test_util.h"

namespace geotrain::compression::cuda {
namespace {

using tah_test::TahConfig;

using Group = std::array<float, 8>;

bool SameBits(float a, float b) { return FloatBits(a) == FloatBits(b); }

// Floats worth trying: random bit patterns (every exponent, subnormals, NaN and inf included),
// random normals at several scales and the special values.
std::vector<float> InterestingFloats(size_t random_count, uint64_t seed) {
  std::vector<float> v = {0.0f,
                          -0.0f,
                          1.0f,
                          -1.0f,
                          0.5f,
                          2.0f,
                          1e-45f,
                          -1e-45f,
                          1e-40f,
                          1.17549435e-38f,
                          3e38f,
                          -3e38f,
                          FLT_MAX,
                          -FLT_MAX,
                          65504.0f,
                          -65504.0f,
                          65519.0f,
                          65520.0f,
                          -65520.0f,
                          6.1035e-5f,
                          5.96e-8f,
                          2.98e-8f,
                          1e30f,
                          1.0000001f,
                          0.99999994f,
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN()};
  SplitMix64 rng(seed);
  for (size_t i = 0; i < random_count; ++i) {
    const uint64_t r = rng.Next();
    switch (i % 4) {
      case 0:
        v.push_back(BitsToFloat(static_cast<uint32_t>(r)));
        break;
      case 1:
        v.push_back(rng.Normal());
        break;
      case 2:
        v.push_back(rng.Normal() * 30000.0f);
        break;
      default:
        v.push_back(rng.Normal() * std::ldexp(1.0f, static_cast<int>(r % 60) - 40));
        break;
    }
  }
  return v;
}

// ---- 1. Functions ---------------------------------------------------------------------------

TEST(CudaTahMath, FastLog2IsBitIdentical) {
  for (float x : InterestingFloats(200000, 1)) {
    ASSERT_TRUE(SameBits(TahFastLog2(x), FastLog2(x))) << x;
    ASSERT_TRUE(SameBits(TahFastLog2(std::fabs(x)), FastLog2(std::fabs(x)))) << x;
  }
}

TEST(CudaTahMath, DirectedHalfRoundingIsBitIdentical) {
  std::vector<float> values = InterestingFloats(100000, 2);
  for (uint32_t h = 0; h < 0x10000; ++h) {  // every fp16 value and its float neighbours
    const float f = HalfToFloat(static_cast<uint16_t>(h));
    values.push_back(f);
    values.push_back(std::nextafter(f, INFINITY));
    values.push_back(std::nextafter(f, -INFINITY));
  }
  for (float v : values) {
    if (std::isnan(v)) continue;  // never a zero or a scale
    ASSERT_EQ(TahHalfRoundedDown(v), HalfRoundedDown(v)) << v;
    ASSERT_EQ(TahHalfRoundedUp(v), HalfRoundedUp(v)) << v;
  }
}

TEST(CudaTahMath, ScaleChoicesAreBitIdentical) {
  SplitMix64 rng(3);
  std::vector<float> lo, hi;
  std::vector<int32_t> bits;
  const std::vector<float> pool = InterestingFloats(4000, 4);
  for (int i = 0; i < 60000; ++i) {
    float a, b;
    if (i % 3 == 0) {
      a = pool[rng.Next() % pool.size()];
      b = pool[rng.Next() % pool.size()];
    } else {
      const float scale = std::ldexp(1.0f, static_cast<int>(rng.Next() % 40) - 24);
      a = rng.Normal() * scale;
      b = a + std::fabs(rng.Normal()) * scale * (i % 5 == 0 ? 0.0f : 1.0f);
    }
    if (std::isnan(a) || std::isnan(b)) continue;
    if (b < a) std::swap(a, b);
    lo.push_back(a);
    hi.push_back(b);
    bits.push_back(2 + static_cast<int32_t>(rng.Next() % 7));
  }
  // fp16: inputs within the fp16 range, as the codec guarantees.
  std::vector<float> lo16, hi16;
  std::vector<int32_t> bits16;
  for (size_t i = 0; i < lo.size(); ++i) {
    if (lo[i] >= -65504.0f && hi[i] <= 65504.0f) {
      lo16.push_back(lo[i]);
      hi16.push_back(hi[i]);
      bits16.push_back(bits[i]);
    }
  }
  const int64_t n = static_cast<int64_t>(lo16.size());
  ASSERT_GT(n, 30000);
  std::vector<uint16_t> wire(2 * n);
  std::vector<TahTileScale> cpu(n);
  ChooseTahScalesF16(lo16.data(), hi16.data(), bits16.data(), n,
                     reinterpret_cast<uint8_t*>(wire.data()), cpu.data());
  for (int64_t i = 0; i < n; ++i) {
    uint16_t w[2];
    const TahScale s = TahChooseScaleF16(lo16[i], hi16[i], bits16[i], w);
    ASSERT_EQ(w[0], wire[2 * i]) << lo16[i] << " " << hi16[i];
    ASSERT_EQ(w[1], wire[2 * i + 1]) << lo16[i] << " " << hi16[i];
    ASSERT_TRUE(SameBits(s.zero, cpu[i].zero));
    ASSERT_TRUE(SameBits(s.scale, cpu[i].scale));
    uint8_t bytes[4];
    TahWriteScaleF16(w, 0, bytes);
    ASSERT_EQ(0, std::memcmp(bytes, &wire[2 * i], 4));
    const TahScale back = TahReadScale(bytes, 0, false);
    ASSERT_TRUE(SameBits(back.zero, s.zero) && SameBits(back.scale, s.scale));
  }
  // f32 and the safety test, over everything (also ranges that overflow).
  for (size_t i = 0; i < lo.size(); ++i) {
    const TahTileScale cpu32 = ChooseTahTileScaleF32(lo[i], hi[i], bits[i]);
    const TahScale s = TahChooseScaleF32(lo[i], hi[i], bits[i]);
    ASSERT_TRUE(SameBits(s.zero, cpu32.zero) && SameBits(s.scale, cpu32.scale))
        << lo[i] << " " << hi[i];
    for (int g : {8, 64, 1024}) {
      for (bool rotated : {false, true}) {
        ASSERT_EQ(TahScaleIsSafe(s, bits[i], g, rotated),
                  TahTileScaleIsSafe(cpu32, bits[i], g, rotated))
            << lo[i] << " " << hi[i];
      }
    }
    uint8_t bytes[8];
    TahWriteScaleF32(s, 0, bytes);
    ASSERT_EQ(0, std::memcmp(bytes, &cpu32, 8));
  }
  // Spans whose step falls below FLT_MIN (clamped) or into subnormals.
  for (float a : {0.0f, -1e-40f, 1e-45f, -3e-39f, 1e-38f, 5.0f}) {
    for (float span : {1e-45f, 1e-42f, 1e-40f, 3e-38f, 1e-37f, 6e-38f}) {
      const float b = a + span;
      for (int bits = 2; bits <= 8; ++bits) {
        const TahTileScale cpu32 = ChooseTahTileScaleF32(a, b, bits);
        const TahScale s = TahChooseScaleF32(a, b, bits);
        ASSERT_TRUE(SameBits(s.zero, cpu32.zero) && SameBits(s.scale, cpu32.scale))
            << a << " " << b;
      }
    }
  }
  // Hostile zero/scale pairs.
  for (float z : pool) {
    for (float sc : {0.0f, -0.0f, -1.0f, 1e-30f, 1e30f, 3e38f, NAN, INFINITY, 1.0f}) {
      const TahTileScale c{z, sc};
      for (int b : {2, 8}) {
        ASSERT_EQ(TahScaleIsSafe(TahScale{z, sc}, b, 1024, true),
                  TahTileScaleIsSafe(c, b, 1024, true));
        ASSERT_EQ(TahScaleIsSafe(TahScale{z, sc}, b, 8, false), TahTileScaleIsSafe(c, b, 8, false));
      }
    }
  }
}

TEST(CudaTahMath, EntropiesAndKeysAreBitIdentical) {
  const std::vector<float> pool = InterestingFloats(20000, 5);
  TahTileStats s;
  SplitMix64 rng(6);
  for (int i = 0; i < 50000; ++i) {
    float sum = pool[rng.Next() % pool.size()];
    float log_sum = pool[rng.Next() % pool.size()];
    if (i % 2) {  // plausible pairs: Σ|x| > 0 and Σ|x| log|x| of a similar size
      sum = std::fabs(sum);
      log_sum = sum * (rng.Normal() * 4);
    }
    s.abs_sum.push_back(sum);
    s.abs_log_sum.push_back(log_sum);
  }
  const int64_t n = static_cast<int64_t>(s.abs_sum.size());
  std::vector<float> cpu(n), scalar(n);
  TahTileEntropies(s, n, cpu.data());
  TahTileEntropiesScalar(s, n, scalar.data());
  for (int64_t k = 0; k < n; ++k) {
    const float h = TahTileEntropy(s.abs_sum[k], s.abs_log_sum[k]);
    ASSERT_TRUE(SameBits(h, cpu[k])) << s.abs_sum[k] << " " << s.abs_log_sum[k];
    ASSERT_TRUE(SameBits(h, scalar[k]));
  }
  for (int i = 0; i < 100000; ++i) {
    double sum = static_cast<double>(pool[rng.Next() % pool.size()]) * (1 + rng.Uniform());
    double log_sum = static_cast<double>(pool[rng.Next() % pool.size()]) * rng.Normal();
    if (i % 7 == 0) sum = 1e300 * rng.Uniform();
    if (i % 11 == 0) log_sum = -std::numeric_limits<double>::infinity();
    if (i % 13 == 0) sum = 1e-310;
    const float a = TahTokenEntropy(sum, log_sum), b = TahUnitEntropy(sum, log_sum);
    ASSERT_TRUE(SameBits(a, b)) << sum << " " << log_sum;
  }
  // Keys order like the allocator's: checked through the allocator itself on ties and zeros.
  TahBitAllocator allocator;
  std::vector<float> entropy = InterestingFloats(3000, 7);
  for (float& e : entropy) e = std::isfinite(e) ? std::round(e * 4) / 4 : 0.0f;  // many ties
  entropy[0] = -0.0f;
  entropy[1] = 0.0f;
  const int64_t units = static_cast<int64_t>(entropy.size());
  for (double ratio : {0.01, 0.3, 0.5, 0.8, 0.999}) {
    std::vector<uint8_t> cpu_high;
    allocator.Allocate(entropy.data(), units, ratio, &cpu_high);
    std::vector<uint32_t> order(units);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      return TahOrderedKey(entropy[a]) < TahOrderedKey(entropy[b]);
    });
    const int64_t low = units - HighUnitCount(units, ratio);
    std::vector<uint8_t> high(units);
    for (int64_t p = 0; p < units; ++p) high[order[p]] = p >= low;
    ASSERT_EQ(high, cpu_high) << ratio;
  }
}

TEST(CudaTahMath, OutlierTestIsTheCodecs) {
  // FindOutliers' expressions, evaluated the way tah_codec.cc writes them.
  std::vector<float> pool = InterestingFloats(3000, 8);
  for (int g = 8; g <= 1024; g *= 2) {  // tops around the fp16 reach limit of a rotated tile
    float t = static_cast<float>(65504.0 / (std::sqrt(static_cast<double>(g)) * (1.0 + 1e-5)));
    for (int i = 0; i < 64; ++i) t = std::nextafter(t, 0.0f);
    for (int i = 0; i < 128; ++i, t = std::nextafter(t, INFINITY)) pool.push_back(t);
  }
  for (float top : pool) {
    top = std::fabs(top);
    if (std::isnan(top)) continue;
    for (float second : {0.0f, top, top * 0.5f, std::nextafter(top * 0.5f, 0.0f), top / 3,
                         std::nextafter(top * 0.5f, INFINITY)}) {
      for (double tau : {1.0, 2.0, 2.5, 1e6}) {
        const bool cpu = top > 0 && top <= 1e30f && top >= tau * static_cast<double>(second);
        ASSERT_EQ(TahIsRotated(top, second, tau), cpu);
        for (int g : {8, 64, 1024}) {
          const double sqrt_g = std::sqrt(static_cast<double>(g));
          const double reach = cpu ? top * sqrt_g * (1.0 + 1e-5) : top;
          ASSERT_EQ(TahFitsHalf(top, cpu, sqrt_g), reach <= 65504.0f) << top;
        }
      }
    }
  }
}

// The CPU quantizer (AVX2 where built) against group-by-group quantize/pack and unpack/dequantize.
TEST(CudaTahMath, CodeGroupsAreTheTileQuantizers) {
  for (int g = 8; g <= 1024; g *= 2) {
    for (int bits = 2; bits <= 8; ++bits) {
      std::vector<float> x = MakeGaussian(g, 100 * g + bits, 3.0f);
      x[g / 2] = 40.0f;
      x[1] = x[2];  // a tie
      float lo = *std::min_element(x.begin(), x.end()), hi = *std::max_element(x.begin(), x.end());
      for (bool f32 : {false, true}) {
        TahTileScale cpu_scale;
        TahScale scale;
        if (f32) {
          cpu_scale = ChooseTahTileScaleF32(lo, hi, bits);
          scale = TahChooseScaleF32(lo, hi, bits);
        } else {
          uint16_t w[2];
          const int32_t b = bits;
          ChooseTahScalesF16(&lo, &hi, &b, 1, reinterpret_cast<uint8_t*>(w), &cpu_scale);
          scale = TahChooseScaleF16(lo, hi, bits, w);
        }
        const size_t bytes = static_cast<size_t>(g) * bits / 8;
        std::vector<uint8_t> cpu(bytes), model(bytes);
        QuantizeTahTile(x.data(), g, bits, cpu_scale, cpu.data(), bytes, nullptr);
        double err = 0, norm = 0;
        for (int j = 0; j < g / 8; ++j) {
          uint8_t codes[8];
          TahQuantizeGroup(x.data() + 8 * j, scale, bits, codes, &err, &norm);
          TahStoreGroup(codes, bits, model.data() + j * bits);
        }
        ASSERT_EQ(model, cpu) << "g=" << g << " bits=" << bits << " f32=" << f32;
        std::vector<float> cpu_out(g), model_out(g);
        DequantizeTahTile(cpu.data(), bytes, g, bits, cpu_scale, cpu_out.data());
        for (int j = 0; j < g / 8; ++j) {
          uint8_t codes[8];
          TahLoadGroup(model.data() + j * bits, bits, codes);
          TahDequantizeGroup(codes, scale, model_out.data() + 8 * j);
        }
        ASSERT_EQ(0, std::memcmp(cpu_out.data(), model_out.data(), 4 * g)) << g << " " << bits;
        double cpu_err = 0;
        for (int i = 0; i < g; ++i)
          cpu_err += (x[i] - cpu_out[i]) * static_cast<double>(x[i] - cpu_out[i]);
        EXPECT_NEAR(err, cpu_err, 1e-6 * cpu_err + 1e-12);
      }
    }
  }
}

// ---- Emulation of the kernels' thread groups -------------------------------------------------

// A tile as its P = G/8 threads hold it.
std::vector<Group> ToGroups(const float* tile, int g) {
  std::vector<Group> groups(g / 8);
  for (int j = 0; j < g / 8; ++j) std::copy(tile + 8 * j, tile + 8 * j + 8, groups[j].begin());
  return groups;
}

// GroupHadamard: stages 1, 2, 4 per thread, then exchanges with thread j ^ m.
void EmulateGroupHadamard(std::vector<Group>* groups, float normalizer) {
  const int p = static_cast<int>(groups->size());
  for (Group& v : *groups) TahHadamard8(v.data());
  for (int m = 1; m < p; m <<= 1) {
    const std::vector<Group> before = *groups;
    for (int j = 0; j < p; ++j)
      TahButterflyGroups((*groups)[j].data(), before[j ^ m].data(), (j & m) == 0);
  }
  for (Group& v : *groups) TahScaleGroup(v.data(), normalizer);
}

// GroupSwap.
void EmulateGroupSwap(std::vector<Group>* groups, int pivot) {
  const float v0 = (*groups)[0][0];
  const float vp = TahPick((*groups)[pivot >> 3].data(), pivot & 7);
  for (int j = 0; j < static_cast<int>(groups->size()); ++j) {
    TahSwapPivot((*groups)[j].data(), j, pivot, v0, vp);
  }
}

// A shuffle-xor reduction over the P threads (what every thread ends with; thread 0's value).
template <typename T, typename Op>
T EmulateXorReduce(std::vector<T> values, Op op) {
  for (int m = static_cast<int>(values.size()) / 2; m >= 1; m >>= 1) {
    const std::vector<T> before = values;
    for (size_t j = 0; j < values.size(); ++j) values[j] = op(before[j], before[j ^ m]);
  }
  return values[0];
}

TEST(CudaTahMath, GroupedHadamardIsTheCpuTransform) {
  for (int g = 8; g <= 1024; g *= 2) {
    for (uint64_t seed = 0; seed < 20; ++seed) {
      std::vector<float> x = MakeGaussian(g, seed * 1000 + g, seed % 3 == 0 ? 1e4f : 1.0f);
      if (seed % 4 == 1) x[seed % g] = 1e30f;  // the largest rotated magnitude
      if (seed % 5 == 2) std::fill(x.begin(), x.begin() + g / 2, -0.0f);
      std::vector<float> cpu = x, scalar = x;
      OrthonormalHadamard(cpu.data(), g);
      OrthonormalHadamardScalar(scalar.data(), g);
      std::vector<Group> groups = ToGroups(x.data(), g);
      EmulateGroupHadamard(&groups, HadamardNormalizer(g));
      for (int i = 0; i < g; ++i) {
        ASSERT_TRUE(SameBits(groups[i / 8][i % 8], cpu[i])) << "g=" << g << " i=" << i;
        ASSERT_TRUE(SameBits(groups[i / 8][i % 8], scalar[i])) << "g=" << g << " i=" << i;
      }
    }
  }
}

// TileStats: 8 lanes, then the xor tree 4, 2, 1; lane 0's result.
TahTileStat EmulateTileStats(const float* tile, int g) {
  std::vector<TahLane> lanes(8, TahLaneInit());
  for (int l = 0; l < 8; ++l) {
    for (int i = 0; i < g / 8; ++i) TahLaneAdd(lanes[l], tile[8 * i + l]);
  }
  for (int offset = 4; offset >= 1; offset >>= 1) {
    const std::vector<TahLane> before = lanes;
    for (int l = 0; l < 8; ++l) TahLaneMerge(lanes[l], before[l ^ offset]);
  }
  return TahFinishTile(lanes[0]);
}

TEST(CudaTahMath, LaneStatisticsAreTheCpuStatistics) {
  const std::vector<float> pool = InterestingFloats(5000, 9);
  SplitMix64 rng(10);
  for (int g = 8; g <= 1024; g *= 2) {
    std::vector<float> x;
    for (int t = 0; t < 60; ++t) {
      std::vector<float> tile = MakeGaussian(g, t * 7 + g, t % 2 ? 1.0f : 1000.0f);
      switch (t % 10) {
        case 0:
          std::fill(tile.begin(), tile.end(), 0.0f);
          break;
        case 1:
          std::fill(tile.begin(), tile.end(), -0.0f);
          tile[g - 1] = 0.0f;
          break;
        case 2:
          std::fill(tile.begin(), tile.end(), 3.25f);
          break;  // ties everywhere
        case 3:
          tile[3] = tile[g - 2] = 1e5f;
          break;  // tied maxima
        case 4:
          for (float& v : tile) {  // random finite bit patterns
            do {
              v = pool[rng.Next() % pool.size()];
            } while (!std::isfinite(v));
          }
          break;
        case 5:
          for (float& v : tile) v *= 1e-40f;
          break;  // subnormals
        case 6:
          for (float& v : tile) v = std::round(v * 2) / 2;
          break;  // many equal |x|
        case 7:
          tile[0] = 3e38f;
          tile[1] = 3e38f;
          break;  // Σ|x| overflows
        case 8:
          tile[g / 3] = -65504.0f;
          break;
        default:
          break;
      }
      x.insert(x.end(), tile.begin(), tile.end());
    }
    const int64_t tiles = static_cast<int64_t>(x.size()) / g;
    TahTileStats cpu;
    ComputeTahTileStats(x.data(), tiles, g, &cpu);
    for (int64_t k = 0; k < tiles; ++k) {
      const TahTileStat m = EmulateTileStats(x.data() + k * g, g);
      ASSERT_TRUE(SameBits(m.min, cpu.min[k])) << g << " " << k;
      ASSERT_TRUE(SameBits(m.max, cpu.max[k])) << g << " " << k;
      ASSERT_TRUE(SameBits(m.abs_max, cpu.abs_max[k])) << g << " " << k;
      ASSERT_TRUE(SameBits(m.abs_second, cpu.abs_second[k])) << g << " " << k;
      ASSERT_TRUE(SameBits(m.abs_sum, cpu.abs_sum[k])) << g << " " << k;
      ASSERT_TRUE(SameBits(m.abs_log_sum, cpu.abs_log_sum[k])) << g << " " << k;
      // The pivot search: min over the groups' first matches is TahFirstIndexOfAbs.
      std::vector<int> firsts;
      for (int j = 0; j < g / 8; ++j) {
        firsts.push_back(TahGroupPivot(x.data() + k * g + 8 * j, cpu.abs_max[k], j, g));
      }
      const int first = EmulateXorReduce(firsts, [](int a, int b) { return std::min(a, b); });
      ASSERT_EQ(first < g ? first : 0, TahFirstIndexOfAbs(x.data() + k * g, g, cpu.abs_max[k]));
    }
  }
}

TEST(CudaTahMath, BitmapsFieldsAndRanksArePackFieldsAndPackBitmap) {
  SplitMix64 rng(11);
  for (uint64_t n : {1u, 7u, 8u, 9u, 63u, 64u, 65u, 1000u, 4099u}) {
    std::vector<uint8_t> flags(n);
    for (auto& f : flags) f = rng.Next() % 3 == 0;
    std::vector<uint8_t> cpu(BitmapBytes(n)), model(BitmapBytes(n));
    PackBitmap(flags.data(), n, cpu.data());
    for (uint64_t q = 0; q < model.size(); ++q) model[q] = TahBitmapByte(flags.data(), n, q);
    ASSERT_EQ(model, cpu);
    std::vector<uint32_t> prefix(model.size() + 1, 0);
    for (size_t q = 0; q < model.size(); ++q)
      prefix[q + 1] = prefix[q] + __builtin_popcount(model[q]);
    uint64_t ones = 0;
    for (uint64_t i = 0; i < n; ++i) {
      ASSERT_EQ(TahRank(model.data(), prefix.data(), i), ones) << i;
      ASSERT_EQ(TahBit(model.data(), i), BitmapBit(model.data(), i));
      ones += flags[i];
    }
    for (int width = 3; width <= 10; ++width) {
      std::vector<uint16_t> fields(n);
      for (auto& f : fields) f = static_cast<uint16_t>(rng.Next() & ((1u << width) - 1));
      std::vector<uint8_t> packed(PackedFieldBytes(n, width)), mine(packed.size());
      PackFields(fields.data(), n, width, packed.data());
      for (uint64_t q = 0; q < mine.size(); ++q) mine[q] = TahFieldByte(fields.data(), n, width, q);
      ASSERT_EQ(mine, packed) << n << " " << width;
      for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(TahReadField(packed.data(), i, width), fields[i]);
    }
  }
}

// ---- 2. The kernels' host model ---------------------------------------------------------------

// The bitmap with its exclusive byte prefix counts (BytePopcounts + the scan).
std::vector<uint32_t> BytePrefix(const uint8_t* map, uint64_t bytes) {
  std::vector<uint32_t> prefix(bytes + 1, 0);
  for (uint64_t q = 0; q < bytes; ++q) prefix[q + 1] = prefix[q] + TahPopcount(map[q]);
  return prefix;
}

// EncodeTahOnDevice, kernel by kernel.
Status ModelEncode(const CodecConfig& config, const std::vector<float>& x, const Shape& shape,
                   std::vector<uint8_t>* params_out, std::vector<uint8_t>* payload) {
  TahGeometry geo;
  GEOTRAIN_RETURN_IF_ERROR(TahGeometry::Make(shape, static_cast<int64_t>(x.size()),
                                             config.tile_size, config.entropy_unit, &geo));
  const int64_t tiles = geo.tiles, units = geo.units;
  const int g = geo.tile_size;
  const bool token = geo.entropy_unit == EntropyUnit::kToken;
  TahParams p;
  p.tile_size = g;
  p.high_bits = config.high_bits;
  p.low_bits = config.low_bits;
  p.entropy_unit = geo.entropy_unit;
  const int64_t high = HighUnitCount(units, config.high_ratio), low = units - high;
  p.high_units = high;
  payload->clear();
  params_out->clear();
  ByteWriter params(params_out);
  if (tiles == 0) {
    PutTahParams(p, &params);
    return OkStatus();
  }
  // TileStats.
  std::vector<float> mins(tiles), maxs(tiles), abs_max(tiles), sums(tiles), log_sums(tiles);
  std::vector<uint32_t> keys(units);
  std::vector<uint8_t> rotated(tiles);
  bool unfit = false;
  uint64_t first_bad = ~0ull;
  const double sqrt_g = std::sqrt(static_cast<double>(g));
  for (int64_t k = 0; k < tiles; ++k) {
    const TahTileStat st = EmulateTileStats(x.data() + k * g, g);
    rotated[k] = TahIsRotated(st.abs_max, st.abs_second, config.outlier_threshold);
    mins[k] = st.min;
    maxs[k] = st.max;
    abs_max[k] = st.abs_max;
    sums[k] = st.abs_sum;
    log_sums[k] = st.abs_log_sum;
    if (!token) keys[k] = TahOrderedKey(TahTileEntropy(st.abs_sum, st.abs_log_sum));
    unfit |= !TahFitsHalf(st.abs_max, rotated[k], sqrt_g);
    if (!TahIsFinite(st.abs_sum)) {
      for (int i = 0; i < g; ++i) {
        if (!TahIsFinite(x[k * g + i])) {
          first_bad = std::min<uint64_t>(first_bad, k * g + i);
          break;
        }
      }
    }
  }
  // RowEntropy.
  if (token) {
    for (int64_t r = 0; r < geo.rows; ++r) {
      double sum = 0, log_sum = 0;
      for (int64_t k = r * geo.tiles_per_row; k < (r + 1) * geo.tiles_per_row; ++k) {
        sum += sums[k];
        log_sum += log_sums[k];
      }
      keys[r] = TahOrderedKey(TahTokenEntropy(sum, log_sum));
    }
  }
  // Ranking: a stable radix sort is a stable sort by key.
  std::vector<uint8_t> unit_high(units, high > 0 ? 1 : 0);
  if (high > 0 && low > 0) {
    std::vector<uint32_t> order(units);
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t a, uint32_t b) { return keys[a] < keys[b]; });
    for (int64_t q = 0; q < units; ++q) unit_high[order[q]] = q >= low;
  }
  // Bitmaps and prefixes.
  const uint64_t unit_bytes = BitmapBytes(units), tile_bytes = BitmapBytes(tiles);
  std::vector<uint8_t> unit_map(unit_bytes), tile_map(tile_bytes);
  for (uint64_t q = 0; q < unit_bytes; ++q) unit_map[q] = TahBitmapByte(unit_high.data(), units, q);
  for (uint64_t q = 0; q < tile_bytes; ++q) tile_map[q] = TahBitmapByte(rotated.data(), tiles, q);
  const std::vector<uint32_t> unit_prefix = BytePrefix(unit_map.data(), unit_bytes);
  const std::vector<uint32_t> tile_prefix = BytePrefix(tile_map.data(), tile_bytes);
  if (first_bad != ~0ull) {
    return InvalidArgument("input[" + std::to_string(first_bad) +
                           "]: " + (std::isnan(x[first_bad]) ? "NaN" : "infinity") +
                           " cannot be quantized (tah needs finite values)");
  }
  p.f32_scales = unfit;
  p.outlier_tiles = tile_prefix[tile_bytes];
  // QuantizeTiles.
  const uint64_t pivot_bytes = PackedFieldBytes(p.outlier_tiles, geo.pivot_bits);
  const uint64_t scales_at = unit_bytes + tile_bytes + pivot_bytes;
  const uint64_t codes_at = scales_at + tiles * (p.f32_scales ? 8 : 4);
  payload->assign(codes_at + TahCodeBytes(geo, p.high_bits, p.low_bits, p.high_units), 0xEE);
  std::copy(unit_map.begin(), unit_map.end(), payload->begin());
  std::copy(tile_map.begin(), tile_map.end(), payload->begin() + unit_bytes);
  std::vector<uint16_t> pivots(tiles, 0xFFFF);
  uint64_t first_unsafe = ~0ull;
  const float normalizer = HadamardNormalizer(g);
  for (int64_t k = 0; k < tiles; ++k) {
    std::vector<Group> groups = ToGroups(x.data() + k * g, g);
    const int64_t unit = token ? k / geo.tiles_per_row : k;
    const bool is_high = TahBit(unit_map.data(), unit);
    const int bits = is_high ? p.high_bits : p.low_bits;
    const uint64_t high_before = TahHighTilesBefore(
        token, k, geo.tiles_per_row, TahRank(unit_map.data(), unit_prefix.data(), unit), is_high);
    const bool rot = TahBit(tile_map.data(), k);
    float lo = mins[k], hi = maxs[k];
    if (rot) {  // RotateForEncode
      std::vector<int> firsts;
      for (int j = 0; j < g / 8; ++j)
        firsts.push_back(TahGroupPivot(groups[j].data(), abs_max[k], j, g));
      const int first = EmulateXorReduce(firsts, [](int a, int b) { return std::min(a, b); });
      const int pivot = first < g ? first : 0;
      EmulateGroupSwap(&groups, pivot);
      EmulateGroupHadamard(&groups, normalizer);
      std::vector<float> los, his;
      for (const Group& v : groups) {
        float l, h;
        TahGroupMinMax(v.data(), &l, &h);
        los.push_back(l);
        his.push_back(h);
      }
      lo = EmulateXorReduce(los, TahMin) + 0.0f;
      hi = EmulateXorReduce(his, TahMax) + 0.0f;
      pivots[TahRank(tile_map.data(), tile_prefix.data(), k)] = static_cast<uint16_t>(pivot);
      mins[k] = lo;
      maxs[k] = hi;
    }
    TahScale s;
    if (p.f32_scales) {
      s = TahChooseScaleF32(lo, hi, bits);
      TahWriteScaleF32(s, k, payload->data() + scales_at);
      if (!TahScaleIsSafe(s, bits, g, rot)) first_unsafe = std::min<uint64_t>(first_unsafe, k);
    } else {
      uint16_t wire[2];
      s = TahChooseScaleF16(lo, hi, bits, wire);
      TahWriteScaleF16(wire, k, payload->data() + scales_at);
    }
    double err = 0, norm = 0;
    for (int j = 0; j < g / 8; ++j) {
      uint8_t codes[8];
      TahQuantizeGroup(groups[j].data(), s, bits, codes, &err, &norm);
      TahStoreGroup(codes, bits,
                    payload->data() + codes_at +
                        TahCodeOffset(k, high_before, g, p.high_bits, p.low_bits) + j * bits);
    }
  }
  // PackPivots.
  for (uint64_t q = 0; q < pivot_bytes; ++q) {
    (*payload)[unit_bytes + tile_bytes + q] =
        TahFieldByte(pivots.data(), p.outlier_tiles, geo.pivot_bits, q);
  }
  if (first_unsafe != ~0ull) {
    const uint64_t k = first_unsafe;
    return InvalidArgument("input: tile " + std::to_string(k) + " spans [" +
                           std::to_string(mins[k]) + ", " + std::to_string(maxs[k]) +
                           "], too close to the float limit for tah to quantize");
  }
  PutTahParams(p, &params);
  return OkStatus();
}

// CheckTahFrame, then DecodeTiles.
Status ModelDecode(const FrameContent& frame, std::vector<float>* out) {
  TahFrameLayout l;
  GEOTRAIN_RETURN_IF_ERROR(CheckTahFrame(frame, &l));
  const TahGeometry& geo = l.geo;
  const int g = geo.tile_size;
  out->assign(frame.elements, 0.0f);
  const uint8_t* payload = frame.payload.data();
  const uint8_t* unit_map = payload + l.unit_map_at;
  const uint8_t* tile_map = payload + l.tile_map_at;
  const std::vector<uint32_t> unit_prefix = BytePrefix(unit_map, BitmapBytes(geo.units));
  const std::vector<uint32_t> tile_prefix = BytePrefix(tile_map, BitmapBytes(geo.tiles));
  const bool token = geo.entropy_unit == EntropyUnit::kToken;
  for (int64_t k = 0; k < geo.tiles; ++k) {
    const int64_t unit = token ? k / geo.tiles_per_row : k;
    const bool is_high = TahBit(unit_map, unit);
    const int bits = is_high ? l.params.high_bits : l.params.low_bits;
    const uint64_t high_before = TahHighTilesBefore(
        token, k, geo.tiles_per_row, TahRank(unit_map, unit_prefix.data(), unit), is_high);
    const TahScale s = TahReadScale(payload + l.scales_at, k, l.params.f32_scales);
    std::vector<Group> groups(g / 8);
    for (int j = 0; j < g / 8; ++j) {
      uint8_t codes[8];
      TahLoadGroup(payload + l.codes_at +
                       TahCodeOffset(k, high_before, g, l.params.high_bits, l.params.low_bits) +
                       j * bits,
                   bits, codes);
      TahDequantizeGroup(codes, s, groups[j].data());
    }
    if (TahBit(tile_map, k)) {
      const int pivot = TahReadField(payload + l.pivots_at,
                                     TahRank(tile_map, tile_prefix.data(), k), geo.pivot_bits);
      EmulateGroupHadamard(&groups, HadamardNormalizer(g));
      EmulateGroupSwap(&groups, pivot);
    }
    for (int j = 0; j < g / 8; ++j)
      std::copy(groups[j].begin(), groups[j].end(), out->data() + k * g + 8 * j);
  }
  return OkStatus();
}

// Encodes with TahCodec and with the model; both must succeed or fail alike, with equal bytes, and
// both decoders must give the same values. Returns the CPU frame.
std::vector<uint8_t> ExpectModelMatchesCpu(const CodecConfig& config, const std::vector<float>& x,
                                           const Shape& shape, const std::string& what) {
  auto codec = MakeCodec(config);
  EXPECT_TRUE(codec.ok());
  std::vector<uint8_t> frame;
  const Status cpu = EncodeFrame(**codec, {x.data(), DType::kFloat32, shape}, &frame);
  std::vector<uint8_t> params, payload;
  const Status model = ModelEncode(config, x, shape, &params, &payload);
  EXPECT_EQ(cpu.ok(), model.ok()) << what << ": cpu " << cpu.ToString() << ", model "
                                  << model.ToString();
  if (!cpu.ok() || !model.ok()) {
    EXPECT_EQ(cpu.code(), model.code()) << what;
    EXPECT_NE(cpu.message().find(model.message()), std::string::npos)
        << what << ": cpu " << cpu.ToString() << ", model " << model.ToString();
    return {};
  }
  FrameContent content;
  std::vector<uint8_t> scratch;
  EXPECT_TRUE(ParseFrame(frame, {}, &scratch, &content).ok());
  EXPECT_EQ(std::vector<uint8_t>(content.params.begin(), content.params.end()), params) << what;
  const std::vector<uint8_t> cpu_payload(content.payload.begin(), content.payload.end());
  EXPECT_EQ(cpu_payload.size(), payload.size()) << what;
  if (cpu_payload != payload) {
    size_t at = 0;
    while (at < payload.size() && at < cpu_payload.size() && payload[at] == cpu_payload[at]) ++at;
    ADD_FAILURE() << what << ": payloads differ first at byte " << at << " of " << payload.size();
  }
  DecodedTensor cpu_out;
  EXPECT_TRUE(DecodeFrame(**codec, frame, {}, &cpu_out).ok());
  std::vector<float> model_out;
  const Status decoded = ModelDecode(content, &model_out);
  EXPECT_TRUE(decoded.ok()) << decoded.ToString();
  EXPECT_EQ(model_out.size(), cpu_out.values.size());
  if (model_out.size() == cpu_out.values.size() &&
      std::memcmp(model_out.data(), cpu_out.values.data(), 4 * model_out.size()) != 0) {
    ADD_FAILURE() << what << ": decoded values differ";
  }
  return frame;
}

// Activation-like rows with a spike in every fifth tile.
std::vector<float> Spiky(int64_t rows, int64_t cols, int tile, uint64_t seed, float spike = 90.0f) {
  std::vector<float> x = MakeActivationLike(rows, cols, seed, 6);
  for (int64_t k = 0; k < rows * cols / tile; k += 5) x[k * tile + (k * 7) % tile] = spike;
  return x;
}

TEST(CudaTahModel, FramesMatchTheCpuCodecOverSettings) {
  int cases = 0;
  for (EntropyUnit unit : {EntropyUnit::kToken, EntropyUnit::kTile}) {
    for (int tile = 8; tile <= 1024; tile *= 2) {
      for (auto [hb, lb] : {std::pair{4, 3}, std::pair{8, 2}, std::pair{2, 7}, std::pair{5, 5}}) {
        for (double ratio : {0.0, 0.3, 0.8, 1.0}) {
          for (double tau : {1.0, 2.0, 1e6}) {
            const int64_t rows = 6, cols = std::max<int64_t>(2048, tile);
            const std::vector<float> x = Spiky(rows, cols, tile, tile + hb * 10 + lb);
            ExpectModelMatchesCpu(TahConfig(tile, hb, lb, ratio, unit, tau), x, {2, 3, cols},
                                  "tile " + std::to_string(tile) + " bits " + std::to_string(hb) +
                                      "/" + std::to_string(lb) + " ratio " + std::to_string(ratio) +
                                      " tau " + std::to_string(tau) +
                                      (unit == EntropyUnit::kToken ? " token" : " tile"));
            ++cases;
            if (HasFailure()) return;
          }
        }
      }
    }
  }
  EXPECT_EQ(cases, 2 * 8 * 4 * 4 * 3);
}

TEST(CudaTahModel, FramesMatchTheCpuCodecOnHostileInputs) {
  SplitMix64 rng(21);
  struct Input {
    std::string name;
    std::vector<float> x;
    Shape shape;
  };
  std::vector<Input> inputs;
  {
    std::vector<float> row = MakeGaussian(256, 9);  // identical rows: every entropy ties
    std::vector<float> x;
    for (int r = 0; r < 24; ++r) x.insert(x.end(), row.begin(), row.end());
    inputs.push_back({"identical rows", x, {24, 256}});
  }
  {
    std::vector<float> x(32 * 128, 0.0f);  // zero and constant tiles, -0
    std::fill(x.begin() + 128, x.begin() + 256, 0.75f);
    std::fill(x.begin() + 256, x.begin() + 384, -2.5f);
    std::fill(x.begin() + 384, x.begin() + 512, -0.0f);
    for (size_t i = 512; i < x.size(); i += 3) x[i] = (i % 2 ? 1.0f : -1.0f);
    inputs.push_back({"zeros and constants", x, {32, 128}});
  }
  {
    std::vector<float> x = MakeGaussian(16 * 512, 3);  // ties of the largest |x|
    for (size_t k = 0; k < x.size(); k += 64) x[k + 5] = x[k + 40] = -50.0f, x[k + 9] = 50.0f;
    inputs.push_back({"tied outliers", x, {16, 512}});
  }
  for (float top : {65504.0f, 8188.0f, 8187.9f, 2047.0f, 4096.0f, 60000.0f}) {
    // Near the fp16 limit: unrotated at 65504, rotated ones at 65504 / √G (G = 64: 8188).
    std::vector<float> x = MakeGaussian(8 * 256, 4);
    x[77] = top;
    x[300] = -top;
    inputs.push_back({"fp16 edge " + std::to_string(top), x, {8, 256}});
  }
  {
    std::vector<float> x = Spiky(8, 256, 32, 4);
    for (float& v : x) v *= 3000.0f;  // f32 scales
    inputs.push_back({"f32 scales", x, {8, 256}});
  }
  {
    std::vector<float> x(256, 1e37f);  // huge but quantizable, Σ|x| overflows
    x[1] = 5e36f;
    x[130] = -2e37f;
    inputs.push_back({"huge", x, {256}});
  }
  {
    std::vector<float> x(128, 3e38f);  // range overflows: refused
    x[1] = -3e38f;
    inputs.push_back({"unsafe range", x, {2, 64}});
  }
  {
    std::vector<float> x = MakeGaussian(4 * 64, 5);
    x[77] = NAN;
    x[200] = INFINITY;
    inputs.push_back({"NaN", x, {4, 64}});
    x[77] = 1.0f;
    x[3] = -INFINITY;
    inputs.push_back({"infinity", x, {4, 64}});
  }
  {
    std::vector<float> x = MakeGaussian(16 * 64, 6);
    for (float& v : x) v *= 1e-41f;  // subnormals
    x[10] = 1e-38f;
    inputs.push_back({"subnormal", x, {16, 64}});
  }
  {
    std::vector<float> x(64 * 64);
    for (auto& v : x) {  // random finite bit patterns, kept within the quantizable range
      do {
        v = BitsToFloat(static_cast<uint32_t>(rng.Next()));
      } while (!std::isfinite(v) || std::fabs(v) > 1e30f);
    }
    inputs.push_back({"random bit patterns", x, {64, 64}});
  }
  {
    std::vector<float> x = MakeActivationLike(4 * 128, 1600, 42);  // the README's shape
    inputs.push_back({"activations", x, {4, 128, 1600}});
  }
  {
    std::vector<float> x = MakeGaussian(33 * 24, 7);  // odd row counts, tiles per row
    inputs.push_back({"odd shape", x, {33, 24}});
    inputs.push_back({"rank one", std::vector<float>(x.begin(), x.begin() + 8), {8}});
    inputs.push_back({"empty rows", {}, {0, 64}});
    inputs.push_back({"empty cols", {}, {3, 0}});
  }
  {
    // Rows (and tiles) that are permutations of one another: their entropies differ only by the
    // rounding of their sums, so the ranking rests on the last bits of the CPU's summation order.
    const std::vector<float> base = MakeGaussian(128, 12, 2.0f);
    SplitMix64 shuffle(13);
    inputs.push_back({"permuted rows", tah_test::PermutedCopies(base, 96, &shuffle), {96, 128}});
    // Every 8-value tile a permutation of the same 8 values.
    const std::vector<float> eight(base.begin(), base.begin() + 8);
    inputs.push_back({"permuted tiles", tah_test::PermutedCopies(eight, 512, &shuffle), {64, 64}});
  }
  {
    std::vector<float> x = MakeGaussian(16 * 64, 14);  // f32 scales with subnormal-range tiles
    for (size_t i = 64; i < x.size(); ++i) x[i] *= 1e-42f;
    x[3] = 2e6f;
    inputs.push_back({"f32 with subnormal tiles", x, {16, 64}});
  }
  {
    std::vector<float> x = MakeGaussian(64 * 64, 8);  // bf16-rounded: many exact duplicates
    for (float& v : x) v = BFloat16ToFloat(FloatToBFloat16(v * 4));
    inputs.push_back({"bf16 values", x, {64, 64}});
  }
  int cases = 0;
  for (const Input& in : inputs) {
    for (EntropyUnit unit : {EntropyUnit::kToken, EntropyUnit::kTile}) {
      for (int tile : {8, 16, 32, 64}) {
        if (in.shape.empty() || in.shape.back() % tile != 0) continue;
        for (double tau : {1.0, 2.0}) {
          for (auto [hb, lb, ratio] : {std::tuple{4, 3, 0.8}, std::tuple{3, 6, 0.5}}) {
            ExpectModelMatchesCpu(
                TahConfig(tile, hb, lb, ratio, unit, tau), in.x, in.shape,
                in.name + " tile " + std::to_string(tile) + " tau " + std::to_string(tau));
            ++cases;
          }
        }
      }
    }
    if (HasFailure()) return;
  }
  EXPECT_GT(cases, 300);
}

TEST(CudaTahModel, RandomTensorsMatchTheCpuCodec) {
  SplitMix64 rng(31);
  for (int trial = 0; trial < 120; ++trial) {
    const int tile = 8 << (rng.Next() % 8);
    const int64_t tiles_per_row = 1 + static_cast<int64_t>(rng.Next() % (tile >= 256 ? 3 : 9));
    const int64_t rows = 1 + static_cast<int64_t>(rng.Next() % (tile >= 256 ? 8 : 40));
    const int64_t cols = tile * tiles_per_row;
    std::vector<float> x =
        MakeGaussian(rows * cols, 1000 + trial, std::ldexp(1.0f, trial % 20 - 8));
    const int spikes = static_cast<int>(rng.Next() % 20);
    for (int s = 0; s < spikes; ++s) x[rng.Next() % x.size()] *= 50.0f;
    if (trial % 3 == 0) {
      for (float& v : x) v = std::round(v * 8) / 8;
    }
    const EntropyUnit unit = trial % 2 ? EntropyUnit::kTile : EntropyUnit::kToken;
    const int hb = 2 + static_cast<int>(rng.Next() % 7), lb = 2 + static_cast<int>(rng.Next() % 7);
    const double ratio = (rng.Next() % 101) / 100.0;
    const double tau = 1.0 + (rng.Next() % 40) / 10.0;
    ExpectModelMatchesCpu(TahConfig(tile, hb, lb, ratio, unit, tau), x, {rows, cols},
                          "trial " + std::to_string(trial));
    if (HasFailure()) return;
  }
}

// ---- 3. Frame checks --------------------------------------------------------------------------

// CheckTahFrame's verdict against TahCodec::Decode's on the same (edited) frame.
void ExpectSameVerdict(const FrameContent& content, const std::string& what) {
  auto codec = MakeCodec(TahConfig(64, 4, 3, 0.8, EntropyUnit::kToken));
  std::vector<float> out(content.elements);
  const Status cpu = (*codec)->Decode(content, out.data());
  TahFrameLayout layout;
  const Status mine = CheckTahFrame(content, &layout);
  ASSERT_EQ(cpu.code(), mine.code())
      << what << ": cpu " << cpu.ToString() << ", check " << mine.ToString();
  ASSERT_EQ(cpu.message(), mine.message()) << what;
  if (mine.ok()) {  // and the model decoder agrees with the CPU one on what it accepts
    std::vector<float> model;
    ASSERT_TRUE(ModelDecode(content, &model).ok());
    ASSERT_EQ(0, std::memcmp(model.data(), out.data(), 4 * out.size())) << what;
  }
}

TEST(CudaTahFrameCheck, RefusesExactlyWhatTheCpuDecoderRefuses) {
  struct Source {
    CodecConfig config;
    std::vector<float> x;
    Shape shape;
  };
  std::vector<Source> sources;
  {
    std::vector<float> x = MakeActivationLike(10, 96, 17, 3);
    x[5] = 80.0f;
    x[96 + 40] = -70.0f;
    sources.push_back({TahConfig(16, 4, 3, 0.5, EntropyUnit::kToken), x, {10, 96}});
    sources.push_back({TahConfig(8, 2, 6, 0.5, EntropyUnit::kTile, 1.0), x, {10, 96}});
  }
  {
    std::vector<float> x = MakeActivationLike(4, 64, 3, 1);
    for (float& v : x) v *= 1e5f;
    x[2] = 9e6f;
    sources.push_back({TahConfig(16, 4, 3, 0.8, EntropyUnit::kToken), x, {4, 64}});  // f32 scales
  }
  SplitMix64 rng(41);
  int checked = 0;
  for (const Source& src : sources) {
    auto codec = MakeCodec(src.config);
    std::vector<uint8_t> frame;
    ASSERT_TRUE(EncodeFrame(**codec, {src.x.data(), DType::kFloat32, src.shape}, &frame).ok());
    FrameContent good;
    std::vector<uint8_t> scratch;
    ASSERT_TRUE(ParseFrame(frame, {}, &scratch, &good).ok());
    const std::vector<uint8_t> params(good.params.begin(), good.params.end());
    const std::vector<uint8_t> payload(good.payload.begin(), good.payload.end());
    for (int trial = 0; trial < 4000; ++trial) {
      std::vector<uint8_t> p = params, q = payload;
      Shape shape = src.shape;
      const int edits = 1 + static_cast<int>(rng.Next() % 3);
      for (int e = 0; e < edits; ++e) {
        const uint64_t r = rng.Next();
        switch (r % 8) {
          case 0:
            if (!p.empty()) p[r / 8 % p.size()] ^= static_cast<uint8_t>(1u << (r / 1024 % 8));
            break;
          case 1:
            if (!p.empty()) p[r / 8 % p.size()] = static_cast<uint8_t>(r >> 40);
            break;
          case 2:
          case 3:
          case 4:
            q[r / 8 % q.size()] ^= static_cast<uint8_t>(1u << (r / 1024 % 8));
            break;
          case 5:
            q.resize(r / 8 % (q.size() + 2));
            break;
          case 6:
            if (!p.empty()) p.resize(r / 8 % (p.size() + 1));
            break;
          default:
            shape.back() = shape.back() == 96 ? 48 : shape.back() * 2;
            break;
        }
        if (q.empty()) q.push_back(0);
      }
      FrameContent content = good;
      content.params = Span<const uint8_t>(p.data(), p.size());
      content.payload = Span<const uint8_t>(q.data(), q.size());
      content.shape = shape;
      content.elements = 1;
      for (int64_t d : shape) content.elements *= d;
      ExpectSameVerdict(content, "trial " + std::to_string(trial));
      ++checked;
      if (HasFatalFailure()) return;
    }
    // Targeted edits of the scale section: NaN, inf, negative scale, f32 overflow.
    TahFrameLayout layout;
    ASSERT_TRUE(CheckTahFrame(good, &layout).ok());
    const size_t width = layout.params.f32_scales ? 8 : 4;
    for (int64_t k = 0; k < layout.geo.tiles; k += 3) {
      for (int which = 0; which < 4; ++which) {
        std::vector<uint8_t> q = payload;
        uint8_t* at = q.data() + layout.scales_at + width * k;
        if (width == 4) {
          const uint16_t v[4] = {0x7e00, 0x7c00, 0xbc00, 0x8000};
          std::memcpy(at + (which % 2 ? 2 : 0), &v[which], 2);
        } else {
          const float v[4] = {NAN, 3e37f, -1.0f, INFINITY};
          std::memcpy(at + (which % 2 ? 4 : 0), &v[which], 4);
        }
        FrameContent content = good;
        content.payload = Span<const uint8_t>(q.data(), q.size());
        ExpectSameVerdict(content, "scale edit " + std::to_string(k) + "/" + std::to_string(which));
        ++checked;
      }
    }
    ExpectSameVerdict(good, "unedited");
  }
  EXPECT_GT(checked, 12000);
}

}  // namespace
}  // namespace geotrain::compression::cuda
