// A model split into 1, 2 and 4 stages computes what the unsplit model computes: the same logits
// and loss, and, after backpropagating through the chain of stages by hand, the same gradient
// for every parameter (a tied embedding's two copies summed).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "models/init_random_model.h"
#include "tests/models/transformer/golden_models.h"
#include "tests/testing/temp_dir.h"

namespace geotrain::models {
namespace {

using testing::GoldenModelDir;
using testing::GoldenReference;
using testing::LoadPipeline;
using testing::MaxAbs;
using testing::MaxAbsDiff;
using testing::PipelineResult;
using testing::ReadGoldenReference;
using testing::RunPipeline;

class StageSplitTest : public ::testing::TestWithParam<std::string> {};

TEST_P(StageSplitTest, SameLogitsAndGradientsAsUnsplit) {
  const std::string dir = GoldenModelDir(GetParam());
  const GoldenReference reference = ReadGoldenReference(dir);
  ASSERT_TRUE(reference.input_ids.defined());
  const PipelineResult whole =
      RunPipeline(LoadPipeline(dir, 1), reference.input_ids, reference.labels);
  ASSERT_TRUE(whole.loss.defined());
  ASSERT_FALSE(whole.gradients.empty());
  // The unsplit model itself agrees with transformers (golden_logits_test checks it closely).
  EXPECT_LT(MaxAbsDiff(whole.logits, reference.logits), 1e-4);

  const StatusOr<ModelConfig> config = LoadModelConfig(dir);
  ASSERT_TRUE(config.ok());
  for (int64_t num_stages : {int64_t{2}, int64_t{4}}) {
    if (num_stages > config->num_layers) continue;
    SCOPED_TRACE(GetParam() + " in " + std::to_string(num_stages) + " stages");
    const PipelineResult split =
        RunPipeline(LoadPipeline(dir, num_stages), reference.input_ids, reference.labels);
    ASSERT_TRUE(split.loss.defined());
    EXPECT_LE(MaxAbsDiff(split.logits, whole.logits), 1e-6);
    EXPECT_LE(MaxAbsDiff(split.loss, whole.loss), 1e-6);
    ASSERT_EQ(split.gradients.size(), whole.gradients.size());
    double worst = 0;
    for (const auto& [name, gradient] : whole.gradients) {
      auto it = split.gradients.find(name);
      ASSERT_NE(it, split.gradients.end()) << name;
      // A parameter with no influence on the loss would make this test vacuous.
      EXPECT_GT(MaxAbs(gradient), 0.0) << name;
      const double relative = MaxAbsDiff(it->second, gradient) / MaxAbs(gradient);
      EXPECT_LE(relative, 1e-6) << name;
      worst = std::max(worst, relative);
    }
    std::printf("  %-14s %lld stages: max relative gradient difference %.3g\n", GetParam().c_str(),
                static_cast<long long>(num_stages), worst);
  }
}

INSTANTIATE_TEST_SUITE_P(GoldenModels, StageSplitTest,
                         ::testing::ValuesIn(testing::GoldenModelNames()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

// The presets of examples/models as `geotrain model init` writes them (InitRandomModel) split
// like the golden checkpoints: 2 and 4 stages give the unsplit logits and gradients, in float64.
TEST(StageSplitTest, ModelInitPresetsSplitLikeTheUnsplitModel) {
  for (const std::string preset : {"gpt2-tiny", "llama-tiny", "opt-tiny", "gpt-neox-tiny",
                                   "gptj-tiny", "bert-tiny", "deberta-v3-tiny"}) {
    SCOPED_TRACE(preset);
    const StatusOr<ModelConfig> config =
        LoadModelConfig(std::string(GEOTRAIN_SOURCE_DIR) + "/examples/models/" + preset);
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    ::geotrain::testing::TempDir dir;
    ASSERT_TRUE(InitRandomModel(*config, dir.path(), 3).ok());
    const at::Tensor ids = (at::arange(24, at::kLong) * 977 % config->vocab_size).reshape({2, 12});
    const at::Tensor labels = config->IsClassifier() ? at::tensor({1, 0}, at::kLong) : ids;
    const PipelineResult whole = RunPipeline(LoadPipeline(dir.path(), 1, at::kDouble), ids, labels);
    ASSERT_TRUE(whole.loss.defined());
    for (int64_t num_stages : {int64_t{2}, int64_t{4}}) {
      const PipelineResult split =
          RunPipeline(LoadPipeline(dir.path(), num_stages, at::kDouble), ids, labels);
      ASSERT_TRUE(split.loss.defined()) << num_stages;
      EXPECT_LE(MaxAbsDiff(split.logits, whole.logits), 1e-12) << num_stages;
      ASSERT_EQ(split.gradients.size(), whole.gradients.size());
      for (const auto& [name, gradient] : whole.gradients) {
        EXPECT_LE(MaxAbsDiff(split.gradients.at(name), gradient), 1e-9 * MaxAbs(gradient) + 1e-15)
            << num_stages << " stages: " << name;
      }
    }
  }
}

// Non-first stages must pass a gradient back to their input, which the runtime sends upstream.
TEST(StageSplitTest, GradientReachesTheInputOfEveryLaterStage) {
  const std::string dir = GoldenModelDir("llama");
  const GoldenReference reference = ReadGoldenReference(dir);
  auto stages = LoadPipeline(dir, 2);
  ASSERT_EQ(stages.size(), 2u);
  ASSERT_NE(stages[1], nullptr);
  const at::Tensor hidden =
      at::randn({2, 12, stages[1]->config().hidden_size}).requires_grad_(true);
  const StatusOr<at::Tensor> logits = stages[1]->Forward(hidden);
  ASSERT_TRUE(logits.ok()) << logits.status().ToString();
  const StatusOr<at::Tensor> loss = stages[1]->Loss(*logits, reference.labels);
  ASSERT_TRUE(loss.ok());
  loss->backward();
  ASSERT_TRUE(hidden.grad().defined());
  EXPECT_GT(MaxAbs(hidden.grad()), 0.0);
  // Causal attention: a position's input reaches the loss through its own and later predictions;
  // the last position predicts nothing, so its input gets exactly no gradient.
  const at::Tensor per_position = hidden.grad().abs().sum(at::IntArrayRef{0, 2});
  EXPECT_GT(per_position.narrow(0, 0, 11).min().item<double>(), 0.0);
  EXPECT_EQ(per_position[11].item<double>(), 0.0);
}

}  // namespace
}  // namespace geotrain::models
