// The SmolLM2 tokenizer (pre_tokenizer Sequence[Digits{individual_digits}, ByteLevel]) against
// reference ids from Hugging Face tokenizers: tests/golden/models/smollm2/tokenizer_golden.json,
// made by scripts/golden/make_smollm2_tokenizer_golden.py. The tokenizer.json (1.8 MB) is not
// checked in: it is made here from the installed GGUF (GgufTokenizerToJson, as ImportGgufModel
// writes it). Skipped when the GGUF is not installed (scripts/install-smollm2.sh).
//
// SmolLM2's vocabulary has no token for 21 bytes (0x04, 0x06, 0x13, 0x14, 0x16, 0x1D, 0xC0, 0xC1,
// 0xF1, 0xF2, 0xF5-0xFF); like Hugging Face, the tokenizer drops them when encoding.
#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/gguf/gguf_file.h"
#include "models/gguf/gguf_tokenizer_json.h"
#include "models/tokenizer/tokenizer_loaders.h"
#include "tests/models/gguf_golden_files.h"
#include "tests/testing/temp_dir.h"

namespace geotrain::models {
namespace {

class SmolLm2TokenizerGoldenTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string gguf = geotrain::testing::SmolLm2GgufPath();
    if (gguf.empty()) return;
    auto file = GgufFile::Open(gguf);
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    auto json = GgufTokenizerToJson(**file);
    ASSERT_TRUE(json.ok()) << json.status().ToString();
    geotrain::testing::TempDir dir;
    auto tokenizer = LoadTokenizerJson(dir.Write("tokenizer.json", *json));
    ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().ToString();
    tokenizer_ = tokenizer->release();
  }
  static void TearDownTestSuite() {
    delete tokenizer_;
    tokenizer_ = nullptr;
  }
  void SetUp() override {
    if (tokenizer_ == nullptr) {
      GTEST_SKIP() << "SmolLM2 GGUF not installed: run scripts/install-smollm2.sh or set "
                      "GEOTRAIN_SMOLLM2_GGUF";
    }
  }

  static BpeTokenizer* tokenizer_;
};

BpeTokenizer* SmolLm2TokenizerGoldenTest::tokenizer_ = nullptr;

TEST_F(SmolLm2TokenizerGoldenTest, MatchesHuggingFaceTokenizers) {
  std::ifstream in(std::string(GEOTRAIN_SOURCE_DIR) +
                   "/tests/golden/models/smollm2/tokenizer_golden.json");
  ASSERT_TRUE(in.good());
  const nlohmann::json golden = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(golden.is_object());
  ASSERT_GE(golden["cases"].size(), 30u);
  for (const auto& c : golden["cases"]) {
    const std::string text = c["text"].get<std::string>();
    const std::vector<int32_t> ids = tokenizer_->Encode(text);
    EXPECT_EQ(ids, c["ids"].get<std::vector<int32_t>>()) << "text: " << text;
    auto decoded = tokenizer_->Decode(ids);
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    EXPECT_EQ(*decoded, text);
  }
}

TEST_F(SmolLm2TokenizerGoldenTest, RoundTripsEveryByteItHasAndDropsTheOthers) {
  const std::string missing =
      "\x04\x06\x13\x14\x16\x1d\xc0\xc1\xf1\xf2\xf5\xf6\xf7\xf8\xf9"
      "\xfa\xfb\xfc\xfd\xfe\xff";
  std::string kept;
  for (int i = 0; i < 256; ++i) {
    if (missing.find(static_cast<char>(i)) == std::string::npos)
      kept.push_back(static_cast<char>(i));
  }
  kept += "12 ½ ٣٤ <|im_start|> \xf0\x9f\x8e";
  for (const std::string& text : {kept, std::string("9") + kept + "0"}) {
    auto decoded = tokenizer_->Decode(tokenizer_->EncodeOrdinary(text));
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    EXPECT_EQ(*decoded, text);
  }
  auto decoded = tokenizer_->Decode(tokenizer_->EncodeOrdinary("a" + missing + "b"));
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(*decoded, "ab");
}

}  // namespace
}  // namespace geotrain::models
