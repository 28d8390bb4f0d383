// `geotrain checkpoint merge`: per-stage shards (Stage::Save) -> one Hugging Face directory that
// LoadStage reads back with the same logits; inconsistent or incomplete shards are refused.
#include "cli/checkpoint_merge_command.h"

#include <c10/core/GradMode.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "cli/model_init_command.h"
#include "common/io/file_contents.h"
#include "models/model_config.h"
#include "models/safetensors_checkpoint.h"
#include "models/stage_plan.h"
#include "models/transformer/stage.h"
#include "tests/testing/temp_dir.h"

namespace geotrain::cli {
namespace {

using geotrain::testing::TempDir;
namespace fs = std::filesystem;

const std::string kGpt2TinyConfig =
    std::string(GEOTRAIN_SOURCE_DIR) + "/examples/models/gpt2-tiny/config.json";

// A random gpt2-tiny in <dir>/model, and its stages saved as <dir>/run/stage-<i>.safetensors.
class CheckpointMergeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RunModelInit({kGpt2TinyConfig, model_dir(), 11}).ok());
    const StatusOr<models::ModelConfig> config = models::LoadModelConfig(model_dir());
    ASSERT_TRUE(config.ok());
    config_ = *config;
    fs::create_directories(run_dir());
    fs::copy_file(kGpt2TinyConfig, run_dir() + "/config.json");
  }

  std::string model_dir() const { return dir_.File("model"); }
  std::string run_dir() const { return dir_.File("run"); }
  std::string StagePath(size_t i) const {
    return run_dir() + "/stage-" + std::to_string(i) + ".safetensors";
  }

  // Loads the model in `num_stages` stages and saves each; `edit` may change a stage first.
  void SaveStages(int64_t num_stages,
                  const std::function<void(size_t, models::Stage&)>& edit = nullptr) {
    const auto plans = models::SplitLayersEvenly(config_, num_stages);
    ASSERT_TRUE(plans.ok());
    for (size_t i = 0; i < plans->size(); ++i) {
      auto stage = models::LoadStage(model_dir(), (*plans)[i], at::kCPU, at::kFloat);
      ASSERT_TRUE(stage.ok()) << stage.status().ToString();
      if (edit) edit(i, **stage);
      const Status saved = (*stage)->Save(StagePath(i));
      ASSERT_TRUE(saved.ok()) << saved.ToString();
    }
  }

  at::Tensor WholeModelLogits(const std::string& dir) {
    auto stage = models::LoadStage(dir, models::WholeModelPlan(config_), at::kCPU, at::kFloat);
    EXPECT_TRUE(stage.ok()) << stage.status().ToString();
    if (!stage.ok()) return at::Tensor();
    at::NoGradGuard no_grad;
    const at::Tensor ids = at::arange(0, 48, at::kLong).mul(997).remainder(50257).view({2, 24});
    const StatusOr<at::Tensor> logits = (*stage)->Forward(ids);
    EXPECT_TRUE(logits.ok()) << logits.status().ToString();
    return logits.ok() ? *logits : at::Tensor();
  }

  TempDir dir_;
  models::ModelConfig config_;
};

TEST_F(CheckpointMergeTest, TwoStagesMergeIntoTheSameModel) {
  SaveStages(2);
  CheckpointMergeOptions options;
  options.inputs = {StagePath(0), StagePath(1)};
  options.config_path = kGpt2TinyConfig;
  options.out_dir = dir_.File("merged");
  const StatusOr<CheckpointMergeResult> result = RunCheckpointMerge(options);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->input_files, 2u);
  EXPECT_EQ(result->output_files, 1u);
  EXPECT_TRUE(fs::exists(options.out_dir + "/model.safetensors"));
  EXPECT_TRUE(fs::exists(options.out_dir + "/config.json"));
  EXPECT_FALSE(fs::exists(options.out_dir + ".tmp." + std::to_string(::getpid())));

  const at::Tensor merged = WholeModelLogits(options.out_dir);
  const at::Tensor original = WholeModelLogits(model_dir());
  ASSERT_TRUE(merged.defined() && original.defined());
  EXPECT_TRUE(at::equal(merged, original));  // F32 shards: bit-exact
}

TEST_F(CheckpointMergeTest, RunDirectoryWithSmallShardLimitWritesAnIndex) {
  SaveStages(4);
  CheckpointMergeOptions options;
  options.inputs = {run_dir()};  // config.json taken from it
  options.out_dir = dir_.File("merged");
  options.max_shard_bytes = 1 << 20;  // the embedding alone is 12.9 MB
  const StatusOr<CheckpointMergeResult> result = RunCheckpointMerge(options);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->input_files, 4u);
  EXPECT_GT(result->output_files, 1u);
  EXPECT_TRUE(fs::exists(options.out_dir + "/" + models::kSafetensorsIndexFile));
  EXPECT_FALSE(fs::exists(options.out_dir + "/model.safetensors"));
  auto checkpoint = models::SafetensorsCheckpoint::OpenDirectory(options.out_dir);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status().ToString();
  EXPECT_EQ((*checkpoint)->TensorNames().size(), result->tensors);

  const at::Tensor merged = WholeModelLogits(options.out_dir);
  const at::Tensor original = WholeModelLogits(model_dir());
  ASSERT_TRUE(merged.defined() && original.defined());
  EXPECT_TRUE(at::equal(merged, original));
}

TEST_F(CheckpointMergeTest, RefusesTiedCopiesThatDiffer) {
  // The last stage's copy of the tied embedding drifted from the first stage's.
  SaveStages(2, [](size_t i, models::Stage& stage) {
    if (i != 1) return;
    at::NoGradGuard no_grad;
    stage.Parameters().back().tensor.add_(1.0f);
  });
  CheckpointMergeOptions options;
  options.inputs = {run_dir()};
  options.out_dir = dir_.File("merged");
  const StatusOr<CheckpointMergeResult> result = RunCheckpointMerge(options);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("transformer.wte.weight"), std::string::npos)
      << result.status().ToString();
  EXPECT_NE(result.status().message().find("different values"), std::string::npos);
  EXPECT_FALSE(fs::exists(options.out_dir));
}

TEST_F(CheckpointMergeTest, RefusesAMissingStage) {
  SaveStages(2);
  CheckpointMergeOptions options;
  options.inputs = {StagePath(0)};  // layers 0 and 1 only
  options.config_path = kGpt2TinyConfig;
  options.out_dir = dir_.File("merged");
  const StatusOr<CheckpointMergeResult> result = RunCheckpointMerge(options);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("transformer.h.2."), std::string::npos)
      << result.status().ToString();
  EXPECT_FALSE(fs::exists(options.out_dir));
}

TEST_F(CheckpointMergeTest, RefusesANonEmptyOutputDirectory) {
  SaveStages(2);
  CheckpointMergeOptions options;
  options.inputs = {run_dir()};
  options.out_dir = model_dir();
  const StatusOr<CheckpointMergeResult> result = RunCheckpointMerge(options);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("--out"), std::string::npos)
      << result.status().ToString();
}

TEST_F(CheckpointMergeTest, RefusesATensorOfAnotherModel) {
  SaveStages(2);
  // A config with fewer layers: the shards' layers 2 and 3 are not part of it.
  std::string config = io::ReadFileContents(kGpt2TinyConfig, 1 << 16).value();
  const size_t at = config.find("\"n_layer\": 4");
  ASSERT_NE(at, std::string::npos);
  config.replace(at, 12, "\"n_layer\": 2");
  CheckpointMergeOptions options;
  options.inputs = {run_dir()};
  options.config_path = dir_.Write("two_layers.json", config);
  options.out_dir = dir_.File("merged");
  const StatusOr<CheckpointMergeResult> result = RunCheckpointMerge(options);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("is not part of the model"), std::string::npos)
      << result.status().ToString();
}

}  // namespace
}  // namespace geotrain::cli
