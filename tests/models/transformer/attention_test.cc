// CausalSelfAttention and rotary embeddings against direct definitions.
#include "models/transformer/attention.h"

#include <gtest/gtest.h>
#include <torch/version.h>

#include <cmath>

#include "models/transformer/rotary.h"

namespace geotrain::models {
namespace {

// softmax(q k^T / sqrt(D)) v over positions <= t, one query position at a time, in float64.
at::Tensor ReferenceAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  const int64_t heads = q.size(1), kv_heads = k.size(1), seq = q.size(2), dim = q.size(3);
  at::Tensor out = at::zeros_like(q);
  for (int64_t h = 0; h < heads; ++h) {
    const int64_t kv = h / (heads / kv_heads);  // consecutive query heads share a kv head
    for (int64_t t = 0; t < seq; ++t) {
      const at::Tensor query = q.select(1, h).select(1, t);         // [B, D]
      const at::Tensor keys = k.select(1, kv).narrow(1, 0, t + 1);  // [B, t+1, D]
      const at::Tensor values = v.select(1, kv).narrow(1, 0, t + 1);
      const at::Tensor scores = at::einsum("bd,btd->bt", {query, keys}) / std::sqrt(dim);
      out.select(1, h).select(1, t).copy_(
          at::einsum("bt,btd->bd", {at::softmax(scores, -1), values}));
    }
  }
  return out;
}

TEST(AttentionTest, MatchesTheDefinitionWithGroupedKeyValueHeads) {
  at::manual_seed(3);
  const at::Tensor q = at::randn({2, 6, 5, 4}, at::kDouble);
  const at::Tensor k = at::randn({2, 2, 5, 4}, at::kDouble);
  const at::Tensor v = at::randn({2, 2, 5, 4}, at::kDouble);
  const at::Tensor out = CausalSelfAttention(q, k, v);
  ASSERT_EQ(out.sizes(), q.sizes());
  EXPECT_LT((out - ReferenceAttention(q, k, v)).abs().max().item<double>(), 1e-12);
}

TEST(AttentionTest, FutureKeysAndValuesDoNotLeak) {
  at::manual_seed(4);
  const at::Tensor q = at::randn({1, 2, 6, 8});
  at::Tensor k = at::randn({1, 2, 6, 8});
  at::Tensor v = at::randn({1, 2, 6, 8});
  const at::Tensor before = CausalSelfAttention(q, k, v);
  k.narrow(2, 4, 2).normal_();
  v.narrow(2, 4, 2).normal_();
  const at::Tensor after = CausalSelfAttention(q, k, v);
  EXPECT_TRUE(at::equal(before.narrow(2, 0, 4), after.narrow(2, 0, 4)));
  EXPECT_FALSE(at::equal(before.narrow(2, 4, 2), after.narrow(2, 4, 2)));
}

TEST(AttentionTest, FusedKernelOnlyWithLibTorch2) {
#if TORCH_VERSION_MAJOR >= 2
  EXPECT_TRUE(HasFusedAttention());
#else
  EXPECT_FALSE(HasFusedAttention());
#endif
}

TEST(RotaryTest, RotatesPairsOfHalvesByPosition) {
  const int64_t dim = 8;
  const double theta = 100.0;
  const RotaryTables tables = MakeRotaryTables(5, dim, theta, at::TensorOptions(at::kDouble));
  at::manual_seed(5);
  const at::Tensor x = at::randn({1, 1, 5, dim}, at::kDouble);
  const at::Tensor rotated = ApplyRotary(x, tables);
  for (int64_t p = 0; p < 5; ++p) {
    for (int64_t i = 0; i < dim / 2; ++i) {
      const double angle = p * std::pow(theta, -2.0 * i / dim);
      const double x1 = x[0][0][p][i].item<double>(), x2 = x[0][0][p][i + dim / 2].item<double>();
      EXPECT_NEAR(rotated[0][0][p][i].item<double>(), x1 * std::cos(angle) - x2 * std::sin(angle),
                  1e-6);
      EXPECT_NEAR(rotated[0][0][p][i + dim / 2].item<double>(),
                  x2 * std::cos(angle) + x1 * std::sin(angle), 1e-6);
    }
  }
}

// GPT-J's convention on part of a head: pairs (x[2i], x[2i+1]) of the first R dimensions turn,
// the rest of the head passes unchanged.
TEST(RotaryTest, InterleavedPairsOnPartOfTheHead) {
  const int64_t rotated = 6, dim = 10;
  const double theta = 100.0;
  const RotaryTables tables = MakeRotaryTables(5, rotated, theta, at::TensorOptions(at::kDouble),
                                               RotaryPairing::kInterleaved);
  at::manual_seed(7);
  const at::Tensor x = at::randn({1, 1, 5, dim}, at::kDouble);
  const at::Tensor result = ApplyRotary(x, tables);
  for (int64_t p = 0; p < 5; ++p) {
    for (int64_t i = 0; i < rotated / 2; ++i) {
      const double angle = p * std::pow(theta, -2.0 * i / rotated);
      const double a = x[0][0][p][2 * i].item<double>(), b = x[0][0][p][2 * i + 1].item<double>();
      EXPECT_NEAR(result[0][0][p][2 * i].item<double>(), a * std::cos(angle) - b * std::sin(angle),
                  1e-12);
      EXPECT_NEAR(result[0][0][p][2 * i + 1].item<double>(),
                  b * std::cos(angle) + a * std::sin(angle), 1e-12);
    }
    for (int64_t i = rotated; i < dim; ++i) {
      EXPECT_EQ(result[0][0][p][i].item<double>(), x[0][0][p][i].item<double>());
    }
  }
}

TEST(RotaryTest, ScoresDependOnRelativePositionOnly) {
  const int64_t dim = 16, seq = 10;
  const RotaryTables tables = MakeRotaryTables(seq, dim, 10000.0, at::TensorOptions(at::kDouble));
  at::manual_seed(6);
  // The same query and key vector at every position.
  const at::Tensor q = ApplyRotary(at::randn({dim}, at::kDouble).expand({1, 1, seq, dim}), tables);
  const at::Tensor k = ApplyRotary(at::randn({dim}, at::kDouble).expand({1, 1, seq, dim}), tables);
  const at::Tensor scores = at::matmul(q, k.transpose(-2, -1))[0][0];
  for (int64_t offset = 0; offset < 4; ++offset) {
    const double first = scores[offset][0].item<double>();
    for (int64_t p = offset; p < seq; ++p) {
      EXPECT_NEAR(scores[p][p - offset].item<double>(), first, 1e-5) << "offset " << offset;
    }
  }
}

}  // namespace
}  // namespace geotrain::models
