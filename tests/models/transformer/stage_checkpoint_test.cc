// Loading reads only a stage's own tensors (and shards); saved stage shards use the Hugging Face
// names and, joined by an index, load back as the whole model; a randomly initialised preset
// trains.
#include <c10/core/GradMode.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "common/io/file_contents.h"
#include "models/init_random_model.h"
#include "models/safetensors_checkpoint.h"
#include "tests/models/transformer/golden_models.h"
#include "tests/testing/temp_dir.h"

namespace geotrain::models {
namespace {

using geotrain::testing::TempDir;
using testing::GoldenModelDir;
using testing::GoldenReference;
using testing::LoadPipeline;
using testing::MaxAbsDiff;
using testing::MustLoadStage;
using testing::ReadGoldenReference;

void CopyConfig(const std::string& from_dir, const TempDir& to) {
  const StatusOr<std::string> text = io::ReadFileContents(from_dir + "/config.json", 1 << 16);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  to.Write("config.json", *text);
}

TEST(StageCheckpointTest, ReadsOnlyTheShardsOfItsLayers) {
  // transformers wrote the qwen2 golden model in 4 shards; layer 1 lies in the second only.
  const std::string dir = GoldenModelDir("qwen2");
  const StatusOr<ModelConfig> config = LoadModelConfig(dir);
  ASSERT_TRUE(config.ok());
  auto checkpoint = SafetensorsCheckpoint::OpenDirectory(dir);
  ASSERT_TRUE(checkpoint.ok());
  ASSERT_EQ((*checkpoint)->ShardOf("model.layers.1.mlp.up_proj.weight"),
            "model-00002-of-00004.safetensors");
  auto stage = LoadStage(*config, **checkpoint, {1, 2, false, false}, at::kCPU, at::kFloat);
  ASSERT_TRUE(stage.ok()) << stage.status().ToString();
  EXPECT_EQ((*checkpoint)->open_shard_count(), 1u);
  ASSERT_EQ((*stage)->Parameters().size(), 12u);  // 2 norms, 7 weights, q/k/v biases
  for (const NamedParameter& parameter : (*stage)->Parameters()) {
    EXPECT_EQ(parameter.name.rfind("model.layers.1.", 0), 0u) << parameter.name;
    EXPECT_TRUE(parameter.tensor.requires_grad()) << parameter.name;
    EXPECT_TRUE(parameter.tensor.is_leaf()) << parameter.name;
  }
}

TEST(StageCheckpointTest, TiedLastStageHoldsTheEmbedding) {
  auto stages = LoadPipeline(GoldenModelDir("qwen2"), 2);
  ASSERT_EQ(stages.size(), 2u);
  ASSERT_TRUE(stages[0] && stages[1]);
  EXPECT_EQ(stages[0]->Parameters().front().name, "model.embed_tokens.weight");
  EXPECT_EQ(stages[1]->Parameters().back().name, "model.embed_tokens.weight");
  EXPECT_TRUE(
      at::equal(stages[0]->Parameters().front().tensor, stages[1]->Parameters().back().tensor));
  // Separate copies: each end's optimizer updates its own until the runtime synchronises them.
  EXPECT_NE(stages[0]->Parameters().front().tensor.data_ptr(),
            stages[1]->Parameters().back().tensor.data_ptr());

  // Unsplit, the model has one shared matrix.
  auto whole = LoadPipeline(GoldenModelDir("qwen2"), 1);
  ASSERT_EQ(whole.size(), 1u);
  int count = 0;
  for (const NamedParameter& parameter : whole[0]->Parameters()) {
    count += parameter.name == "model.embed_tokens.weight";
  }
  EXPECT_EQ(count, 1);
}

// What `geotrain checkpoint merge` will do: an index over the stage shards (the first copy of a
// tied embedding wins) makes them one Hugging Face directory again.
TEST(StageCheckpointTest, SavedStageShardsMergeIntoTheModel) {
  for (const std::string name : {"gpt2", "llama", "qwen2"}) {
    SCOPED_TRACE(name);
    const std::string dir = GoldenModelDir(name);
    auto stages = LoadPipeline(dir, 4);
    ASSERT_EQ(stages.size(), 4u);
    TempDir merged;
    nlohmann::json weight_map = nlohmann::json::object();
    for (size_t i = 0; i < stages.size(); ++i) {
      ASSERT_NE(stages[i], nullptr);
      const std::string shard = "stage-" + std::to_string(i) + ".safetensors";
      const Status saved = stages[i]->Save(merged.File(shard));
      ASSERT_TRUE(saved.ok()) << saved.ToString();
      for (const NamedParameter& parameter : stages[i]->Parameters()) {
        if (!weight_map.contains(parameter.name)) weight_map[parameter.name] = shard;
      }
    }
    merged.Write(kSafetensorsIndexFile, nlohmann::json{{"weight_map", weight_map}}.dump());
    CopyConfig(dir, merged);

    auto original = SafetensorsCheckpoint::OpenDirectory(dir);
    ASSERT_TRUE(original.ok());
    // Every tensor of the original checkpoint, under the same name.
    EXPECT_EQ(weight_map.size(), (*original)->TensorNames().size());

    const GoldenReference reference = ReadGoldenReference(dir);
    const StatusOr<ModelConfig> config = LoadModelConfig(merged.path());
    ASSERT_TRUE(config.ok());
    auto reloaded = MustLoadStage(merged.path(), WholeModelPlan(*config));
    auto unsplit = MustLoadStage(dir, WholeModelPlan(*config));
    ASSERT_TRUE(reloaded && unsplit);
    const StatusOr<at::Tensor> a = reloaded->Forward(reference.input_ids);
    const StatusOr<at::Tensor> b = unsplit->Forward(reference.input_ids);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(MaxAbsDiff(*a, *b), 0.0);  // float32 saved as F32: bit-exact
  }
}

TEST(StageCheckpointTest, SavesAs16BitFloats) {
  auto stage = MustLoadStage(GoldenModelDir("llama"), {2, 4, false, true});
  ASSERT_NE(stage, nullptr);
  TempDir dir;
  ASSERT_TRUE(stage->Save(dir.File("stage.safetensors"), SafetensorsDType::kBF16).ok());
  auto saved = SafetensorsFile::Open(dir.File("stage.safetensors"));
  ASSERT_TRUE(saved.ok());
  const NamedParameter& head = stage->Parameters().back();
  EXPECT_EQ(head.name, "lm_head.weight");
  const StatusOr<TensorView> view = (*saved)->Get(head.name);
  ASSERT_TRUE(view.ok());
  EXPECT_EQ(view->dtype, SafetensorsDType::kBF16);
  const std::vector<float> values = *(*saved)->ReadFloat32(head.name);
  const at::Tensor expected = head.tensor.detach().to(at::kBFloat16).to(at::kFloat);
  EXPECT_TRUE(
      at::equal(at::from_blob(const_cast<float*>(values.data()), expected.sizes()), expected));
}

// The bundled presets, initialised at random, load as stages and learn: a few plain SGD steps
// on one batch lower its loss.
TEST(StageCheckpointTest, RandomPresetsTrain) {
  for (const std::string preset :
       {"gpt2-tiny", "llama-tiny", "opt-tiny", "gpt-neox-tiny", "gptj-tiny"}) {
    SCOPED_TRACE(preset);
    const StatusOr<ModelConfig> config =
        LoadModelConfig(std::string(GEOTRAIN_SOURCE_DIR) + "/examples/models/" + preset);
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    TempDir dir;
    ASSERT_TRUE(InitRandomModel(*config, dir.path(), 42).ok());
    auto stages = LoadPipeline(dir.path(), 2);
    ASSERT_EQ(stages.size(), 2u);
    ASSERT_TRUE(stages[0] && stages[1]);
    // A repeating pattern of 8 tokens: learnable from the context within a few steps.
    const at::Tensor ids = (at::arange(32, at::kLong) % 8 * 1000 + 7).reshape({2, 16});
    std::vector<double> losses;
    for (int step = 0; step < 5; ++step) {
      const testing::PipelineResult result = testing::RunPipeline(stages, ids, ids);
      ASSERT_TRUE(result.loss.defined());
      losses.push_back(result.loss.item<double>());
      c10::NoGradGuard no_grad;
      for (const auto& stage : stages) {
        for (const NamedParameter& parameter : stage->Parameters()) {
          parameter.tensor.sub_(parameter.tensor.grad(), /*alpha=*/0.5);
          parameter.tensor.mutable_grad().zero_();
        }
      }
    }
    // Near-uniform predictions at init. GPT-J adds attention and MLP of the same normalised
    // input to the residual in every layer, so its initial logits spread a little more (measured
    // 10.94 against ln 50257 = 10.82).
    EXPECT_NEAR(losses.front(), std::log(50257.0), preset == "gptj-tiny" ? 0.2 : 0.1);
    for (double l : losses) std::printf(" %.4f", l);
    std::printf("\n");
    EXPECT_LT(losses.back(), losses.front() - 1.0);
  }
}

}  // namespace
}  // namespace geotrain::models
