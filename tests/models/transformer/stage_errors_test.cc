// Malformed inputs and checkpoints give errors that say what is wrong, never an exception.
#include <gtest/gtest.h>

#include <string>

#include "models/init_random_model.h"
#include "models/safetensors_writer.h"
#include "tests/models/transformer/golden_models.h"
#include "tests/testing/temp_dir.h"

namespace geotrain::models {
namespace {

using geotrain::testing::TempDir;
using testing::GoldenModelDir;
using testing::MustLoadStage;

void ExpectError(const Status& status, StatusCode code, const std::string& fragment) {
  EXPECT_EQ(status.code(), code) << status.ToString();
  EXPECT_NE(status.message().find(fragment), std::string::npos)
      << "\"" << fragment << "\" missing from: " << status.ToString();
}

ModelConfig TinyGpt2() {
  ModelConfig config;
  config.family = ModelFamily::kGpt2;
  config.vocab_size = 50;
  config.hidden_size = 16;
  config.num_layers = 2;
  config.num_heads = 2;
  config.num_kv_heads = 2;
  config.head_dim = 8;
  config.intermediate_size = 64;
  config.max_positions = 8;
  config.norm_eps = 1e-5;
  return config;
}

TEST(StageErrorsTest, FirstStageInputs) {
  TempDir dir;
  ASSERT_TRUE(InitRandomModel(TinyGpt2(), dir.path(), 1).ok());
  auto stage = MustLoadStage(dir.path(), {0, 1, true, false});
  ASSERT_NE(stage, nullptr);
  EXPECT_TRUE(stage->Forward(at::zeros({1, 8}, at::kInt)).ok());  // int32 ids are fine
  ExpectError(stage->Forward(at::zeros({1, 4})).status(), StatusCode::kInvalidArgument,
              "expected integer token ids [batch, seq]");
  ExpectError(stage->Forward(at::zeros({4}, at::kLong)).status(), StatusCode::kInvalidArgument,
              "input [4]: expected integer token ids");
  ExpectError(stage->Forward(at::zeros({1, 9}, at::kLong)).status(), StatusCode::kInvalidArgument,
              "sequence length must be in [1, 8]");
  ExpectError(stage->Forward(at::full({1, 4}, 50, at::kLong)).status(),
              StatusCode::kInvalidArgument, "token ids must be in [0, 50)");
  ExpectError(stage->Forward(at::full({1, 4}, -1, at::kLong)).status(),
              StatusCode::kInvalidArgument, "token ids must be in [0, 50)");
  ExpectError(stage->Forward(at::Tensor()).status(), StatusCode::kInvalidArgument, "no tensor");
  const at::Tensor logits = at::zeros({1, 4, 50});
  ExpectError(stage->Loss(logits, at::zeros({1, 4}, at::kLong)).status(),
              StatusCode::kFailedPrecondition, "only the last stage has a loss");
}

TEST(StageErrorsTest, LaterStageInputs) {
  TempDir dir;
  ASSERT_TRUE(InitRandomModel(TinyGpt2(), dir.path(), 1).ok());
  auto stage = MustLoadStage(dir.path(), {1, 2, false, true});
  ASSERT_NE(stage, nullptr);
  EXPECT_TRUE(stage->Forward(at::zeros({2, 3, 16})).ok());
  ExpectError(stage->Forward(at::zeros({2, 3, 15})).status(), StatusCode::kInvalidArgument,
              "expected hidden states [batch, seq, 16]");
  ExpectError(stage->Forward(at::zeros({2, 3}, at::kLong)).status(), StatusCode::kInvalidArgument,
              "expected hidden states");
  ExpectError(stage->Forward(at::zeros({2, 3, 16}, at::kDouble)).status(),
              StatusCode::kInvalidArgument, "dtype Double, the stage computes in Float");
  ExpectError(stage->Loss(at::zeros({2, 1, 50}), at::zeros({2, 1}, at::kLong)).status(),
              StatusCode::kInvalidArgument, "seq >= 2");
  ExpectError(stage->Loss(at::zeros({2, 3, 50}), at::zeros({2, 3})).status(),
              StatusCode::kInvalidArgument, "integer labels");
  // All labels ignored: nothing to average, as in transformers (NaN), but no error.
  const StatusOr<at::Tensor> empty =
      stage->Loss(at::zeros({1, 3, 50}), at::full({1, 3}, kIgnoreLabel, at::kLong));
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  // Uniform logits over 50 tokens: loss ln(50).
  const StatusOr<at::Tensor> uniform =
      stage->Loss(at::zeros({1, 3, 50}), at::ones({1, 3}, at::kLong));
  ASSERT_TRUE(uniform.ok());
  EXPECT_NEAR(uniform->item<double>(), std::log(50.0), 1e-6);
}

TEST(StageErrorsTest, CheckpointThatDisagreesWithConfig) {
  TempDir dir;
  ModelConfig config = TinyGpt2();
  ASSERT_TRUE(InitRandomModel(config, dir.path(), 1).ok());
  auto checkpoint = SafetensorsCheckpoint::OpenDirectory(dir.path());
  ASSERT_TRUE(checkpoint.ok());
  config.intermediate_size = 32;
  ExpectError(LoadStage(config, **checkpoint, {1, 2, false, false}, at::kCPU, at::kFloat).status(),
              StatusCode::kInvalidArgument,
              "transformer.h.1.mlp.c_fc.weight: shape [16, 64] in the checkpoint, but "
              "config.json implies [16, 32]");
  config = TinyGpt2();
  config.num_layers = 3;
  ExpectError(LoadStage(config, **checkpoint, {2, 3, false, true}, at::kCPU, at::kFloat).status(),
              StatusCode::kNotFound,
              "checkpoint has no tensor transformer.h.2.ln_1.weight (nor h.2.ln_1.weight)");
}

TEST(StageErrorsTest, BadPlansAndTypes) {
  const std::string dir = GoldenModelDir("llama");
  ExpectError(LoadStage(dir, {0, 9, true, true}, at::kCPU, at::kFloat).status(),
              StatusCode::kInvalidArgument, "not within [0, 4]");
  ExpectError(LoadStage(dir, {0, 4, true, true}, at::kCPU, at::kLong).status(),
              StatusCode::kInvalidArgument, "stage dtype Long is not a floating-point type");
  ExpectError(LoadStage("/nonexistent", {0, 4, true, true}, at::kCPU, at::kFloat).status(),
              StatusCode::kNotFound, "/nonexistent/config.json");
}

}  // namespace
}  // namespace geotrain::models
