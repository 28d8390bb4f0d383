// StagePlan, the tensor layout of each family, and InitRandomModel: what a stage reads is exactly
// its share of what a full checkpoint holds, and a fresh checkpoint is initialised like
// transformers' and reproducible from its seed.
#include "models/model_layout.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "models/init_random_model.h"
#include "models/model_config.h"
#include "models/safetensors_checkpoint.h"
#include "models/stage_plan.h"
#include "tests/testing/temp_dir.h"

namespace geotrain::models {
namespace {

using geotrain::testing::TempDir;

const std::string kSourceDir = GEOTRAIN_SOURCE_DIR;

ModelConfig Preset(const std::string& name) {
  StatusOr<ModelConfig> config = LoadModelConfig(kSourceDir + "/examples/models/" + name);
  EXPECT_TRUE(config.ok()) << config.status().ToString();
  return config.ok() ? *config : ModelConfig();
}

std::set<std::string> Names(const std::vector<TensorSpec>& specs) {
  std::set<std::string> names;
  for (const TensorSpec& spec : specs) names.insert(spec.name);
  return names;
}

TEST(StagePlanTest, EvenSplits) {
  ModelConfig config = Preset("gpt2-tiny");
  config.num_layers = 7;
  const StatusOr<std::vector<StagePlan>> plans = SplitLayersEvenly(config, 3);
  ASSERT_TRUE(plans.ok());
  ASSERT_EQ(plans->size(), 3u);
  EXPECT_EQ((*plans)[0].ToString(), "embeddings + layers [0, 3)");
  EXPECT_EQ((*plans)[1].ToString(), "layers [3, 5)");
  EXPECT_EQ((*plans)[2].ToString(), "layers [5, 7) + head");
  for (const StagePlan& plan : *plans) EXPECT_TRUE(ValidateStagePlan(plan, config).ok());
  EXPECT_FALSE(SplitLayersEvenly(config, 0).ok());
  EXPECT_FALSE(SplitLayersEvenly(config, 8).ok());
}

TEST(StagePlanTest, InvalidPlansNameTheProblem) {
  const ModelConfig config = Preset("gpt2-tiny");  // 4 layers
  const auto message = [&](StagePlan plan) { return ValidateStagePlan(plan, config).message(); };
  EXPECT_NE(message({0, 5, true, true}).find("not within [0, 4]"), std::string::npos);
  EXPECT_NE(message({3, 2, false, false}).find("not within"), std::string::npos);
  EXPECT_NE(message({1, 4, true, true}).find("is_first"), std::string::npos);
  EXPECT_NE(message({0, 3, true, true}).find("is_last"), std::string::npos);
  EXPECT_NE(message({2, 2, false, false}).find("computes nothing"), std::string::npos);
  // Stages without layers are valid at the ends of the pipeline.
  EXPECT_TRUE(ValidateStagePlan({0, 0, true, false}, config).ok());
  EXPECT_TRUE(ValidateStagePlan({4, 4, false, true}, config).ok());
}

TEST(ModelLayoutTest, Gpt2NamesAndShapes) {
  const ModelConfig config = Preset("gpt2-tiny");
  const std::vector<TensorSpec> specs = ModelTensorSpecs(config);
  EXPECT_EQ(specs.size(), 2 + 4 * 12 + 2u);  // wte, wpe; 12 per layer; ln_f (lm_head is wte)
  EXPECT_EQ(specs.front().name, "transformer.wte.weight");
  EXPECT_EQ(specs.front().legacy_name, "wte.weight");
  EXPECT_EQ(specs.front().shape, (std::vector<int64_t>{50257, 64}));
  std::map<std::string, TensorSpec> by_name;
  for (const TensorSpec& spec : specs) by_name[spec.name] = spec;
  // Conv1D: [in, out].
  EXPECT_EQ(by_name["transformer.h.3.attn.c_attn.weight"].shape, (std::vector<int64_t>{64, 192}));
  EXPECT_EQ(by_name["transformer.h.3.mlp.c_proj.weight"].shape, (std::vector<int64_t>{256, 64}));
  EXPECT_EQ(by_name["transformer.h.3.mlp.c_proj.weight"].init, TensorInit::kNormalResidual);
  EXPECT_EQ(by_name["transformer.h.0.ln_1.weight"].init, TensorInit::kOnes);
  EXPECT_EQ(by_name["transformer.h.0.ln_1.bias"].init, TensorInit::kZeros);
  EXPECT_EQ(by_name.count("lm_head.weight"), 0u);
}

TEST(ModelLayoutTest, LlamaAndQwen2Biases) {
  ModelConfig config = Preset("llama-tiny");
  std::set<std::string> names = Names(StageTensorSpecs(config, {1, 2, false, false}));
  EXPECT_EQ(names.size(), 9u);  // 2 norms + 7 weights, no biases
  EXPECT_EQ(names.count("model.layers.1.self_attn.k_proj.weight"), 1u);
  for (const TensorSpec& spec : StageTensorSpecs(config, {1, 2, false, false})) {
    if (spec.name == "model.layers.1.self_attn.k_proj.weight") {
      EXPECT_EQ(spec.shape,
                (std::vector<int64_t>{32, 64}));  // 2 kv heads of 16, nn.Linear [out, in]
    }
  }
  config.family = ModelFamily::kQwen2;
  config.attention_bias = true;
  names = Names(StageTensorSpecs(config, {1, 2, false, false}));
  EXPECT_EQ(names.size(), 12u);  // q/k/v biases, none on o_proj
  EXPECT_EQ(names.count("model.layers.1.self_attn.o_proj.bias"), 0u);
  config.family = ModelFamily::kLlama;
  config.mlp_bias = true;
  EXPECT_EQ(Names(StageTensorSpecs(config, {1, 2, false, false})).size(), 16u);
}

TEST(ModelLayoutTest, StagesPartitionTheModel) {
  for (const char* preset : {"gpt2-tiny", "llama-tiny", "opt-tiny", "gpt-neox-tiny", "gptj-tiny"}) {
    for (bool tied : {true, false}) {
      ModelConfig config = Preset(preset);
      config.tie_word_embeddings = tied;
      const std::set<std::string> whole = Names(ModelTensorSpecs(config));
      for (int stages : {2, 4}) {
        std::multiset<std::string> union_of_stages;
        const StatusOr<std::vector<StagePlan>> plans = SplitLayersEvenly(config, stages);
        ASSERT_TRUE(plans.ok());
        for (const StagePlan& plan : *plans) {
          for (const TensorSpec& spec : StageTensorSpecs(config, plan)) {
            union_of_stages.insert(spec.name);
          }
        }
        // Every tensor in exactly one stage, except a tied embedding, which both ends hold.
        EXPECT_EQ(std::set<std::string>(union_of_stages.begin(), union_of_stages.end()), whole);
        EXPECT_EQ(union_of_stages.count(TokenEmbeddingName(config)), tied ? 2u : 1u)
            << preset << " stages=" << stages;
        EXPECT_EQ(union_of_stages.size(), whole.size() + (tied ? 1 : 0));
      }
    }
  }
}

TEST(InitRandomModelTest, WritesAHuggingFaceDirectory) {
  TempDir dir;
  ModelConfig config = Preset("llama-tiny");
  config.vocab_size = 512;  // keeps the test fast
  ASSERT_TRUE(InitRandomModel(config, dir.File("model"), 7).ok());

  const StatusOr<ModelConfig> reread = LoadModelConfig(dir.File("model"));
  ASSERT_TRUE(reread.ok()) << reread.status().ToString();
  EXPECT_EQ(reread->vocab_size, 512);
  EXPECT_EQ(reread->num_kv_heads, 2);

  auto checkpoint = SafetensorsCheckpoint::OpenDirectory(dir.File("model"));
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status().ToString();
  const std::vector<TensorSpec> specs = ModelTensorSpecs(config);
  ASSERT_EQ((*checkpoint)->TensorNames().size(), specs.size());
  for (const TensorSpec& spec : specs) {
    auto values = (*checkpoint)->ReadFloat32(spec.name);
    ASSERT_TRUE(values.ok()) << spec.name;
    double sum = 0, sum_squares = 0;
    for (float v : *values) {
      sum += v;
      sum_squares += static_cast<double>(v) * v;
    }
    const double n = static_cast<double>(values->size());
    const double mean = sum / n, std_dev = std::sqrt(sum_squares / n - mean * mean);
    switch (spec.init) {
      case TensorInit::kOnes:
        EXPECT_EQ(mean, 1.0) << spec.name;
        EXPECT_EQ(std_dev, 0.0) << spec.name;
        break;
      case TensorInit::kZeros:
        EXPECT_EQ(sum_squares, 0.0) << spec.name;
        break;
      default:
        EXPECT_NEAR(mean, 0.0, 5 * 0.02 / std::sqrt(n)) << spec.name;
        EXPECT_NEAR(std_dev, 0.02, 0.1 * 0.02) << spec.name;
    }
  }
}

TEST(InitRandomModelTest, SeedDecidesEveryValue) {
  TempDir dir;
  ModelConfig config = Preset("gpt2-tiny");
  config.vocab_size = 100;
  ASSERT_TRUE(InitRandomModel(config, dir.File("a"), 1).ok());
  ASSERT_TRUE(InitRandomModel(config, dir.File("b"), 1).ok());
  ASSERT_TRUE(InitRandomModel(config, dir.File("c"), 2).ok());
  auto a = SafetensorsCheckpoint::OpenDirectory(dir.File("a"));
  auto b = SafetensorsCheckpoint::OpenDirectory(dir.File("b"));
  auto c = SafetensorsCheckpoint::OpenDirectory(dir.File("c"));
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  const std::string name = "transformer.h.2.attn.c_attn.weight";
  EXPECT_EQ(*(*a)->ReadFloat32(name), *(*b)->ReadFloat32(name));
  EXPECT_NE(*(*a)->ReadFloat32(name), *(*c)->ReadFloat32(name));
  // Residual projections are scaled by 1/sqrt(2 * n_layer), as transformers' GPT-2 init.
  const std::vector<float> projection = *(*a)->ReadFloat32("transformer.h.0.mlp.c_proj.weight");
  double sum_squares = 0;
  for (float v : projection) sum_squares += static_cast<double>(v) * v;
  EXPECT_NEAR(std::sqrt(sum_squares / projection.size()), 0.02 / std::sqrt(8.0), 0.001);
}

TEST(InitRandomModelTest, RefusesADirectoryWithAShardedCheckpoint) {
  TempDir dir;
  dir.Write(kSafetensorsIndexFile, "{\"weight_map\": {}}");
  const Status status = InitRandomModel(Preset("gpt2-tiny"), dir.path(), 1);
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition) << status.ToString();
}

}  // namespace
}  // namespace geotrain::models
