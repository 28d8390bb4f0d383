// The arithmetic of the CUDA cocktail codec (compression/cuda/cocktail_math.h), run on the CPU
// against the CPU codec. No CUDA needed: this is the evidence a machine without a GPU can give.
//
// Besides unit checks of each function, the tests emulate compression/cuda/cocktail_device.cu
// kernel by kernel: each kernel's per-thread body calls the header's functions exactly as here,
// warp ballots become loops over the 32 lanes of a word, CUB's exclusive scans become loops, and
// the fixpoint quantizer is the CPU one (the device quantizer is checked against it separately).
// The emulated encoder must write CocktailCodec's params and payload byte for byte and leave its
// residual() bit for bit; the emulated decoder must give CocktailCodec::Decode's values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "common/hash_random.h"
#include "compression/bitpack.h"
#include "compression/cocktail_codec.h"
#include "compression/cocktail_frame.h"
#include "compression/cocktail_mask.h"
#include "compression/cuda/cocktail_math.h"
#include "compression/cuda/kernel_launch.h"
#include "compression/fixpoint_block.h"
#include "compression/magnitude_threshold.h"
#include "compression/synthetic_tensors.h"
#include "tests/compression/cocktail_test_util.h"

namespace geotrain::compression::cuda {
namespace {

using cocktail_test::CocktailConfig;
using cocktail_test::Data;
using cocktail_test::MakeData;

// ---- helpers -------------------------------------------------------------------------------

// __ballot_sync over the 32 lanes of word w.
template <typename Pred>
uint32_t Ballot(int64_t w, Pred pred) {
  uint32_t bits = 0;
  for (int lane = 0; lane < kWordBits; ++lane) {
    if (pred(w * kWordBits + lane)) bits |= 1u << lane;
  }
  return bits;
}

template <typename T>
std::vector<T> ExclusiveScan(const std::vector<T>& in) {
  std::vector<T> out(in.size());
  T sum = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    out[i] = sum;
    sum += in[i];
  }
  return out;
}

bool SameBits(float a, float b) { return std::memcmp(&a, &b, 4) == 0; }

// The masks the tests sweep: rolling strides from 1 to near 2^64, seeded thresholds from 0 to 2^32.
std::vector<CocktailMask> SomeMasks() {
  std::vector<CocktailMask> masks;
  for (uint64_t stride : {uint64_t{1}, uint64_t{2}, uint64_t{3}, uint64_t{7}, uint64_t{10},
                          uint64_t{33}, uint64_t{1} << 62, ~uint64_t{0}}) {
    for (uint64_t step : {uint64_t{0}, uint64_t{5}, uint64_t{12345}, ~uint64_t{0} - 3}) {
      masks.push_back(CocktailMask::Rolling(stride, step));
    }
  }
  for (uint64_t threshold :
       {uint64_t{0}, uint64_t{1}, SeededThreshold(0.01), SeededThreshold(0.1), SeededThreshold(0.5),
        SeededThreshold(0.999), CocktailMask::kMaxThreshold}) {
    for (uint64_t seed : {uint64_t{0}, uint64_t{1234}, ~uint64_t{0}}) {
      masks.push_back(CocktailMask::Seeded(seed, threshold, 3 + seed % 11));
    }
  }
  return masks;
}

// ---- emulation of cocktail_device.cu ---------------------------------------------------------

struct Sampled {
  uint64_t m = 0;
  std::vector<float> values;    // ws->sampled
  std::vector<uint32_t> index;  // ws->sampled_index (seeded)
};

// RollingGather, or SeededMembers + ExclusiveSum + StoreTotal + SeededCompact. `v` may be null
// (decode: coordinates only).
Sampled EmulateSample(const float* v, int64_t n, const CocktailMaskParams& p) {
  Sampled s;
  if (p.rolling) {
    s.m = RollingCount(p, static_cast<uint64_t>(n));
    if (v != nullptr) {
      s.values.resize(s.m);
      for (uint64_t j = 0; j < s.m; ++j) s.values[j] = v[RollingCoordinate(p, j)];
    }
    return s;
  }
  const int64_t words = static_cast<int64_t>(WordCount(n));
  std::vector<uint32_t> member(words), counts(words);
  for (int64_t w = 0; w < words; ++w) {
    member[w] = Ballot(w, [&](int64_t i) { return i < n && SeededContains(p, i); });
    counts[w] = static_cast<uint32_t>(Popcount32(member[w]));
  }
  const std::vector<uint32_t> before = ExclusiveScan(counts);
  s.m = words > 0 ? uint64_t{before[words - 1]} + counts[words - 1] : 0;
  s.index.assign(s.m, ~0u);
  if (v != nullptr) s.values.assign(s.m, std::numeric_limits<float>::quiet_NaN());
  for (int64_t i = 0; i < n; ++i) {
    const int64_t w = i / kWordBits;
    const int lane = static_cast<int>(i % kWordBits);
    if (((member[w] >> lane) & 1u) == 0) continue;
    const uint64_t pos = SampledPosition(before[w], member[w], lane);
    EXPECT_LT(pos, s.m);
    if (pos >= s.m) continue;
    s.index[pos] = static_cast<uint32_t>(i);
    if (v != nullptr) s.values[pos] = v[i];
  }
  return s;
}

// InitSelect, then per pass DigitHistogram and ChooseDigit (a block of kThreads threads).
SelectState EmulateSelect(const std::vector<float>& values, uint32_t k) {
  SelectState state = InitialSelectState(k);
  for (int pass = 0; pass < kSelectPasses; ++pass) {
    const RadixDigit d = SelectDigit(pass);
    const int nbins = 1 << d.width;
    std::vector<uint32_t> histogram(nbins, 0);
    for (float v : values) {
      const uint32_t key = MagnitudeKey(v);
      if (SharesPrefix(key, state)) ++histogram[DigitOf(key, d)];
    }
    const int per_thread = nbins / kThreads;
    std::vector<uint32_t> totals(kThreads, 0);
    for (int t = 0; t < kThreads; ++t) {
      for (int c = 0; c < per_thread; ++c)
        totals[t] += histogram[ChunkTop(nbins, per_thread, t) - c];
    }
    const std::vector<uint32_t> exclusive = ExclusiveScan(totals);
    SelectState next = state;
    int writers = 0;
    for (int t = 0; t < kThreads; ++t) {
      const uint32_t inclusive = exclusive[t] + totals[t];
      if (exclusive[t] < state.need && state.need <= inclusive) {
        uint32_t rank = state.need - exclusive[t];
        const uint32_t digit =
            WalkDigits(histogram.data(), ChunkTop(nbins, per_thread, t), per_thread, &rank);
        ApplyDigit(d, digit, rank, histogram[digit], &next);
        ++writers;
      }
    }
    EXPECT_EQ(writers, 1) << "pass " << pass;
    state = next;
  }
  return state;
}

struct Emitted {
  std::vector<uint8_t> bitmap;
  std::vector<float> kept;
  std::vector<uint32_t> coords;
};

// ClassifyWords + ExclusiveSum + EmitKept.
Emitted EmulateEmit(const Sampled& s, const CocktailMaskParams& p, const SelectState& state,
                    int64_t k) {
  const int64_t m = static_cast<int64_t>(s.m);
  const int64_t words = static_cast<int64_t>(WordCount(m));
  const uint64_t bitmap_bytes = PackedBytes(m, 1);
  std::vector<uint32_t> greater(words), equal(words);
  std::vector<uint64_t> counts(words);
  const uint32_t threshold = state.prefix;
  auto key = [&](int64_t j) { return MagnitudeKey(s.values[j]); };
  for (int64_t w = 0; w < words; ++w) {
    greater[w] = Ballot(w, [&](int64_t j) { return j < m && key(j) > threshold; });
    equal[w] = Ballot(w, [&](int64_t j) { return j < m && key(j) == threshold; });
    counts[w] = PackCounts(Popcount32(greater[w]), Popcount32(equal[w]));
  }
  const std::vector<uint64_t> before = ExclusiveScan(counts);
  Emitted e;
  e.bitmap.assign(bitmap_bytes, 0xa5);  // every byte must be written
  e.kept.assign(k, std::numeric_limits<float>::quiet_NaN());
  e.coords.assign(k, ~0u);
  const uint32_t ties = state.need;
  for (int64_t j = 0; j < words * kWordBits; ++j) {
    const int64_t w = j / kWordBits;
    const int lane = static_cast<int>(j % kWordBits);
    const uint32_t keep = KeepLaneBits(greater[w], equal[w], EqualOf(before[w]), ties);
    const uint64_t byte = 4 * static_cast<uint64_t>(w) + lane;
    if (lane < 4 && byte < bitmap_bytes)
      e.bitmap[byte] = BitmapWordByte(BitmapWordOfLanes(keep), lane);
    if (j < m && ((keep >> lane) & 1u) != 0) {
      const uint64_t r = KeptBefore(before[w], ties) + RankInLaneBits(keep, lane);
      EXPECT_LT(r, static_cast<uint64_t>(k));
      if (r >= static_cast<uint64_t>(k)) continue;
      e.kept[r] = s.values[j];
      e.coords[r] = SampledCoordinate(p, j, s.index.data());
    }
  }
  return e;
}

// Frames whose threshold had more equal magnitudes than ties kept (the tests check some do).
int g_partial_tie_frames = 0;

// The whole device encode (CocktailCudaCodec::Encode), with `residual` the device residual
// (null without error feedback; sized by the caller).
Status EmulateEncode(const CodecConfig& config, const std::vector<float>& x, uint64_t step,
                     std::vector<float>* residual, std::vector<uint8_t>* params_bytes,
                     std::vector<uint8_t>* payload_bytes) {
  params_bytes->clear();
  payload_bytes->clear();
  const int64_t n = static_cast<int64_t>(x.size());
  GEOTRAIN_ASSIGN_OR_RETURN(const CocktailMask mask, CocktailMask::ForStep(config, step));
  const CocktailMaskParams p = MaskParamsOf(mask);
  // FoldInput.
  const float* v = x.data();
  bool bad = false;
  if (residual != nullptr) {
    for (int64_t i = 0; i < n; ++i) {
      (*residual)[i] = (*residual)[i] + x[i];
      bad |= !std::isfinite((*residual)[i]);
    }
    v = residual->data();
  } else {
    for (float xi : x) bad |= !std::isfinite(xi);
  }
  if (bad) {
    if (residual != nullptr) std::fill(residual->begin(), residual->end(), 0.0f);
    return InvalidArgument("not finite");
  }
  const Sampled s = EmulateSample(v, n, p);
  const int64_t m = static_cast<int64_t>(s.m);
  const int64_t k = CocktailKeptCount(config.topk_ratio, m);
  ByteWriter params(params_bytes), payload(payload_bytes);
  PutCocktailParams(mask, k, config, &params);
  if (m == 0) return OkStatus();
  const SelectState state = EmulateSelect(s.values, static_cast<uint32_t>(k));
  if (state.need < state.equal) ++g_partial_tie_frames;  // the tie rule decided some lanes
  const Emitted e = EmulateEmit(s, p, state, k);
  payload.PutBytes(e.bitmap.data(), e.bitmap.size());
  std::vector<float> xhat(k);
  QuantizeOptions options;
  options.bits = config.quant_bits;
  options.rounding = config.rounding;
  options.seed = config.seed;
  options.stream = step;
  GEOTRAIN_RETURN_IF_ERROR(
      EncodeFixpointBlock(e.kept.data(), QuantLayout{1, k, ScaleMode::kPerTile, config.quant_group},
                          options, &payload, xhat.data(), nullptr));
  if (residual != nullptr) {  // SubtractSent
    for (int64_t c = 0; c < k; ++c) (*residual)[e.coords[c]] -= xhat[c];
  }
  return OkStatus();
}

// The device decode after the host checks: rank the set bits, decode the block, scatter.
std::vector<float> EmulateDecode(const std::vector<uint8_t>& params_bytes,
                                 const std::vector<uint8_t>& payload_bytes, int64_t n) {
  ByteReader params(params_bytes);
  auto mask = CocktailMask::Read(&params);
  EXPECT_TRUE(mask.ok());
  uint64_t k = 0;
  EXPECT_TRUE(params.Get(&k, "kept").ok());
  ScaleMode mode;
  int64_t group;
  int bits;
  EXPECT_TRUE(GetQuantParams(&params, &mode, &group, &bits).ok());
  const CocktailMaskParams p = MaskParamsOf(*mask);
  const Sampled s = EmulateSample(nullptr, n, p);
  const int64_t m = static_cast<int64_t>(s.m);
  const uint64_t bytes = PackedBytes(m, 1);
  std::vector<float> decoded(k);
  ByteReader payload(payload_bytes);
  Span<const uint8_t> bitmap;
  EXPECT_TRUE(payload.GetSpan(bytes, &bitmap, "bitmap").ok());
  if (k > 0) {
    EXPECT_TRUE(DecodeFixpointBlock(
                    &payload, QuantLayout{1, static_cast<int64_t>(k), ScaleMode::kPerTile, group},
                    bits, decoded.data())
                    .ok());
  }
  std::vector<float> out(n, 0.0f);  // ZeroDevice
  const int64_t words = static_cast<int64_t>(WordCount(m));
  std::vector<uint32_t> counts(words);
  for (int64_t w = 0; w < words; ++w) {  // BitmapWordCounts
    counts[w] = static_cast<uint32_t>(Popcount32(LoadBitmapWord(bitmap.data(), bytes, w)));
  }
  const std::vector<uint32_t> before = ExclusiveScan(counts);
  for (int64_t j = 0; j < m; ++j) {  // ScatterKept
    const int64_t w = j / kWordBits;
    const int lane = static_cast<int>(j % kWordBits);
    const uint32_t word = LoadBitmapWord(bitmap.data(), bytes, w);
    if (!BitmapWordHas(word, lane)) continue;
    const uint64_t r = before[w] + BitmapRank(word, lane);
    EXPECT_LT(r, k);
    if (r < k) out[SampledCoordinate(p, j, s.index.data())] = decoded[r];
  }
  return out;
}

// The CPU codec's raw encode.
Status CpuEncode(CocktailCodec& codec, const std::vector<float>& x, const Shape& shape,
                 uint64_t step, std::vector<uint8_t>* params_bytes,
                 std::vector<uint8_t>* payload_bytes) {
  params_bytes->clear();
  payload_bytes->clear();
  ByteWriter params(params_bytes), payload(payload_bytes);
  EncodeInput in;
  in.data = x.data();
  in.shape = shape;
  in.elements = static_cast<int64_t>(x.size());
  in.step = step;
  return codec.Encode(in, &params, &payload, nullptr);
}

std::vector<float> CpuDecode(CocktailCodec& codec, const std::vector<uint8_t>& params,
                             const std::vector<uint8_t>& payload, const Shape& shape) {
  FrameContent c;
  c.codec = CodecId::kCocktail;
  c.shape = shape;
  c.elements = NumElements(shape);
  c.params = Span<const uint8_t>(params.data(), params.size());
  c.payload = Span<const uint8_t>(payload.data(), payload.size());
  std::vector<float> out(c.elements, -999.0f);
  const Status s = codec.Decode(c, out.data());
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

// ---- unit checks -------------------------------------------------------------------------------

TEST(CudaCocktailMath, MaskMembershipIsCocktailMaskContains) {
  int64_t checked = 0;
  for (const CocktailMask& mask : SomeMasks()) {
    const CocktailMaskParams p = MaskParamsOf(mask);
    ASSERT_EQ(p.rolling, mask.mode() == MaskMode::kRolling);
    for (uint64_t i = 0; i < 3000; ++i) {
      ASSERT_EQ(MaskContains(p, i), mask.Contains(i)) << "i=" << i;
      ++checked;
    }
    for (uint64_t i : {uint64_t{0xffffffff}, uint64_t{0xfffffffe}, uint64_t{1} << 31}) {
      ASSERT_EQ(MaskContains(p, i), mask.Contains(i)) << "i=" << i;
    }
  }
  EXPECT_GT(checked, 100000);
}

TEST(CudaCocktailMath, RollingCountCoordinatesAndPositionsAreTheMasks) {
  for (const CocktailMask& mask : SomeMasks()) {
    if (mask.mode() != MaskMode::kRolling) continue;
    const CocktailMaskParams p = MaskParamsOf(mask);
    for (uint64_t n : {0, 1, 2, 5, 6, 31, 32, 33, 100, 1000, 4099}) {
      ASSERT_EQ(RollingCount(p, n), mask.SampledCount(n)) << "n=" << n;
      std::vector<uint32_t> indices;
      mask.SampledIndices(n, &indices);
      ASSERT_EQ(indices.size(), RollingCount(p, n));
      for (uint64_t j = 0; j < indices.size(); ++j) {
        ASSERT_EQ(RollingCoordinate(p, j), indices[j]);
        ASSERT_EQ(SampledCoordinate(p, j, nullptr), indices[j]);
        ASSERT_EQ(RollingPosition(p, indices[j]), j);
      }
    }
  }
}

TEST(CudaCocktailMath, SeededWordsScanAndCompactionGiveTheSampledIndices) {
  for (const CocktailMask& mask : SomeMasks()) {
    if (mask.mode() != MaskMode::kSeeded) continue;
    const CocktailMaskParams p = MaskParamsOf(mask);
    for (int64_t n : {0, 1, 31, 32, 33, 64, 1000, 20011}) {
      std::vector<uint32_t> expected;
      mask.SampledIndices(n, &expected);
      std::vector<float> v(n);
      for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(i);
      const Sampled s = EmulateSample(v.data(), n, p);
      ASSERT_EQ(s.m, expected.size()) << "n=" << n;
      ASSERT_EQ(s.m, mask.SampledCount(n));
      ASSERT_EQ(s.index, expected) << "n=" << n;
      for (uint64_t j = 0; j < s.m; ++j) {
        ASSERT_EQ(s.values[j], static_cast<float>(expected[j]));
        ASSERT_EQ(SampledCoordinate(p, j, s.index.data()), expected[j]);
      }
    }
  }
}

TEST(CudaCocktailMath, BitHelpersMatchTheirDefinitions) {
  SplitMix64 rng(5);
  for (int t = 0; t < 20000; ++t) {
    const uint32_t x = static_cast<uint32_t>(rng.Next()) & static_cast<uint32_t>(rng.Next() >> 7);
    uint32_t reversed = 0;
    int ones = 0;
    for (int b = 0; b < 32; ++b) {
      reversed |= ((x >> b) & 1u) << (31 - b);
      ones += (x >> b) & 1u;
    }
    ASSERT_EQ(Reverse32(x), reversed);
    ASSERT_EQ(Popcount32(x), ones);
    for (int lane = 0; lane < 32; ++lane) {
      int below = 0;
      for (int b = 0; b < lane; ++b) below += (x >> b) & 1u;
      ASSERT_EQ(RankInLaneBits(x, lane), below);
      // The bitmap word of these lanes: the same bit at the same position, counted from the top.
      const uint32_t word = BitmapWordOfLanes(x);
      ASSERT_EQ(BitmapWordHas(word, lane), ((x >> lane) & 1u) != 0);
      ASSERT_EQ(BitmapRank(word, lane), below);
    }
  }
}

TEST(CudaCocktailMath, BitmapWordsAreTheMsbFirstBitPackingOfTheKeepFlags) {
  SplitMix64 rng(17);
  for (uint64_t m : {1, 7, 8, 9, 31, 32, 33, 63, 64, 65, 100, 1029}) {
    std::vector<uint8_t> flags(m);
    for (auto& f : flags) f = rng.Next() % 3 == 0;
    std::vector<uint8_t> packed(PackedBytes(m, 1), 0);
    BitPacker(packed.data(), 1).Append(flags.data(), m);
    const uint64_t words = WordCount(m);
    std::vector<uint8_t> ours(packed.size(), 0xa5);
    for (uint64_t w = 0; w < words; ++w) {
      const uint32_t lanes =
          Ballot(w, [&](int64_t j) { return j < static_cast<int64_t>(m) && flags[j]; });
      for (int q = 0; q < 4; ++q) {
        if (4 * w + q < ours.size()) ours[4 * w + q] = BitmapWordByte(BitmapWordOfLanes(lanes), q);
      }
      ASSERT_EQ(LoadBitmapWord(packed.data(), packed.size(), w), BitmapWordOfLanes(lanes));
    }
    ASSERT_EQ(ours, packed) << "m=" << m;
  }
}

TEST(CudaCocktailMath, KeepLaneBitsTakesTheLowestEqualLanes) {
  SplitMix64 rng(99);
  for (int t = 0; t < 20000; ++t) {
    const uint32_t a = static_cast<uint32_t>(rng.Next());
    const uint32_t b = static_cast<uint32_t>(rng.Next());
    const uint32_t greater = a & ~b & static_cast<uint32_t>(rng.Next());
    const uint32_t equal = b & ~greater;
    const uint32_t equal_before = static_cast<uint32_t>(rng.Next() % 40);
    const uint32_t ties = static_cast<uint32_t>(rng.Next() % 80);
    uint32_t expected = greater;
    uint32_t seen = equal_before;
    for (int lane = 0; lane < 32; ++lane) {
      if (((equal >> lane) & 1u) == 0) continue;
      if (seen < ties) expected |= 1u << lane;
      ++seen;
    }
    ASSERT_EQ(KeepLaneBits(greater, equal, equal_before, ties), expected);
    const uint64_t packed = PackCounts(static_cast<uint32_t>(rng.Next() % 1000), equal_before);
    ASSERT_EQ(KeptBefore(packed, ties), GreaterOf(packed) + std::min(equal_before, ties));
  }
  // The packed counts of words sum without carrying between the halves up to m = 2^32 - 1.
  const uint64_t a = PackCounts(0x7fffffffu, 0xfffffffeu), b = PackCounts(0x80000000u, 1u);
  EXPECT_EQ(GreaterOf(a + b), 0xffffffffu);
  EXPECT_EQ(EqualOf(a + b), 0xffffffffu);
}

TEST(CudaCocktailMath, RadixSelectFindsFindMagnitudeThresholdsKeyTiesAndEqual) {
  std::vector<uint32_t> scratch;
  int cases = 0, partial_ties = 0;
  for (Data kind : {Data::kGaussian, Data::kFewLevels, Data::kSameMagnitude, Data::kZerosAndTiny,
                    Data::kWideRange}) {
    for (int64_t m : {1, 2, 3, 31, 33, 257, 5000}) {
      const std::vector<float> v = MakeData(kind, m, 100 + m);
      for (int64_t k : {int64_t{1}, int64_t{2}, m / 3, m / 2, m - 1, m}) {
        if (k < 1 || k > m) continue;
        const MagnitudeThreshold cpu = FindMagnitudeThreshold(v.data(), m, k, &scratch);
        const SelectState s = EmulateSelect(v, static_cast<uint32_t>(k));
        ASSERT_EQ(s.prefix_mask, 0x7fffffffu);
        ASSERT_EQ(s.prefix, MagnitudeKey(cpu.magnitude))
            << "kind " << static_cast<int>(kind) << " m=" << m << " k=" << k;
        ASSERT_EQ(s.need, static_cast<uint32_t>(cpu.ties));
        ASSERT_EQ(s.equal, static_cast<uint32_t>(cpu.equal));
        ++cases;
        partial_ties += s.need < s.equal;
      }
    }
  }
  EXPECT_GT(cases, 150);
  EXPECT_GT(partial_ties, 40);
}

// ---- the emulated device codec against CocktailCodec
// ---------------------------------------------

struct CodecCase {
  MaskMode mode;
  double p, topk;
  int q, group;
  Rounding rounding;
  int64_t n;
  Data data;
};

std::string Describe(const CodecCase& c) {
  return std::string(c.mode == MaskMode::kRolling ? "rolling" : "seeded") +
         " p=" + std::to_string(c.p) + " topk=" + std::to_string(c.topk) +
         " q=" + std::to_string(c.q) + " group=" + std::to_string(c.group) +
         " n=" + std::to_string(c.n) + " data=" + std::to_string(static_cast<int>(c.data));
}

std::vector<CodecCase> CodecCases() {
  std::vector<CodecCase> cases;
  for (MaskMode mode : {MaskMode::kRolling, MaskMode::kSeeded}) {
    for (Data data : {Data::kGaussian, Data::kFewLevels, Data::kSameMagnitude, Data::kZerosAndTiny,
                      Data::kWideRange}) {
      cases.push_back({mode, 0.1, 0.2, 4, 128, Rounding::kNearest, 20000, data});
      cases.push_back({mode, 0.3, 0.5, 8, 64, Rounding::kStochastic, 3001, data});
      cases.push_back({mode, 1.0, 0.01, 2, 128, Rounding::kNearest, 4097, data});
      cases.push_back({mode, 0.05, 1.0, 3, 7, Rounding::kNearest, 1000, data});
    }
    for (int64_t n : {0, 1, 7, 31, 32, 33, 65}) {
      cases.push_back({mode, 0.5, 0.3, 4, 128, Rounding::kNearest, n, Data::kFewLevels});
    }
    cases.push_back({mode, 0.001, 0.2, 4, 128, Rounding::kNearest, 300, Data::kGaussian});  // m ~ 0
  }
  return cases;
}

TEST(CudaCocktailMath, EmulatedDeviceFramesAreCocktailCodecsBytes) {
  int frames = 0;
  g_partial_tie_frames = 0;
  for (const CodecCase& c : CodecCases()) {
    const CodecConfig config = CocktailConfig(c.mode, c.p, c.topk, c.q, c.group, false, c.rounding);
    auto cpu = CocktailCodec::Create(config);
    ASSERT_TRUE(cpu.ok()) << cpu.status().ToString();
    for (uint64_t step : {0, 1, 9, 1000003}) {
      const std::vector<float> x = MakeData(c.data, c.n, 7 * step + c.n);
      std::vector<uint8_t> cpu_params, cpu_payload, params, payload;
      const Status cpu_status = CpuEncode(**cpu, x, {c.n}, step, &cpu_params, &cpu_payload);
      ASSERT_TRUE(cpu_status.ok()) << cpu_status.ToString() << " " << Describe(c);
      const Status status = EmulateEncode(config, x, step, nullptr, &params, &payload);
      ASSERT_TRUE(status.ok()) << status.ToString() << " " << Describe(c);
      ASSERT_EQ(params, cpu_params) << Describe(c) << " step " << step;
      ASSERT_EQ(payload, cpu_payload) << Describe(c) << " step " << step;
      // And the emulated decoder gives the CPU decoder's values.
      const std::vector<float> want = CpuDecode(**cpu, cpu_params, cpu_payload, {c.n});
      const std::vector<float> got = EmulateDecode(cpu_params, cpu_payload, c.n);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_TRUE(SameBits(got[i], want[i])) << Describe(c) << " step " << step << " i=" << i;
      }
      ++frames;
    }
  }
  EXPECT_GT(frames, 200);
  EXPECT_GT(g_partial_tie_frames, 40);
}

TEST(CudaCocktailMath, EmulatedErrorFeedbackLeavesCocktailCodecsResidualBitForBit) {
  for (MaskMode mode : {MaskMode::kRolling, MaskMode::kSeeded}) {
    for (Data data : {Data::kGaussian, Data::kFewLevels, Data::kSameMagnitude}) {
      const CodecConfig config = CocktailConfig(mode, 0.25, 0.2, 4, 32, true);
      auto cpu = CocktailCodec::Create(config);
      ASSERT_TRUE(cpu.ok());
      std::vector<float> residual;
      Shape residual_shape;
      for (uint64_t step = 0; step < 30; ++step) {
        // Shape changes at steps 10 and 20 (both ends reset to zeros); a NaN at step 15.
        const int64_t n = step < 10 ? 2000 : step < 20 ? 1337 : 2048;
        const Shape shape = step < 20 ? Shape{n} : Shape{32, 64};
        std::vector<float> x = MakeData(data, n, 1000 + step);
        if (step == 15) x[n / 2] = std::numeric_limits<float>::quiet_NaN();
        if (residual_shape != shape) {  // CocktailCudaCodec::Encode's reset
          residual.assign(n, 0.0f);
          residual_shape = shape;
        }
        std::vector<uint8_t> cpu_params, cpu_payload, params, payload;
        const Status cpu_status = CpuEncode(**cpu, x, shape, step, &cpu_params, &cpu_payload);
        const Status status = EmulateEncode(config, x, step, &residual, &params, &payload);
        ASSERT_EQ(cpu_status.ok(), status.ok()) << cpu_status.ToString() << " step " << step;
        if (status.ok()) {
          ASSERT_EQ(params, cpu_params) << "step " << step;
          ASSERT_EQ(payload, cpu_payload) << "step " << step;
        }
        const Span<const float> want = (*cpu)->residual();
        ASSERT_EQ(want.size(), residual.size());
        for (size_t i = 0; i < residual.size(); ++i) {
          ASSERT_TRUE(SameBits(residual[i], want[i]))
              << "mode " << static_cast<int>(mode) << " step " << step << " i=" << i << ": "
              << residual[i] << " vs " << want[i];
        }
        if (step == 15) {
          for (float r : residual) ASSERT_EQ(r, 0.0f);
        }
      }
    }
  }
}

}  // namespace
}  // namespace geotrain::compression::cuda
