// The GPT-2 tokenizer against reference ids from Hugging Face tokenizers (cross-checked with
// OpenAI's encoder): tests/golden/gpt2_tokenizer.json, made by
// scripts/golden/make_tokenizer_golden.py. Both file formats must give exactly the same ids.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/models/golden_json.h"
#include "tests/models/gpt2_tokenizer_files.h"

namespace geotrain::models {
namespace {

using testing::IdsFingerprint;
using testing::LoadGoldenJson;
using testing::Printable;

using testing::Gpt2FromTokenizerJson;
using testing::Gpt2FromVocabMerges;

struct GoldenCase {
  std::string text;
  std::vector<int32_t> ids;
};

std::vector<GoldenCase> LoadGolden() {
  const nlohmann::json golden = LoadGoldenJson("gpt2_tokenizer.json");
  std::vector<GoldenCase> cases;
  if (!golden.is_object()) return cases;
  for (const auto& c : golden["cases"]) {
    cases.push_back({c["text"].get<std::string>(), c["ids"].get<std::vector<int32_t>>()});
  }
  return cases;
}

TEST(Gpt2TokenizerGoldenTest, HelloWorld) {
  for (const BpeTokenizer* t : {Gpt2FromVocabMerges(), Gpt2FromTokenizerJson()}) {
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->Encode("Hello world"), (std::vector<int32_t>{15496, 995}));
    EXPECT_EQ(t->vocab_size(), 50257);
    EXPECT_EQ(t->TokenId("<|endoftext|>"), 50256);
  }
}

TEST(Gpt2TokenizerGoldenTest, EveryGoldenStringFromBothFileFormats) {
  const std::vector<GoldenCase> cases = LoadGolden();
  ASSERT_GE(cases.size(), 100u);
  const BpeTokenizer* from_vocab = Gpt2FromVocabMerges();
  const BpeTokenizer* from_json = Gpt2FromTokenizerJson();
  ASSERT_NE(from_vocab, nullptr);
  ASSERT_NE(from_json, nullptr);
  for (const GoldenCase& c : cases) {
    EXPECT_EQ(from_vocab->Encode(c.text), c.ids) << "vocab.json+merges.txt: " << Printable(c.text);
    EXPECT_EQ(from_json->Encode(c.text), c.ids) << "tokenizer.json: " << Printable(c.text);
    auto decoded = from_vocab->Decode(c.ids);
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    EXPECT_EQ(*decoded, c.text);
  }
}

TEST(Gpt2TokenizerGoldenTest, BundledCorpusMatchesReferenceIds) {
  const nlohmann::json golden = LoadGoldenJson("gpt2_tokenizer.json");
  ASSERT_TRUE(golden.is_object() && golden.contains("corpus"));
  const BpeTokenizer* gpt2 = Gpt2FromVocabMerges();
  ASSERT_NE(gpt2, nullptr);
  for (const auto& entry : golden["corpus"]) {
    const std::string path =
        std::string(GEOTRAIN_SOURCE_DIR) + "/" + entry["path"].get<std::string>();
    std::ifstream file(path, std::ios::binary);
    ASSERT_TRUE(file.good()) << path;
    const std::string text((std::istreambuf_iterator<char>(file)), {});
    const std::vector<int32_t> ids = gpt2->Encode(text);
    EXPECT_EQ(ids.size(), entry["count"].get<size_t>()) << path;
    EXPECT_EQ(IdsFingerprint(ids), entry["fnv1a64"].get<std::string>()) << path;
    EXPECT_EQ(*gpt2->Decode(ids), text) << path;
  }
}

}  // namespace
}  // namespace geotrain::models
