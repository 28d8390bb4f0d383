#include "compression/activation_cache.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/half.h"
#include "compression/fixpoint_block.h"
#include "compression/half_kernels.h"
#include "compression/synthetic_tensors.h"

namespace geotrain::compression {
namespace {

// A fresh directory, removed at the end; EntryCount shows whether anything was left in it.
class ScopedTempDir {
 public:
  ScopedTempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base && *base ? base : "/tmp") + "/geotrain-cache-test-XXXXXX";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    path_ = mkdtemp(buf.data());
  }
  ~ScopedTempDir() { rmdir(path_.c_str()); }
  const std::string& path() const { return path_; }
  int EntryCount() const {
    DIR* dir = opendir(path_.c_str());
    int count = 0;
    while (dirent* e = readdir(dir)) {
      if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, "..")) ++count;
    }
    closedir(dir);
    return count;
  }

 private:
  std::string path_;
};

std::unique_ptr<ActivationCache> MakeCache(
    const std::string& dir, int64_t slots, int cache_bits = 0,
    CacheFullPolicy policy = CacheFullPolicy::kEvictLeastRecent) {
  ActivationCacheOptions options;
  options.max_samples = slots;
  options.cache_bits = cache_bits;
  options.full_policy = policy;
  options.dir = dir;
  auto cache = ActivationCache::Create(options);
  EXPECT_TRUE(cache.ok()) << cache.status().ToString();
  return std::move(cache).value();
}

std::vector<uint8_t> ToHalfBytes(const std::vector<float>& x) {
  std::vector<uint8_t> bytes(2 * x.size());
  EXPECT_TRUE(FloatToHalfInRange(x.data(), x.size(), bytes.data(), nullptr));
  return bytes;
}

TEST(ActivationCache, StoresFp16ValuesExactly) {
  ScopedTempDir dir;
  auto cache = MakeCache(dir.path(), 4);
  ASSERT_TRUE(cache->UseSampleShape(3, 5).ok());
  std::vector<float> x = MakeGaussian(15, 1);
  const std::vector<uint8_t> half = ToHalfBytes(x);
  ASSERT_TRUE(cache->StoreHalf(42, half.data()).ok());
  EXPECT_TRUE(cache->Contains(42));
  EXPECT_FALSE(cache->Contains(43));
  EXPECT_EQ(cache->size(), 1);
  EXPECT_EQ(cache->capacity(), 4);
  const Span<const uint8_t> stored = cache->SampleBytes(42);
  ASSERT_EQ(stored.size(), half.size());
  EXPECT_EQ(std::memcmp(stored.data(), half.data(), half.size()), 0);
  std::vector<float> back(15);
  ASSERT_TRUE(cache->Lookup(42, back.data()).ok());
  for (int i = 0; i < 15; ++i) EXPECT_EQ(back[i], HalfToFloat(FloatToHalf(x[i])));
  EXPECT_EQ(cache->Lookup(43, back.data()).code(), StatusCode::kNotFound);
}

TEST(ActivationCache, LowBitSlotHoldsOnePerChannelFixpointBlock) {
  ScopedTempDir dir;
  const int64_t rows = 16, cols = 40;
  for (int bits : {2, 4, 8}) {
    auto cache = MakeCache(dir.path(), 2, bits);
    ASSERT_TRUE(cache->UseSampleShape(rows, cols).ok());
    const std::vector<float> x = MakeActivationLike(rows, cols, bits);
    ASSERT_TRUE(cache->Store(7, x.data()).ok());
    EXPECT_EQ(cache->SampleBytes(7).size(),
              FixpointBlockBytes({rows, cols, ScaleMode::kPerChannel, 64}, bits));
    std::vector<float> back(rows * cols);
    ASSERT_TRUE(cache->Lookup(7, back.data()).ok());
    for (int64_t c = 0; c < cols; ++c) {
      float channel_max = 0;
      for (int64_t r = 0; r < rows; ++r)
        channel_max = std::max(channel_max, std::fabs(x[r * cols + c]));
      const float step = HalfToFloat(FloatToHalfRoundUp(channel_max)) / (1 << (bits - 1));
      for (int64_t r = 0; r < rows; ++r) {
        ASSERT_LE(std::fabs(back[r * cols + c] - x[r * cols + c]), step * 1.01f + 1e-3f)
            << "bits=" << bits << " r=" << r << " c=" << c;
      }
    }
  }
}

TEST(ActivationCache, EvictsTheLeastRecentlyWrittenSample) {
  ScopedTempDir dir;
  auto cache = MakeCache(dir.path(), 3);
  ASSERT_TRUE(cache->UseSampleShape(1, 8).ok());
  const std::vector<uint8_t> v = ToHalfBytes(MakeGaussian(8, 3));
  for (uint64_t id : {1, 2, 3}) ASSERT_TRUE(cache->StoreHalf(id, v.data()).ok());
  // A delta write makes 1 recent; a lookup does not make 2 recent.
  std::vector<float> zeros(8, 0.0f), out(8);
  ASSERT_TRUE(cache->AccumulateDelta(1, zeros.data(), nullptr, nullptr, nullptr).ok());
  ASSERT_TRUE(cache->Lookup(2, out.data()).ok());
  ASSERT_TRUE(cache->StoreHalf(4, v.data()).ok());
  EXPECT_FALSE(cache->Contains(2));
  EXPECT_EQ(cache->IdsByRecency(), (std::vector<uint64_t>{3, 1, 4}));
  cache->Touch(3);
  ASSERT_TRUE(cache->StoreHalf(5, v.data()).ok());
  EXPECT_EQ(cache->IdsByRecency(), (std::vector<uint64_t>{4, 3, 5}));
  EXPECT_EQ(cache->size(), 3);
}

TEST(ActivationCache, ErrorPolicyRefusesANewSampleWhenFull) {
  ScopedTempDir dir;
  auto cache = MakeCache(dir.path(), 2, 0, CacheFullPolicy::kError);
  ASSERT_TRUE(cache->UseSampleShape(2, 4).ok());
  const std::vector<uint8_t> v = ToHalfBytes(MakeGaussian(8, 4));
  ASSERT_TRUE(cache->StoreHalf(1, v.data()).ok());
  ASSERT_TRUE(cache->StoreHalf(2, v.data()).ok());
  EXPECT_TRUE(cache->CheckRoomFor(0).ok());
  const Status s = cache->StoreHalf(3, v.data());
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("max_cache_samples"), std::string::npos) << s.ToString();
  EXPECT_EQ(cache->CheckRoomFor(1).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(cache->IdsByRecency(), (std::vector<uint64_t>{1, 2}));
  ASSERT_TRUE(cache->StoreHalf(1, v.data()).ok());  // replacing a cached sample needs no room
}

TEST(ActivationCache, RefusesASampleOfAnotherShape) {
  ScopedTempDir dir;
  auto cache = MakeCache(dir.path(), 2);
  ASSERT_TRUE(cache->UseSampleShape(1024, 16).ok());
  const Status s = cache->UseSampleShape(512, 16);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("8192"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("16384"), std::string::npos) << s.ToString();
  EXPECT_EQ(cache->UseSampleShape(0, 16).code(), StatusCode::kInvalidArgument);
}

TEST(ActivationCache, ClearEmptiesTheCacheAndForgetsTheShape) {
  ScopedTempDir dir;
  auto cache = MakeCache(dir.path(), 2);
  ASSERT_TRUE(cache->UseSampleShape(2, 4).ok());
  const std::vector<uint8_t> v = ToHalfBytes(MakeGaussian(8, 5));
  ASSERT_TRUE(cache->StoreHalf(9, v.data()).ok());
  cache->Clear();
  EXPECT_EQ(cache->size(), 0);
  EXPECT_FALSE(cache->Contains(9));
  EXPECT_FALSE(cache->has_sample_shape());
  EXPECT_EQ(cache->StoreHalf(9, v.data()).code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(cache->UseSampleShape(4, 4).ok());
}

TEST(ActivationCache, BackingFileIsUnlinkedAtOnce) {
  ScopedTempDir dir;
  {
    auto cache = MakeCache(dir.path(), 1000);  // 1000 x 64 KiB, sparse
    ASSERT_TRUE(cache->UseSampleShape(128, 256).ok());
    const std::vector<uint8_t> v = ToHalfBytes(MakeGaussian(128 * 256, 6));
    ASSERT_TRUE(cache->StoreHalf(1, v.data()).ok());
    EXPECT_EQ(dir.EntryCount(), 0);
  }
  EXPECT_EQ(dir.EntryCount(), 0);
}

TEST(ActivationCache, MissingDirectoryIsUnavailable) {
  ActivationCacheOptions options;
  options.dir = "/nonexistent/geotrain-cache";
  const auto cache = ActivationCache::Create(options);
  ASSERT_FALSE(cache.ok());
  EXPECT_EQ(cache.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(cache.status().message().find("cache_dir"), std::string::npos);
}

TEST(ActivationCache, SubtractRefusesValuesBeyondTheFp16Range) {
  ScopedTempDir dir;
  for (int bits : {0, 4}) {
    auto cache = MakeCache(dir.path(), 1, bits);
    ASSERT_TRUE(cache->UseSampleShape(1, 9).ok());
    std::vector<float> x = MakeGaussian(9, 7), delta(9);
    ASSERT_TRUE(cache->Store(1, x.data()).ok());
    ASSERT_TRUE(cache->Subtract(1, x.data(), delta.data()).ok());
    for (float bad : {NAN, INFINITY, 70000.0f}) {
      x[8] = bad;
      EXPECT_EQ(cache->Subtract(1, x.data(), delta.data()).code(), StatusCode::kInvalidArgument);
      EXPECT_EQ(cache->Store(2, x.data()).code(), StatusCode::kInvalidArgument);
    }
  }
}

TEST(ActivationCache, AccumulatedValuesSaturateAtTheFp16Maximum) {
  ScopedTempDir dir;
  auto cache = MakeCache(dir.path(), 1);
  ASSERT_TRUE(cache->UseSampleShape(1, 2).ok());
  const std::vector<float> x = {60000.0f, -60000.0f};
  ASSERT_TRUE(cache->Store(1, x.data()).ok());
  const std::vector<float> delta = {30000.0f, -1e30f};
  std::vector<float> out(2);
  ASSERT_TRUE(cache->AccumulateDelta(1, delta.data(), out.data(), nullptr, nullptr).ok());
  EXPECT_EQ(out[0], kHalfMax);
  EXPECT_EQ(out[1], -kHalfMax);
}

// The vector kernels must give exactly the scalar results: sender and receiver may run either.
TEST(ActivationCacheKernels, VectorPathsMatchTheScalarReferenceBitForBit) {
  const int64_t n = 1003;  // a scalar tail after the vector part
  std::vector<float> a = MakeGaussian(n, 11, 300.0f);
  a[5] = 65504.0f;
  a[6] = -65504.0f;
  a[7] = 1e-7f;  // an fp16 subnormal
  a[8] = 65519.0f;
  a[9] = -0.0f;
  std::vector<float> delta = MakeGaussian(n, 12, 3000.0f);
  delta[10] = 1e9f;
  std::vector<uint8_t> h1(2 * n), h2(2 * n);
  ErrorSums e1, e2;
  EXPECT_FALSE(FloatToHalfInRange(a.data(), n, h1.data(), &e1));  // 65519 is out of range
  EXPECT_FALSE(FloatToHalfInRangeScalar(a.data(), n, h2.data(), &e2));
  EXPECT_EQ(h1, h2);
  a[8] = 1.0f;
  EXPECT_TRUE(FloatToHalfInRange(a.data(), n, h1.data(), &e1));
  EXPECT_TRUE(FloatToHalfInRangeScalar(a.data(), n, h2.data(), &e2));
  EXPECT_EQ(h1, h2);
  EXPECT_NEAR(e1.error_sq, e2.error_sq, 1e-3 * e2.error_sq);

  std::vector<float> f1(n), f2(n);
  std::vector<uint8_t> odd(2 * n + 1);
  std::memcpy(odd.data() + 1, h1.data(), 2 * n);  // fp16 runs may start at odd addresses
  EXPECT_TRUE(HalfToFloatFinite(odd.data() + 1, n, f1.data()));
  EXPECT_TRUE(HalfToFloatFiniteScalar(odd.data() + 1, n, f2.data()));
  EXPECT_EQ(std::memcmp(f1.data(), f2.data(), 4 * n), 0);

  EXPECT_TRUE(SubtractHalf(a.data(), h1.data(), n, f1.data()));
  EXPECT_TRUE(SubtractHalfScalar(a.data(), h1.data(), n, f2.data()));
  EXPECT_EQ(std::memcmp(f1.data(), f2.data(), 4 * n), 0);

  std::vector<uint8_t> m1 = h1, m2 = h1;
  ErrorSums u1, u2;
  AddDeltaToHalf(delta.data(), n, m1.data(), f1.data(), a.data(), &u1);
  AddDeltaToHalfScalar(delta.data(), n, m2.data(), f2.data(), a.data(), &u2);
  EXPECT_EQ(m1, m2);
  EXPECT_EQ(std::memcmp(f1.data(), f2.data(), 4 * n), 0);
  EXPECT_NEAR(u1.error_sq, u2.error_sq, 1e-4 * u2.error_sq);
  EXPECT_NEAR(u1.norm_sq, u2.norm_sq, 1e-4 * u2.norm_sq);
}

TEST(ActivationCacheKernels, HalfToFloatFlagsInfinityAndNaN) {
  for (uint16_t bad : {uint16_t{0x7c00}, uint16_t{0xfc00}, uint16_t{0x7e00}}) {
    std::vector<uint8_t> h(2 * 20, 0);
    std::memcpy(h.data() + 2 * 13, &bad, 2);
    std::vector<float> out(20);
    EXPECT_FALSE(HalfToFloatFinite(h.data(), 20, out.data()));
    EXPECT_FALSE(HalfToFloatFiniteScalar(h.data(), 20, out.data()));
  }
}

}  // namespace
}  // namespace geotrain::compression
