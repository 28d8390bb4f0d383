// `geotrain model init`: a random Hugging Face directory that the stage loader reads.
#include "cli/model_init_command.h"

#include <gtest/gtest.h>

#include "common/io/file_contents.h"
#include "models/model_config.h"
#include "models/transformer/stage.h"
#include "tests/testing/temp_dir.h"

namespace geotrain::cli {
namespace {

using geotrain::testing::TempDir;

const std::string kGpt2TinyConfig =
    std::string(GEOTRAIN_SOURCE_DIR) + "/examples/models/gpt2-tiny/config.json";

TEST(ModelInitCommandTest, WritesALoadableModel) {
  TempDir dir;
  const std::string out = dir.File("model");
  const Status status = RunModelInit({kGpt2TinyConfig, out, 7});
  ASSERT_TRUE(status.ok()) << status.ToString();
  const StatusOr<models::ModelConfig> config = models::LoadModelConfig(out);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->num_layers, 4);
  auto stage = models::LoadStage(out, models::WholeModelPlan(*config), at::kCPU, at::kFloat);
  ASSERT_TRUE(stage.ok()) << stage.status().ToString();
}

TEST(ModelInitCommandTest, SameSeedSameBytes) {
  TempDir dir;
  ASSERT_TRUE(RunModelInit({kGpt2TinyConfig, dir.File("a"), 3}).ok());
  ASSERT_TRUE(RunModelInit({kGpt2TinyConfig, dir.File("b"), 3}).ok());
  ASSERT_TRUE(RunModelInit({kGpt2TinyConfig, dir.File("c"), 4}).ok());
  auto read = [&](const std::string& name) {
    return io::ReadFileContents(dir.File(name + "/model.safetensors"), 1 << 30).value();
  };
  EXPECT_EQ(read("a"), read("b"));
  EXPECT_NE(read("a"), read("c"));
}

TEST(ModelInitCommandTest, MissingConfigNamesTheFile) {
  TempDir dir;
  const Status status = RunModelInit({dir.File("absent.json"), dir.File("model"), 1});
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("absent.json"), std::string::npos) << status.ToString();
}

}  // namespace
}  // namespace geotrain::cli
