// SmolLM2-135M-Instruct imported from its GGUF (ImportGgufModel) computes the logits that
// transformers computes when it loads the same GGUF itself (tests/golden/models/smollm2,
// scripts/golden/make_smollm2_golden.py). This checks the import end to end (dequantization, the
// q/k un-permutation, config) on a real model. Skipped when the GGUF is not installed
// (scripts/install-smollm2.sh).
#include <gtest/gtest.h>

#include <cstdio>

#include "models/gguf/gguf_import.h"
#include "models/safetensors.h"
#include "tests/models/gguf_golden_files.h"
#include "tests/models/transformer/golden_models.h"
#include "tests/testing/temp_dir.h"

namespace geotrain::models {
namespace {

class SmolLm2GgufGoldenTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string gguf = geotrain::testing::SmolLm2GgufPath();
    if (gguf.empty()) return;
    temp_ = new geotrain::testing::TempDir();
    const Status status = ImportGgufModel(gguf, temp_->File("smollm2"));
    ASSERT_TRUE(status.ok()) << status.ToString();
  }
  static void TearDownTestSuite() {
    delete temp_;
    temp_ = nullptr;
  }
  void SetUp() override {
    if (temp_ == nullptr) {
      GTEST_SKIP() << "SmolLM2 GGUF not installed: run scripts/install-smollm2.sh or set "
                      "GEOTRAIN_SMOLLM2_GGUF";
    }
  }

  void ExpectMatches(at::ScalarType dtype, double logit_tolerance) {
    const std::string dir = temp_->File("smollm2");
    auto reference = SafetensorsFile::Open(std::string(GEOTRAIN_SOURCE_DIR) +
                                           "/tests/golden/models/smollm2/reference.safetensors");
    ASSERT_TRUE(reference.ok()) << reference.status().ToString();
    const at::Tensor input_ids = testing::ReadTensor(**reference, "input_ids");
    const at::Tensor head = testing::ReadTensor(**reference, "logits_head");
    const at::Tensor logsumexp = testing::ReadTensor(**reference, "logsumexp");
    const at::Tensor argmax = testing::ReadTensor(**reference, "argmax");
    auto config = LoadModelConfig(dir);
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    auto stage = testing::MustLoadStage(dir, WholeModelPlan(*config), dtype);
    ASSERT_NE(stage, nullptr);
    auto logits = stage->Forward(input_ids);
    ASSERT_TRUE(logits.ok()) << logits.status().ToString();
    const at::Tensor l = logits->to(at::kDouble);
    const double head_diff = testing::MaxAbsDiff(l.narrow(-1, 0, head.size(-1)), head);
    const double lse_diff = testing::MaxAbsDiff(at::logsumexp(l, -1), logsumexp);
    std::printf("  smollm2 %-7s max |logit - transformers| = %.3g, |logsumexp diff| = %.3g\n",
                c10::toString(dtype), head_diff, lse_diff);
    EXPECT_LT(head_diff, logit_tolerance);
    EXPECT_LT(lse_diff, logit_tolerance);
    EXPECT_TRUE(at::equal(l.argmax(-1), argmax));
  }

  static geotrain::testing::TempDir* temp_;
};

geotrain::testing::TempDir* SmolLm2GgufGoldenTest::temp_ = nullptr;

TEST_F(SmolLm2GgufGoldenTest, Float64MatchesTransformers) {
  ExpectMatches(at::kDouble, 1e-9);
}  // measured 8.9e-14

TEST_F(SmolLm2GgufGoldenTest, Float32MatchesTransformers) {
  ExpectMatches(at::kFloat, 5e-4);
}  // measured 6.1e-5

}  // namespace
}  // namespace geotrain::models
