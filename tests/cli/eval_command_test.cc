// `geotrain eval` against transformers (tests/golden/eval_gpt2.json, made by
// scripts/golden/make_eval_golden.py), and its argument checks.
#include "cli/eval_command.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "common/io/file_contents.h"
#include "models/model_config.h"
#include "models/transformer/stage.h"

namespace geotrain::cli {
namespace {

std::string SourcePath(const std::string& relative) {
  return std::string(GEOTRAIN_SOURCE_DIR) + "/" + relative;
}

nlohmann::json ReadGolden() {
  const StatusOr<std::string> text =
      io::ReadFileContents(SourcePath("tests/golden/eval_gpt2.json"), 1 << 20);
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  return text.ok() ? nlohmann::json::parse(*text) : nlohmann::json::object();
}

EvalOptions GoldenOptions(const nlohmann::json& golden) {
  EvalOptions options;
  options.model_dir = SourcePath(golden.at("model"));
  options.tokenizer_dir = SourcePath(golden.at("tokenizer"));
  options.data_path = SourcePath(golden.at("data"));
  options.seq_length = golden.at("seq_length");
  options.batch_size = golden.at("batch_size");
  return options;
}

TEST(EvalCommandTest, MatchesTransformers) {
  const nlohmann::json golden = ReadGolden();
  const StatusOr<EvalResult> result = RunEval(GoldenOptions(golden));
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  const double loss = golden.at("loss");
  EXPECT_NEAR(result->loss, loss, 1e-4 * loss);
  EXPECT_NEAR(result->perplexity, std::exp(loss), 1e-4 * std::exp(loss));
  EXPECT_EQ(result->tokens, golden.at("tokens").get<int64_t>());
}

TEST(EvalCommandTest, BatchSizeDoesNotChangeTheResult) {
  const nlohmann::json golden = ReadGolden();
  EvalOptions options = GoldenOptions(golden);
  options.batch_size = 1;
  const StatusOr<EvalResult> one = RunEval(options);
  options.batch_size = 100;
  const StatusOr<EvalResult> all = RunEval(options);
  ASSERT_TRUE(one.ok() && all.ok());
  EXPECT_NEAR(one->loss, all->loss, 1e-6 * all->loss);
  EXPECT_EQ(one->tokens, all->tokens);
}

TEST(EvalCommandTest, FormatsJsonAndTable) {
  const EvalResult result{2.0, std::exp(2.0), 46};
  const nlohmann::json json = nlohmann::json::parse(FormatEvalResult(result, OutputFormat::kJson));
  EXPECT_EQ(json.at("loss").get<double>(), 2.0);
  EXPECT_EQ(json.at("perplexity").get<double>(), std::exp(2.0));
  EXPECT_EQ(json.at("tokens").get<int64_t>(), 46);
  EXPECT_EQ(FormatEvalResult(result, OutputFormat::kTable),
            "loss 2.000000  perplexity 7.3891  tokens 46");
}

TEST(EvalCommandTest, RefusesBadArgumentsNamingTheFlag) {
  EvalOptions options = GoldenOptions(ReadGolden());
  options.seq_length = 1;
  StatusOr<EvalResult> result = RunEval(options);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("--seq-length"), std::string::npos);

  options.seq_length = 8;
  options.batch_size = 0;
  result = RunEval(options);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("--batch-size"), std::string::npos);

  // Longer than the text: not even one block.
  options.batch_size = 2;
  options.seq_length = 100000;
  result = RunEval(options);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("fewer than one block"), std::string::npos)
      << result.status().ToString();
}

TEST(EvalCommandTest, RefusesATokenizerLargerThanTheModel) {
  EvalOptions options = GoldenOptions(ReadGolden());
  options.tokenizer_dir = SourcePath("examples/tokenizers/gpt2");  // ids up to 50256; model: 256
  const StatusOr<EvalResult> result = RunEval(options);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("vocab_size 256"), std::string::npos)
      << result.status().ToString();
}

TEST(EvalCommandTest, NeedsTheWholeModel) {
  const std::string dir = SourcePath("tests/golden/models/gpt2");
  const StatusOr<models::ModelConfig> config = models::LoadModelConfig(dir);
  ASSERT_TRUE(config.ok());
  auto stage = models::LoadStage(dir, {0, 2, true, false}, at::kCPU, at::kFloat);
  ASSERT_TRUE(stage.ok()) << stage.status().ToString();
  const StatusOr<EvalResult> result = EvaluateTokens(**stage, std::vector<int32_t>(20, 1), 4, 2);
  EXPECT_FALSE(result.ok());
}

}  // namespace
}  // namespace geotrain::cli
