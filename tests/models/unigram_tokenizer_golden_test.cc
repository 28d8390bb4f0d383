// SentencePiece Unigram (DeBERTa-v2/v3) tokenizers against reference ids from Hugging Face
// tokenizers: tests/golden/unigram_tokenizer.json, made by scripts/golden/make_unigram_golden.py
// from a small vocabulary it trained and saved through transformers' DebertaV2Tokenizer
// (tests/golden/tokenizers/deberta_{always,first}). Every tricky string must give the library's
// ids (with added tokens, and with them as plain text), decode to the library's text, and the NFC
// step must give the library's NFC on sampled probes.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/utf8.h"
#include "models/tokenizer/tokenizer_loaders.h"
#include "models/tokenizer/unicode_nfc.h"
#include "tests/models/golden_json.h"

namespace geotrain::models {
namespace {

using testing::LoadGoldenJson;
using testing::Printable;

std::u32string CodePoints(const std::string& text) {
  std::u32string out;
  for (size_t pos = 0; pos < text.size();) {
    const DecodedCodePoint d = DecodeUtf8(text, pos);
    out.push_back(d.code_point);
    pos += d.length;
  }
  return out;
}

void CheckSection(const nlohmann::json& section) {
  const std::string dir =
      std::string(GEOTRAIN_SOURCE_DIR) + "/" + section["dir"].get<std::string>();
  auto direct = LoadUnigramTokenizerJson(dir + "/tokenizer.json");
  ASSERT_TRUE(direct.ok()) << direct.status().ToString();
  auto any = LoadTokenizerDirectory(dir);
  ASSERT_TRUE(any.ok()) << any.status().ToString();
  for (const Tokenizer* tokenizer : {static_cast<const Tokenizer*>(direct.value().get()),
                                     static_cast<const Tokenizer*>(any.value().get())}) {
    EXPECT_EQ(tokenizer->vocab_size(), section["vocab_size"].get<int32_t>());
    for (const auto& [name, id] : section["specials"].items()) {
      EXPECT_EQ(tokenizer->TokenId(name), id.get<int32_t>()) << name;
    }
    int checked = 0;
    for (const auto& c : section["cases"]) {
      const std::string text = c["text"].get<std::string>();
      const auto ids = c["ids"].get<std::vector<int32_t>>();
      EXPECT_EQ(tokenizer->Encode(text), ids) << dir << ": \"" << Printable(text) << "\"";
      EXPECT_EQ(tokenizer->EncodeOrdinary(text), c["ordinary"].get<std::vector<int32_t>>())
          << dir << ": ordinary \"" << Printable(text) << "\"";
      auto decoded = tokenizer->Decode(ids);
      ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
      EXPECT_EQ(decoded.value(), c["decoded"].get<std::string>())
          << dir << ": decode of \"" << Printable(text) << "\"";
      ++checked;
    }
    EXPECT_GT(checked, 90);
  }
}

TEST(UnigramTokenizerGoldenTest, PrependAlwaysMatchesLibrary) {
  const nlohmann::json golden = LoadGoldenJson("unigram_tokenizer.json");
  ASSERT_FALSE(golden.is_discarded());
  CheckSection(golden["deberta_always"]);
}

TEST(UnigramTokenizerGoldenTest, PrependFirstMatchesLibrary) {
  const nlohmann::json golden = LoadGoldenJson("unigram_tokenizer.json");
  ASSERT_FALSE(golden.is_discarded());
  CheckSection(golden["deberta_first"]);
}

TEST(UnigramTokenizerGoldenTest, NfcMatchesLibrary) {
  const nlohmann::json golden = LoadGoldenJson("unigram_tokenizer.json");
  ASSERT_FALSE(golden.is_discarded());
  int checked = 0;
  for (const auto& probe : golden["nfc"]) {
    const std::string in = probe[0].get<std::string>();
    EXPECT_EQ(NormalizeNfc(CodePoints(in)), CodePoints(probe[1].get<std::string>()))
        << Printable(in);
    ++checked;
  }
  EXPECT_GT(checked, 500);
}

TEST(UnigramTokenizerGoldenTest, DecodeRefusesUnknownIds) {
  const nlohmann::json golden = LoadGoldenJson("unigram_tokenizer.json");
  auto tokenizer = LoadUnigramTokenizerJson(std::string(GEOTRAIN_SOURCE_DIR) + "/" +
                                            golden["deberta_always"]["dir"].get<std::string>() +
                                            "/tokenizer.json");
  ASSERT_TRUE(tokenizer.ok());
  const std::vector<int32_t> bad = {5, tokenizer.value()->vocab_size()};
  EXPECT_FALSE(tokenizer.value()->Decode(bad).ok());
  const std::vector<int32_t> negative = {-1};
  EXPECT_FALSE(tokenizer.value()->Decode(negative).ok());
}

}  // namespace
}  // namespace geotrain::models
