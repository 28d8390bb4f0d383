// `geotrain eval` on the real SmolLM2-135M-Instruct, imported from its GGUF, against transformers
// (tests/golden/models/smollm2/eval.json, made by scripts/golden/make_smollm2_golden.py). Skipped
// when the GGUF is not installed (scripts/install-smollm2.sh, run by `make deps`).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/eval_command.h"
#include "common/io/file_contents.h"
#include "models/gguf/gguf_import.h"
#include "tests/models/gguf_golden_files.h"
#include "tests/testing/temp_dir.h"

namespace geotrain::cli {
namespace {

TEST(EvalSmolLm2Test, MatchesTransformersOnTheImportedGguf) {
  const std::string gguf = geotrain::testing::SmolLm2GgufPath();
  if (gguf.empty()) {
    GTEST_SKIP() << "SmolLM2 GGUF not installed: run scripts/install-smollm2.sh or set "
                    "GEOTRAIN_SMOLLM2_GGUF";
  }
  const std::string source = GEOTRAIN_SOURCE_DIR;
  const StatusOr<std::string> text =
      io::ReadFileContents(source + "/tests/golden/models/smollm2/eval.json", 1 << 20);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  const nlohmann::json golden = nlohmann::json::parse(*text);

  geotrain::testing::TempDir dir;
  const std::string model = dir.File("smollm2");
  const Status imported = models::ImportGgufModel(gguf, model);
  ASSERT_TRUE(imported.ok()) << imported.ToString();

  EvalOptions options;
  options.model_dir = model;
  options.tokenizer_dir = model;
  options.data_path = source + "/" + golden.at("data").get<std::string>();
  options.seq_length = golden.at("seq_length");
  const StatusOr<EvalResult> result = RunEval(options);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  const double loss = golden.at("loss_float32");
  EXPECT_NEAR(result->loss, loss, 1e-4 * loss);
  // The golden file counts the tokens in whole blocks; eval counts the predictions, N - 1 a block.
  const int64_t seq_length = golden.at("seq_length");
  const int64_t blocks = golden.at("tokens").get<int64_t>() / seq_length;
  EXPECT_EQ(result->tokens, blocks * (seq_length - 1));
}

}  // namespace
}  // namespace geotrain::cli
