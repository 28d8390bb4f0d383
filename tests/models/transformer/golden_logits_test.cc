// Logits and loss of tiny random checkpoints written by Hugging Face transformers match
// transformers' own float64 outputs: within 1e-4 when geotrain computes in float32, within 1e-9
// in float64 (the exact answer up to rounding, so any difference in the math shows).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "common/io/file_contents.h"
#include "models/safetensors_checkpoint.h"
#include "models/safetensors_writer.h"
#include "tests/models/transformer/golden_models.h"
#include "tests/testing/temp_dir.h"

namespace geotrain::models {
namespace {

using testing::GoldenModelDir;
using testing::GoldenModelNames;
using testing::GoldenReference;
using testing::MaxAbsDiff;
using testing::MustLoadStage;
using testing::ReadGoldenReference;

struct GoldenCase {
  at::ScalarType dtype;
  double logits_tolerance;
  double loss_tolerance;
};

void ExpectMatchesTransformers(const std::string& name, const GoldenCase& c) {
  const std::string dir = GoldenModelDir(name);
  const GoldenReference reference = ReadGoldenReference(dir);
  ASSERT_TRUE(reference.logits.defined()) << name;
  const StatusOr<ModelConfig> config = LoadModelConfig(dir);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  const std::unique_ptr<Stage> stage = MustLoadStage(dir, WholeModelPlan(*config), c.dtype);
  ASSERT_NE(stage, nullptr);

  const StatusOr<at::Tensor> logits = stage->Forward(reference.input_ids);
  ASSERT_TRUE(logits.ok()) << logits.status().ToString();
  ASSERT_EQ(logits->sizes(), reference.logits.sizes()) << name;
  EXPECT_EQ(logits->scalar_type(), c.dtype);
  const StatusOr<at::Tensor> loss = stage->Loss(*logits, reference.labels);
  ASSERT_TRUE(loss.ok()) << loss.status().ToString();

  const double logits_diff = MaxAbsDiff(*logits, reference.logits);
  const double loss_diff = MaxAbsDiff(*loss, reference.loss);
  std::printf("  %-14s %-7s max |logit - transformers| = %.3g, |loss - transformers| = %.3g\n",
              name.c_str(), c10::toString(c.dtype), logits_diff, loss_diff);
  EXPECT_LT(logits_diff, c.logits_tolerance) << name;
  EXPECT_LT(loss_diff, c.loss_tolerance) << name;
}

TEST(GoldenLogitsTest, Float32MatchesTransformers) {
  for (const std::string& name : GoldenModelNames()) {
    ExpectMatchesTransformers(name, {at::kFloat, 1e-4, 1e-5});
  }
}

TEST(GoldenLogitsTest, Float64MatchesTransformersExactly) {
  for (const std::string& name : GoldenModelNames()) {
    ExpectMatchesTransformers(name, {at::kDouble, 1e-9, 1e-10});
  }
}

TEST(GoldenLogitsTest, BFloat16IsClose) {
  // 8-bit mantissas: a smoke test of the 16-bit path, not of accuracy.
  ExpectMatchesTransformers("llama", {at::kBFloat16, 0.5, 0.05});
}

// The original openai-community/gpt2 files were saved from GPT2Model: "wte.weight", not
// "transformer.wte.weight". Both spellings load, and a stage saves under the spelling it read.
TEST(GoldenLogitsTest, Gpt2WithoutTransformerPrefix) {
  geotrain::testing::TempDir temp;
  const std::string source = GoldenModelDir("gpt2");
  auto original = SafetensorsCheckpoint::OpenDirectory(source);
  ASSERT_TRUE(original.ok());
  SafetensorsWriter writer;
  std::vector<std::vector<float>> buffers;
  const std::vector<std::string> names = (*original)->TensorNames();
  buffers.reserve(names.size());
  for (const std::string& name : names) {
    ASSERT_EQ(name.rfind("transformer.", 0), 0u) << name;
    buffers.push_back(*(*original)->ReadFloat32(name));
    ASSERT_TRUE(
        writer.AddFloat32(name.substr(12), (*(*original)->Get(name)).shape, buffers.back()).ok());
  }
  ASSERT_TRUE(writer.Write(temp.File("model.safetensors")).ok());
  const StatusOr<std::string> config = io::ReadFileContents(source + "/config.json", 1 << 16);
  ASSERT_TRUE(config.ok());
  temp.Write("config.json", *config);

  const GoldenReference reference = ReadGoldenReference(source);
  const StatusOr<ModelConfig> parsed = LoadModelConfig(temp.path());
  ASSERT_TRUE(parsed.ok());
  const std::unique_ptr<Stage> stage = MustLoadStage(temp.path(), WholeModelPlan(*parsed));
  ASSERT_NE(stage, nullptr);
  EXPECT_EQ(stage->Parameters().front().name, "wte.weight");
  const StatusOr<at::Tensor> logits = stage->Forward(reference.input_ids);
  ASSERT_TRUE(logits.ok()) << logits.status().ToString();
  EXPECT_LT(MaxAbsDiff(*logits, reference.logits), 1e-4);

  ASSERT_TRUE(stage->Save(temp.File("saved.safetensors")).ok());
  auto saved = SafetensorsCheckpoint::OpenFile(temp.File("saved.safetensors"));
  ASSERT_TRUE(saved.ok());
  EXPECT_TRUE((*saved)->Contains("h.0.attn.c_attn.weight"));
  EXPECT_FALSE((*saved)->Contains("transformer.h.0.attn.c_attn.weight"));
}

}  // namespace
}  // namespace geotrain::models
