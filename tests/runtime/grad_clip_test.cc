// Global-norm clipping: the squared norm in double, torch's clip coefficient, in-place scaling.
#include "runtime/grad_clip.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace geotrain::runtime {
namespace {

models::NamedParameter Param(const std::string& name, at::Tensor value, at::Tensor grad) {
  value.set_requires_grad(true);
  if (grad.defined()) value.mutable_grad() = grad;
  return {name, value};
}

TEST(GradClipTest, SquaredNormSumsEveryDefinedGrad) {
  const std::vector<models::NamedParameter> params = {
      Param("a", at::zeros({2}), at::tensor({3.0f, 4.0f})),
      Param("b", at::zeros({2, 2}), at::tensor({1.0f, 2.0f, 2.0f, 0.0f}).reshape({2, 2})),
      Param("no_grad", at::ones({3}), at::Tensor()),
  };
  EXPECT_DOUBLE_EQ(SquaredGradNorm(params), 9 + 16 + 1 + 4 + 4);
  EXPECT_DOUBLE_EQ(SquaredGradNorm({}), 0);
}

TEST(GradClipTest, HalfPrecisionGradsDoNotOverflow) {
  // 300^2 = 90000 is beyond float16's 65504.
  const std::vector<models::NamedParameter> params = {
      Param("h", at::zeros({8}, at::kHalf), at::full({8}, 300.0, at::kHalf)),
      Param("bf", at::zeros({2}, at::kBFloat16), at::full({2}, 256.0, at::kBFloat16)),
  };
  EXPECT_DOUBLE_EQ(SquaredGradNorm(params), 8 * 90000.0 + 2 * 65536.0);
}

TEST(GradClipTest, CoefficientIsTorchs) {
  EXPECT_DOUBLE_EQ(ClipCoefficient(10.0, 1.0), 1.0 / (10.0 + 1e-6));
  EXPECT_DOUBLE_EQ(ClipCoefficient(0.5, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(ClipCoefficient(1.0, 1.0), 1.0 / (1.0 + 1e-6));  // torch clips at equality too
  EXPECT_DOUBLE_EQ(ClipCoefficient(0.0, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(ClipCoefficient(std::numeric_limits<double>::infinity(), 1.0), 0.0);
  EXPECT_TRUE(std::isnan(ClipCoefficient(std::nan(""), 1.0)));
}

TEST(GradClipTest, NonPositiveMaxNormTurnsClippingOff) {
  EXPECT_DOUBLE_EQ(ClipCoefficient(1e9, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(ClipCoefficient(1e9, -1.0), 1.0);
  EXPECT_DOUBLE_EQ(ClipCoefficient(std::nan(""), 0.0), 1.0);
}

TEST(GradClipTest, ScaleGradsScalesDefinedGradsOnly) {
  const std::vector<models::NamedParameter> params = {
      Param("a", at::zeros({2}), at::tensor({3.0f, 4.0f})),
      Param("no_grad", at::ones({3}), at::Tensor()),
  };
  ScaleGrads(params, 0.5);
  EXPECT_TRUE(at::equal(params[0].tensor.grad(), at::tensor({1.5f, 2.0f})));
  EXPECT_FALSE(params[1].tensor.grad().defined());
  EXPECT_TRUE(at::equal(params[1].tensor, at::ones({3})));
}

TEST(GradClipTest, ClippingLeavesTheGlobalNormAtMaxNorm) {
  at::manual_seed(5);
  // Two "stages": the norm is global over both, as the runtime's all-reduce makes it.
  const std::vector<models::NamedParameter> stage0 = {
      Param("w0", at::zeros({16, 8}), at::randn({16, 8}) * 3)};
  const std::vector<models::NamedParameter> stage1 = {
      Param("w1", at::zeros({8, 4}), at::randn({8, 4})),
      Param("b1", at::zeros({4}), at::randn({4}))};
  const double total = std::sqrt(SquaredGradNorm(stage0) + SquaredGradNorm(stage1));
  ASSERT_GT(total, 2.0);
  const double coefficient = ClipCoefficient(total, 2.0);
  ScaleGrads(stage0, coefficient);
  ScaleGrads(stage1, coefficient);
  const double clipped = std::sqrt(SquaredGradNorm(stage0) + SquaredGradNorm(stage1));
  EXPECT_NEAR(clipped, 2.0 * total / (total + 1e-6), 1e-6);
}

}  // namespace
}  // namespace geotrain::runtime
