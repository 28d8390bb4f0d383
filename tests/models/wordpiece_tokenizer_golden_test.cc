// BERT WordPiece tokenizers against reference ids from Hugging Face tokenizers:
// tests/golden/wordpiece_tokenizer.json, made by scripts/golden/make_wordpiece_golden.py with two
// small vocabularies it trained (tests/golden/tokenizers/bert_{uncased,cased}). Every tricky string
// and the bundled validation corpus must give the library's ids through tokenizer.json, through
// vocab.txt (+ tokenizer_config.json) and through LoadTokenizerDirectory, and decode to the
// library's text.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/tokenizer/tokenizer_loaders.h"
#include "tests/models/golden_json.h"
#include "tests/testing/temp_dir.h"

namespace geotrain::models {
namespace {

using testing::IdsFingerprint;
using testing::LoadGoldenJson;
using testing::Printable;

struct Loaded {
  std::string how;
  std::unique_ptr<Tokenizer> tokenizer;
};

// One vocabulary's fixture directory loaded every way geotrain can.
std::vector<Loaded> LoadAllWays(const std::string& dir) {
  std::vector<Loaded> out;
  const auto add = [&](const std::string& how, StatusOr<std::unique_ptr<Tokenizer>> loaded) {
    EXPECT_TRUE(loaded.ok()) << how << ": " << loaded.status().ToString();
    if (loaded.ok()) out.push_back({how, std::move(loaded).value()});
  };
  add("tokenizer.json", AsTokenizer(LoadWordPieceTokenizerJson(dir + "/tokenizer.json")));
  add("directory with tokenizer.json", LoadTokenizerDirectory(dir));
  // vocab.txt alone takes its settings from tokenizer_config.json, as transformers does.
  static std::vector<std::unique_ptr<geotrain::testing::TempDir>> keep;
  keep.push_back(std::make_unique<geotrain::testing::TempDir>());
  for (const char* name : {"vocab.txt", "tokenizer_config.json"}) {
    std::ifstream in(dir + "/" + name, std::ios::binary);
    keep.back()->Write(name, std::string(std::istreambuf_iterator<char>(in), {}));
  }
  add("directory with vocab.txt", LoadTokenizerDirectory(keep.back()->path()));
  return out;
}

void CheckVocabulary(const std::string& name) {
  const nlohmann::json golden = LoadGoldenJson("wordpiece_tokenizer.json");
  ASSERT_TRUE(golden.is_object() && golden.contains(name));
  const nlohmann::json& section = golden[name];
  const std::vector<Loaded> tokenizers =
      LoadAllWays(std::string(GEOTRAIN_SOURCE_DIR) + "/" + section["dir"].get<std::string>());
  ASSERT_EQ(tokenizers.size(), 3u);
  ASSERT_GE(section["cases"].size(), 100u);
  for (const Loaded& loaded : tokenizers) {
    const Tokenizer& t = *loaded.tokenizer;
    EXPECT_EQ(t.vocab_size(), section["vocab_size"].get<int32_t>()) << loaded.how;
    for (const auto& [special, id] : section["specials"].items()) {
      EXPECT_EQ(t.TokenId(special), id.get<int32_t>()) << loaded.how << ": " << special;
    }
    for (const auto& c : section["cases"]) {
      const std::string text = c["text"].get<std::string>();
      const std::vector<int32_t> ids = c["ids"].get<std::vector<int32_t>>();
      EXPECT_EQ(t.Encode(text), ids) << name << " " << loaded.how << ": " << Printable(text);
      auto decoded = t.Decode(ids);
      ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
      EXPECT_EQ(*decoded, c["decoded"].get<std::string>())
          << name << " " << loaded.how << ": " << Printable(text);
    }
    for (const auto& entry : section["corpus"]) {
      const std::string path =
          std::string(GEOTRAIN_SOURCE_DIR) + "/" + entry["path"].get<std::string>();
      std::ifstream file(path, std::ios::binary);
      ASSERT_TRUE(file.good()) << path;
      const std::string text((std::istreambuf_iterator<char>(file)), {});
      const std::vector<int32_t> ids = t.Encode(text);
      EXPECT_EQ(ids.size(), entry["count"].get<size_t>()) << loaded.how << ": " << path;
      EXPECT_EQ(IdsFingerprint(ids), entry["fnv1a64"].get<std::string>())
          << loaded.how << ": " << path;
    }
  }
}

TEST(WordPieceTokenizerGoldenTest, UncasedVocabularyEveryWay) { CheckVocabulary("bert_uncased"); }

TEST(WordPieceTokenizerGoldenTest, CasedVocabularyEveryWay) { CheckVocabulary("bert_cased"); }

}  // namespace
}  // namespace geotrain::models
