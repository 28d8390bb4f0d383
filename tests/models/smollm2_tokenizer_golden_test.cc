// The SmolLM2 tokenizer (pre_tokenizer Sequence[Digits{individual_digits}, ByteLevel]) against
// reference ids from Hugging Face tokenizers: tests/golden/models/smollm2/tokenizer_golden.json,
// made by scripts/golden/make_smollm2_tokenizer_golden.py. The tokenizer.json (1.8 MB) is not
// checked in: it is made here from the installed GGUF (GgufTokenizerToJson, as ImportGgufModel
// writes it). Skipped when the GGUF is not installed (scripts/install-smollm2.sh).
//
// SmolLM2's vocabulary has no token for 21 bytes (0x04, 0x06, 0x13, 0x14, 0x16, 0x1D, 0xC0, 0xC1,
// 0xF1, 0xF2, 0xF5-0xFF); Hugging Face drops such bytes silently, BpeModel refuses the file. Here
// each missing byte gets a new id after the vocabulary, which changes no id of the golden texts
// (none contains those bytes) and keeps every byte encodable.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/gguf/gguf_file.h"
#include "models/gguf/gguf_tokenizer_json.h"
#include "models/tokenizer/byte_level_alphabet.h"
#include "models/tokenizer/tokenizer_loaders.h"
#include "models/tokenizer/utf8.h"
#include "tests/models/gguf_golden_files.h"
#include "tests/testing/temp_dir.h"

namespace geotrain::models {
namespace {

// Adds a token for every byte the vocabulary lacks, with ids after the largest one.
std::string WithAllBytes(const std::string& tokenizer_json) {
  nlohmann::json root = nlohmann::json::parse(tokenizer_json);
  nlohmann::json& vocab = root["model"]["vocab"];
  int64_t next_id = 0;
  for (const auto& entry : vocab.items()) {
    next_id = std::max(next_id, entry.value().get<int64_t>() + 1);
  }
  for (const auto& token : root["added_tokens"]) {
    next_id = std::max(next_id, token["id"].get<int64_t>() + 1);
  }
  for (int b = 0; b < 256; ++b) {
    std::string spelling;
    AppendUtf8(ByteToAlphabetCodePoint(static_cast<uint8_t>(b)), &spelling);
    if (!vocab.contains(spelling)) vocab[spelling] = next_id++;
  }
  return root.dump();
}

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
    auto tokenizer = LoadTokenizerJson(dir.Write("tokenizer.json", WithAllBytes(*json)));
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

TEST_F(SmolLm2TokenizerGoldenTest, DecodeEncodeRoundTripsArbitraryBytes) {
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes.push_back(static_cast<char>(i));
  bytes += "12 ½ ٣٤ <|im_start|> \xf0\x9f\x8e";
  for (const std::string& text : {bytes, std::string("9") + bytes + "0"}) {
    auto decoded = tokenizer_->Decode(tokenizer_->EncodeOrdinary(text));
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    EXPECT_EQ(*decoded, text);
  }
}

}  // namespace
}  // namespace geotrain::models
