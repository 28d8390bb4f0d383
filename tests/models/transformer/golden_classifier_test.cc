// Sequence classifiers (encoders) against Hugging Face transformers: a tiny random checkpoint of
// each encoder family, with padding (and two segments, where the model has token types) in its
// reference batch, gives transformers' float64 logits and loss within 1e-9 in float64 and 1e-4 in
// float32; split into 2 and 4 stages (the padding mask reaching every stage) it gives the unsplit
// logits and parameter gradients.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "models/model_layout.h"
#include "models/transformer/deberta_v2_family.h"
#include "tests/models/transformer/golden_models.h"

namespace geotrain::models {
namespace {

using testing::GoldenModelDir;
using testing::MaxAbsDiff;
using testing::MustLoadStage;
using testing::ReadTensor;

const std::vector<std::string>& ClassifierNames() {
  static const std::vector<std::string> names = {
      "bert",           "deberta_v2",      "deberta_v2_variant",
      "deberta_v2_p2c", "deberta_v2_conv", "deberta_v2_conv_groups"};
  return names;
}

struct ClassifierReference {
  at::Tensor input_ids, labels, logits, loss;
  SequenceContext context;
};

// token_type_ids is absent for models without token types (DeBERTa-v3): none is passed, as the
// reference passed none to transformers.
ClassifierReference ReadClassifierReference(const std::string& dir) {
  auto file = SafetensorsFile::Open(dir + "/reference.safetensors");
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  if (!file.ok()) return {};
  return ClassifierReference{
      ReadTensor(**file, "input_ids"),
      ReadTensor(**file, "labels"),
      ReadTensor(**file, "logits"),
      ReadTensor(**file, "loss"),
      {ReadTensor(**file, "attention_mask"),
       (*file)->Contains("token_type_ids") ? ReadTensor(**file, "token_type_ids") : at::Tensor()}};
}

TEST(GoldenClassifierTest, LogitsAndLossMatchTransformers) {
  for (const std::string& name : ClassifierNames()) {
    const std::string dir = GoldenModelDir(name);
    const ClassifierReference reference = ReadClassifierReference(dir);
    ASSERT_TRUE(reference.logits.defined()) << name;
    const StatusOr<ModelConfig> config = LoadModelConfig(dir);
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    ASSERT_TRUE(config->IsClassifier());
    for (const auto& [dtype, tolerance] :
         std::vector<std::pair<at::ScalarType, double>>{{at::kDouble, 1e-9}, {at::kFloat, 1e-4}}) {
      const std::unique_ptr<Stage> stage = MustLoadStage(dir, WholeModelPlan(*config), dtype);
      ASSERT_NE(stage, nullptr);
      const StatusOr<at::Tensor> logits = stage->Forward(reference.input_ids, reference.context);
      ASSERT_TRUE(logits.ok()) << logits.status().ToString();
      ASSERT_EQ(logits->sizes(), reference.logits.sizes()) << name;
      const StatusOr<at::Tensor> loss = stage->Loss(*logits, reference.labels);
      ASSERT_TRUE(loss.ok()) << loss.status().ToString();
      const double logits_diff = MaxAbsDiff(*logits, reference.logits);
      const double loss_diff = MaxAbsDiff(*loss, reference.loss);
      std::printf("  %-18s %-7s max |logit - transformers| = %.3g, |loss - transformers| = %.3g\n",
                  name.c_str(), c10::toString(dtype), logits_diff, loss_diff);
      EXPECT_LT(logits_diff, tolerance) << name;
      EXPECT_LT(loss_diff, tolerance) << name;
    }
  }
}

// 8-bit mantissas: a smoke test of the 16-bit path (DeBERTa's scale cast to bfloat16, the
// lowest bfloat16 score for padding), not of accuracy.
TEST(GoldenClassifierTest, BFloat16IsClose) {
  for (const std::string& name : ClassifierNames()) {
    const std::string dir = GoldenModelDir(name);
    const ClassifierReference reference = ReadClassifierReference(dir);
    const StatusOr<ModelConfig> config = LoadModelConfig(dir);
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    const std::unique_ptr<Stage> stage = MustLoadStage(dir, WholeModelPlan(*config), at::kBFloat16);
    ASSERT_NE(stage, nullptr);
    const StatusOr<at::Tensor> logits = stage->Forward(reference.input_ids, reference.context);
    ASSERT_TRUE(logits.ok()) << logits.status().ToString();
    const StatusOr<at::Tensor> loss = stage->Loss(*logits, reference.labels);
    ASSERT_TRUE(loss.ok()) << loss.status().ToString();
    const double logits_diff = MaxAbsDiff(*logits, reference.logits);
    const double loss_diff = MaxAbsDiff(*loss, reference.loss);
    std::printf(
        "  %-18s BFloat16 max |logit - transformers| = %.3g, |loss - transformers| = "
        "%.3g\n",
        name.c_str(), logits_diff, loss_diff);
    EXPECT_LT(logits_diff, 0.1) << name;
    EXPECT_LT(loss_diff, 0.05) << name;
  }
}

// Without the mask the padded sequence's logits change: the mask is what keeps padding out.
TEST(GoldenClassifierTest, PaddingIsMaskedOut) {
  for (const char* name : {"bert", "deberta_v2", "deberta_v2_conv"}) {
    const std::string dir = GoldenModelDir(name);
    const ClassifierReference reference = ReadClassifierReference(dir);
    const StatusOr<ModelConfig> config = LoadModelConfig(dir);
    ASSERT_TRUE(config.ok());
    const std::unique_ptr<Stage> stage = MustLoadStage(dir, WholeModelPlan(*config), at::kDouble);
    ASSERT_NE(stage, nullptr);
    SequenceContext unmasked = reference.context;
    unmasked.attention_mask = at::Tensor();
    const StatusOr<at::Tensor> logits = stage->Forward(reference.input_ids, unmasked);
    ASSERT_TRUE(logits.ok());
    EXPECT_LT(MaxAbsDiff((*logits)[0], reference.logits[0]), 1e-9) << name;  // no padding there
    EXPECT_GT(MaxAbsDiff((*logits)[1], reference.logits[1]), 1e-6) << name;
  }
}

// DeBERTa's log buckets against transformers' make_log_bucket_position (the values the golden
// script prints): distances up to position_buckets / 2 stay, longer ones share buckets.
TEST(GoldenClassifierTest, DebertaLogBuckets) {
  for (const auto& [name, expected] : std::vector<std::pair<std::string, std::vector<int64_t>>>{
           {"deberta_v2",
            {-6, -5, -5, -5, -5, -5, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 5, 5, 5, 5, 5, 6}},
           {"deberta_v2_p2c",
            {-6, -6, -5, -5, -5, -5, -4, -4, -3, -2, -1, 0, 1, 2, 3, 4, 4, 5, 5, 5, 5, 6, 6}}}) {
    const StatusOr<ModelConfig> config = LoadModelConfig(GoldenModelDir(name));
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    // Row 11 of a 23-long sequence: query 11 against keys 0..22, distances 11 down to -11.
    const at::Tensor row = DebertaRelativePositions(*config, 23, at::kCPU)[11].flip(0);
    ASSERT_EQ(row.numel(), static_cast<int64_t>(expected.size()));
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ(row[i].item<int64_t>(), expected[i]) << name << " distance " << i - 11.0;
    }
  }
  ModelConfig plain;  // no buckets: the distances themselves
  const at::Tensor relative = DebertaRelativePositions(plain, 3, at::kCPU);
  const at::Tensor expected = at::tensor(std::vector<int64_t>{0, -1, -2, 1, 0, -1, 2, 1, 0});
  EXPECT_TRUE(at::equal(relative, expected.view({3, 3})));
}

// The layout lists exactly the tensors transformers saved, so a stage saves a complete checkpoint;
// DeBERTa's relative embeddings (and their LayerNorm) are in every stage that holds a layer, and
// only there.
TEST(GoldenClassifierTest, LayoutIsWhatTransformersSaved) {
  for (const std::string& name : ClassifierNames()) {
    const std::string dir = GoldenModelDir(name);
    const StatusOr<ModelConfig> config = LoadModelConfig(dir);
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    auto file = SafetensorsFile::Open(dir + "/model.safetensors");
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    std::map<std::string, std::vector<int64_t>> listed;
    for (const TensorSpec& spec : ModelTensorSpecs(*config)) listed[spec.name] = spec.shape;
    std::map<std::string, std::vector<int64_t>> saved;
    for (const std::string& tensor : (*file)->TensorNames()) {
      saved[tensor] = (*file)->Find(tensor)->shape;
    }
    EXPECT_EQ(listed, saved) << name;
    if (config->family != ModelFamily::kDebertaV2) continue;
    for (const StagePlan& plan :
         {StagePlan{0, 0, true, false}, StagePlan{0, 1, true, false}, StagePlan{1, 3, false, false},
          StagePlan{3, 4, false, true}, StagePlan{4, 4, false, true}}) {
      size_t shared = 0, conv = 0;
      for (const TensorSpec& spec : StageTensorSpecs(*config, plan)) {
        if (spec.name.rfind("deberta.encoder.conv.", 0) == 0) {
          ++conv;
          continue;
        }
        shared += spec.name.rfind("deberta.encoder.", 0) == 0 &&
                  spec.name.rfind("deberta.encoder.layer.", 0) != 0;
      }
      const size_t expected = config->norm_relative_embeddings ? 3 : 1;
      EXPECT_EQ(shared, plan.last_layer > plan.first_layer ? expected : 0)
          << name << " " << plan.ToString();
      // ConvLayer (weight, bias, LayerNorm) only in the stage holding layer 0.
      const bool holds_conv =
          config->conv_kernel_size > 0 && plan.first_layer == 0 && plan.last_layer > 0;
      EXPECT_EQ(conv, holds_conv ? 4u : 0u) << name << " " << plan.ToString();
    }
  }
}

TEST(GoldenClassifierTest, SplitStagesMatchTheUnsplitModel) {
  for (const std::string& name : ClassifierNames()) {
    const std::string dir = GoldenModelDir(name);
    const ClassifierReference reference = ReadClassifierReference(dir);
    std::map<int, std::pair<at::Tensor, std::map<std::string, at::Tensor>>> results;
    for (int stages : {1, 2, 4}) {
      SCOPED_TRACE(name + " in " + std::to_string(stages) + " stages");
      const auto pipeline = testing::LoadPipeline(dir, stages, at::kDouble);
      ASSERT_EQ(pipeline.size(), static_cast<size_t>(stages));
      std::vector<at::Tensor> inputs, outputs;
      for (size_t i = 0; i < pipeline.size(); ++i) {
        const at::Tensor input =
            i == 0 ? reference.input_ids : outputs.back().detach().requires_grad_(true);
        StatusOr<at::Tensor> output = pipeline[i]->Forward(input, reference.context);
        ASSERT_TRUE(output.ok()) << output.status().ToString();
        inputs.push_back(input);
        outputs.push_back(*output);
      }
      StatusOr<at::Tensor> loss = pipeline.back()->Loss(outputs.back(), reference.labels);
      ASSERT_TRUE(loss.ok()) << loss.status().ToString();
      loss->backward();
      for (size_t i = pipeline.size() - 1; i > 0; --i) outputs[i - 1].backward(inputs[i].grad());
      // A tensor several stages hold (DeBERTa's relative embeddings) gets the sum of the
      // copies' gradients, the gradient of the one shared tensor of the unsplit model.
      std::map<std::string, at::Tensor> gradients;
      for (const auto& stage : pipeline) {
        for (const NamedParameter& p : stage->Parameters()) {
          auto [it, added] = gradients.emplace(p.name, p.tensor.grad().clone());
          if (!added) it->second += p.tensor.grad();
        }
      }
      results[stages] = {outputs.back().detach(), gradients};
    }
    for (int stages : {2, 4}) {
      EXPECT_LT(MaxAbsDiff(results[stages].first, results[1].first), 1e-12) << stages;
      ASSERT_EQ(results[stages].second.size(), results[1].second.size());
      for (const auto& [parameter, gradient] : results[1].second) {
        EXPECT_LT(MaxAbsDiff(results[stages].second.at(parameter), gradient), 1e-12)
            << stages << " stages: " << parameter;
      }
    }
  }
}

}  // namespace
}  // namespace geotrain::models
