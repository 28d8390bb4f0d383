// AdamW against an independent reference: torch.optim.AdamW's update (torch/optim/adamw.py,
// single-tensor path) written as plain double loops, plus the state round trip and its errors.
#include "runtime/adamw.h"

#include <gtest/gtest.h>

#include <cmath>

namespace geotrain::runtime {
namespace {

// torch.optim.AdamW for one parameter, in double. Like torch, each parameter counts its own steps.
struct ReferenceParam {
  std::vector<double> value, exp_avg, exp_avg_sq;
  bool one_dim = false;
  int64_t step = 0;

  explicit ReferenceParam(const at::Tensor& p)
      : exp_avg(p.numel(), 0.0), exp_avg_sq(p.numel(), 0.0), one_dim(p.dim() <= 1) {
    const at::Tensor flat = p.detach().to(at::kDouble).reshape({-1}).contiguous();
    value.assign(flat.data_ptr<double>(), flat.data_ptr<double>() + flat.numel());
  }

  void Step(const std::vector<double>& grad, double lr, const AdamWOptions& o) {
    ++step;
    const bool decays = o.decay_one_dim || !one_dim;
    const double bias_correction1 = 1 - std::pow(o.beta1, step);
    const double bias_correction2 = 1 - std::pow(o.beta2, step);
    for (size_t i = 0; i < value.size(); ++i) {
      if (decays) value[i] *= 1 - lr * o.weight_decay;
      exp_avg[i] = o.beta1 * exp_avg[i] + (1 - o.beta1) * grad[i];
      exp_avg_sq[i] = o.beta2 * exp_avg_sq[i] + (1 - o.beta2) * grad[i] * grad[i];
      const double denom = std::sqrt(exp_avg_sq[i]) / std::sqrt(bias_correction2) + o.eps;
      value[i] -= lr / bias_correction1 * exp_avg[i] / denom;
    }
  }
};

at::Tensor Leaf(at::Tensor value) { return value.set_requires_grad(true); }

// A gradient that changes sign and magnitude from step to step and element to element.
std::vector<double> Gradient(int64_t step, size_t param, int64_t numel) {
  std::vector<double> g(numel);
  for (int64_t i = 0; i < numel; ++i) {
    g[i] = std::sin(0.7 * step + 1.3 * i + 2.1 * param) * (0.1 + 0.5 * ((step + i) % 3));
  }
  return g;
}

void SetGrad(at::Tensor& p, const std::vector<double>& g) {
  p.mutable_grad() = at::tensor(at::ArrayRef<double>(g)).to(p.scalar_type()).reshape(p.sizes());
}

std::vector<double> Values(const at::Tensor& p) {
  const at::Tensor flat = p.detach().to(at::kDouble).reshape({-1}).contiguous();
  return {flat.data_ptr<double>(), flat.data_ptr<double>() + flat.numel()};
}

// A 2-D weight and a 1-D bias that get gradients, and a 2-D tensor that never does.
std::vector<models::NamedParameter> MakeParams() {
  at::manual_seed(11);
  return {{"layer.weight", Leaf(at::randn({3, 4}))},
          {"layer.bias", Leaf(at::randn({4}))},
          {"frozen.weight", Leaf(at::randn({2, 2}))}};
}

// Runs `steps` steps of `optimizer` and of the reference on the same gradients, with a learning
// rate that changes every step. The last parameter never gets a gradient.
void RunBoth(AdamW& optimizer, std::vector<models::NamedParameter>& params,
             std::vector<ReferenceParam>& reference, const AdamWOptions& options,
             int64_t first_step, int64_t steps) {
  for (int64_t step = first_step; step < first_step + steps; ++step) {
    const double lr = 1e-2 * (1.0 + 0.1 * step);
    for (size_t i = 0; i + 1 < params.size(); ++i) {
      const std::vector<double> g = Gradient(step, i, params[i].tensor.numel());
      SetGrad(params[i].tensor, g);
      reference[i].Step(g, lr, options);
    }
    optimizer.Step(lr);
  }
}

void ExpectClose(const std::vector<double>& actual, const std::vector<double>& expected,
                 const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_NEAR(actual[i], expected[i], 1e-6 * std::max(1.0, std::abs(expected[i])))
        << what << "[" << i << "]";
  }
}

class AdamWTest : public ::testing::TestWithParam<bool> {};

TEST_P(AdamWTest, MatchesTorchAdamWOverTenSteps) {
  AdamWOptions options;
  options.weight_decay = 0.1;  // large enough that skipping or applying it shows
  options.decay_one_dim = GetParam();
  std::vector<models::NamedParameter> params = MakeParams();
  std::vector<ReferenceParam> reference;
  for (const models::NamedParameter& p : params) reference.emplace_back(p.tensor);
  const at::Tensor frozen_before = params[2].tensor.clone();

  AdamW optimizer(params, options);
  RunBoth(optimizer, params, reference, options, 0, 10);
  EXPECT_EQ(optimizer.step(), 10);
  for (size_t i = 0; i < 2; ++i) {
    ExpectClose(Values(params[i].tensor), reference[i].value, params[i].name);
    ExpectClose(Values(optimizer.first_moments()[i]), reference[i].exp_avg,
                params[i].name + ".exp_avg");
    ExpectClose(Values(optimizer.StateTensors().at(params[i].name + ".exp_avg_sq")),
                reference[i].exp_avg_sq, params[i].name + ".exp_avg_sq");
  }
  // A parameter without a grad: untouched (no weight decay either), moments still zero.
  EXPECT_TRUE(at::equal(params[2].tensor, frozen_before));
  EXPECT_EQ(optimizer.first_moments()[2].abs().max().item<float>(), 0.0f);
}

TEST_P(AdamWTest, OneDimensionalTensorsDecayOnlyWhenAsked) {
  // With zero gradients only weight decay moves a parameter (m = v = 0, so the Adam step is 0).
  AdamWOptions options;
  options.weight_decay = 0.5;
  options.decay_one_dim = GetParam();
  std::vector<models::NamedParameter> params = {{"w", Leaf(at::ones({2, 2}))},
                                                {"b", Leaf(at::ones({2}))}};
  for (models::NamedParameter& p : params) p.tensor.mutable_grad() = at::zeros_like(p.tensor);
  AdamW optimizer(params, options);
  optimizer.Step(0.1);
  EXPECT_TRUE(at::allclose(params[0].tensor, at::full({2, 2}, 0.95)));
  EXPECT_TRUE(at::allclose(params[1].tensor, at::full({2}, GetParam() ? 0.95 : 1.0)));
}

INSTANTIATE_TEST_SUITE_P(AdamW, AdamWTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "DecayOneDim" : "SkipOneDim";
                         });

TEST(AdamWSplitTest, MomentsThenUpdateEqualsStepBitwise) {
  std::vector<models::NamedParameter> a = MakeParams(), b = MakeParams();
  AdamW whole(a, AdamWOptions()), split(b, AdamWOptions());
  for (int64_t step = 0; step < 3; ++step) {
    for (size_t i = 0; i < 2; ++i) {
      SetGrad(a[i].tensor, Gradient(step, i, a[i].tensor.numel()));
      SetGrad(b[i].tensor, Gradient(step, i, b[i].tensor.numel()));
    }
    whole.Step(1e-3);
    split.UpdateMoments();
    split.ApplyUpdate(1e-3);
  }
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(at::equal(a[i].tensor, b[i].tensor));
}

// Deep copies, as a checkpoint on disk would hold them.
std::map<std::string, at::Tensor> Saved(const AdamW& optimizer) {
  std::map<std::string, at::Tensor> state;
  for (const auto& [name, tensor] : optimizer.StateTensors()) state[name] = tensor.clone();
  return state;
}

TEST(AdamWStateTest, RoundTripContinuesBitwiseEqual) {
  AdamWOptions options;
  std::vector<models::NamedParameter> params = MakeParams();
  std::vector<ReferenceParam> reference;
  for (const models::NamedParameter& p : params) reference.emplace_back(p.tensor);
  AdamW original(params, options);
  RunBoth(original, params, reference, options, 0, 5);

  // Resume: fresh tensors with the step-5 values, a fresh optimizer, the saved state.
  const std::map<std::string, at::Tensor> state = Saved(original);
  std::vector<models::NamedParameter> resumed_params;
  for (const models::NamedParameter& p : params) {
    resumed_params.push_back({p.name, Leaf(p.tensor.detach().clone())});
  }
  AdamW resumed(resumed_params, options);
  ASSERT_TRUE(resumed.LoadStateTensors(state).ok());
  EXPECT_EQ(resumed.step(), 5);

  std::vector<ReferenceParam> resumed_reference = reference;
  RunBoth(original, params, reference, options, 5, 5);
  RunBoth(resumed, resumed_params, resumed_reference, options, 5, 5);
  EXPECT_EQ(resumed.step(), 10);
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_TRUE(at::equal(params[i].tensor, resumed_params[i].tensor)) << params[i].name;
  }
  const std::map<std::string, at::Tensor> a = original.StateTensors(), b = resumed.StateTensors();
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, tensor] : a) EXPECT_TRUE(at::equal(tensor, b.at(name))) << name;
}

TEST(AdamWStateTest, StateTensorNamesAndTypes) {
  std::vector<models::NamedParameter> params = MakeParams();
  AdamW optimizer(params, AdamWOptions());
  const std::map<std::string, at::Tensor> state = optimizer.StateTensors();
  EXPECT_EQ(state.size(), 2 * params.size() + 1);
  for (const models::NamedParameter& p : params) {
    EXPECT_EQ(state.at(p.name + ".exp_avg").sizes(), p.tensor.sizes());
    EXPECT_EQ(state.at(p.name + ".exp_avg_sq").scalar_type(), at::kFloat);
  }
  EXPECT_EQ(state.at("adamw.step").scalar_type(), at::kLong);
  EXPECT_EQ(state.at("adamw.step").dim(), 0);
}

TEST(AdamWStateTest, LoadErrorsNameTheTensorAndChangeNothing) {
  std::vector<models::NamedParameter> params = MakeParams();
  AdamW optimizer(params, AdamWOptions());
  for (size_t i = 0; i < 2; ++i)
    SetGrad(params[i].tensor, Gradient(0, i, params[i].tensor.numel()));
  optimizer.Step(1e-3);
  const std::map<std::string, at::Tensor> good = Saved(optimizer);

  auto expect_error = [&](std::map<std::string, at::Tensor> state, const std::string& name,
                          const std::string& reason) {
    const at::Tensor before = optimizer.first_moments()[0].clone();
    const Status status = optimizer.LoadStateTensors(state);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << name;
    EXPECT_NE(status.message().find(name), std::string::npos) << status.ToString();
    EXPECT_NE(status.message().find(reason), std::string::npos) << status.ToString();
    EXPECT_EQ(optimizer.step(), 1);
    EXPECT_TRUE(at::equal(optimizer.first_moments()[0], before));
  };
  std::map<std::string, at::Tensor> missing = good;
  missing.erase("layer.bias.exp_avg_sq");
  expect_error(missing, "layer.bias.exp_avg_sq", "missing");

  std::map<std::string, at::Tensor> wrong_shape = good;
  wrong_shape["layer.weight.exp_avg"] = at::zeros({4, 3});
  expect_error(wrong_shape, "layer.weight.exp_avg", "shape");

  std::map<std::string, at::Tensor> no_step = good;
  no_step.erase("adamw.step");
  expect_error(no_step, "adamw.step", "missing");

  std::map<std::string, at::Tensor> float_step = good;
  float_step["adamw.step"] = at::scalar_tensor(1.0, at::kFloat);
  expect_error(float_step, "adamw.step", "int64");
}

}  // namespace
}  // namespace geotrain::runtime
