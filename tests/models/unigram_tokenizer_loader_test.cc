// LoadUnigramTokenizerJson's refusals: each setting geotrain does not implement is refused with
// an error naming the file and the field; LoadAnyTokenizerJson dispatches Unigram models here.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "models/tokenizer/tokenizer_loaders.h"
#include "tests/testing/temp_dir.h"

namespace geotrain::models {
namespace {

using geotrain::testing::TempDir;
using nlohmann::json;

json Fixture() {
  std::ifstream in(std::string(GEOTRAIN_SOURCE_DIR) +
                   "/tests/golden/tokenizers/deberta_always/tokenizer.json");
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());
}

// Loads the fixture changed by `edit`; expects an error containing the file and `needle`.
void ExpectRefused(const std::function<void(json&)>& edit, const std::string& needle) {
  json j = Fixture();
  edit(j);
  TempDir dir;
  const std::string path = dir.Write("tokenizer.json", j.dump());
  for (const Status& status :
       {LoadUnigramTokenizerJson(path).status(), LoadAnyTokenizerJson(path).status()}) {
    ASSERT_FALSE(status.ok()) << needle;
    EXPECT_NE(status.ToString().find(path), std::string::npos) << status.ToString();
    EXPECT_NE(status.ToString().find(needle), std::string::npos) << status.ToString();
  }
}

TEST(UnigramTokenizerLoaderTest, FixtureLoadsThroughEveryEntry) {
  TempDir dir;
  const std::string path = dir.Write("tokenizer.json", Fixture().dump());
  auto any = LoadAnyTokenizerJson(path);
  ASSERT_TRUE(any.ok()) << any.status().ToString();
  EXPECT_EQ(any.value()->TokenId("[CLS]"), 2);
  EXPECT_FALSE(any.value()->BehaviourKey().empty());
  // The BPE-only entry still refuses it (its first refusal is the normalizer), naming the file.
  auto bpe = LoadTokenizerJson(path);
  ASSERT_FALSE(bpe.ok());
  EXPECT_NE(bpe.status().ToString().find(path), std::string::npos);
  // prepend_scheme changes the ids, so it changes the behaviour key.
  json first = Fixture();
  first["pre_tokenizer"]["pretokenizers"][0]["prepend_scheme"] = "first";
  auto other = LoadAnyTokenizerJson(dir.Write("first.json", first.dump()));
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  EXPECT_NE(other.value()->BehaviourKey(), any.value()->BehaviourKey());
}

TEST(UnigramTokenizerLoaderTest, RefusesModelSettings) {
  ExpectRefused([](json& j) { j["model"]["byte_fallback"] = true; }, "model.byte_fallback");
  ExpectRefused([](json& j) { j["model"]["unk_id"] = nullptr; }, "model.unk_id");
  ExpectRefused([](json& j) { j["model"]["unk_id"] = 100000; }, "model.unk_id");
  ExpectRefused([](json& j) { j["model"]["alpha"] = 0.1; }, "model.alpha");
  ExpectRefused(
      [](json& j) {
        j["model"]["vocab"][7] = json::array({"x", "y"});
      },
      "model.vocab[7]");
  ExpectRefused([](json& j) { j["model"]["vocab"][7][0] = j["model"]["vocab"][6][0]; },
                "model.vocab[7]");
  ExpectRefused([](json& j) { j["model"]["vocab"][7][0] = ""; }, "model.vocab[7]");
  ExpectRefused([](json& j) { j["model"].erase("vocab"); }, "model.vocab");
}

TEST(UnigramTokenizerLoaderTest, RefusesNormalizers) {
  for (const char* type : {"NFKC", "NFD", "NFKD", "Lowercase", "Precompiled", "Prepend"}) {
    ExpectRefused(
        [&](json& j) {
          j["normalizer"]["normalizers"][1] = {{"type", type}};
        },
        std::string("normalizer.normalizers[1].type: \"") + type);
  }
  ExpectRefused([](json& j) { j["normalizer"] = {{"type", "NFKC"}}; }, "normalizer.type");
  ExpectRefused(
      [](json& j) {
        j["normalizer"]["normalizers"][0]["pattern"] = {{"Regex", "\\s+"}};
      },
      "normalizer.normalizers[0].pattern");
  ExpectRefused(
      [](json& j) {
        j["normalizer"]["normalizers"][0]["pattern"] = {{"String", ""}};
      },
      "normalizer.normalizers[0].pattern");
}

TEST(UnigramTokenizerLoaderTest, RefusesPreTokenizersAndDecoders) {
  ExpectRefused(
      [](json& j) {
        j["pre_tokenizer"]["pretokenizers"].insert(
            j["pre_tokenizer"]["pretokenizers"].begin(),
            json{{"type", "Punctuation"}, {"behavior", "Isolated"}});
      },
      "pre_tokenizer.pretokenizers");
  ExpectRefused(
      [](json& j) {
        j["pre_tokenizer"] = {{"type", "Whitespace"}};
      },
      "pre_tokenizer.type");
  ExpectRefused([](json& j) { j.erase("pre_tokenizer"); }, "pre_tokenizer");
  ExpectRefused(
      [](json& j) { j["pre_tokenizer"]["pretokenizers"][0]["prepend_scheme"] = "sometimes"; },
      "pre_tokenizer.pretokenizers[0].prepend_scheme");
  ExpectRefused([](json& j) { j["pre_tokenizer"]["pretokenizers"][0]["replacement"] = "ab"; },
                "pre_tokenizer.pretokenizers[0].replacement");
  ExpectRefused([](json& j) { j["decoder"] = {{"type", "ByteFallback"}}; }, "decoder.type");
  ExpectRefused([](json& j) { j.erase("decoder"); }, "decoder");
  ExpectRefused(
      [](json& j) {
        j["post_processor"] = {{"type", "ByteLevel"}};
      },
      "post_processor.type");
  ExpectRefused([](json& j) { j["truncation"] = {{"max_length", 5}}; }, "truncation");
  ExpectRefused([](json& j) { j["added_tokens"][2]["normalized"] = true; },
                "added_tokens[2].normalized");
  ExpectRefused([](json& j) { j["added_tokens"][2]["lstrip"] = true; }, "added_tokens[2].lstrip");
  ExpectRefused([](json& j) { j["added_tokens"][2]["id"] = 3; }, "[CLS]");
}

}  // namespace
}  // namespace geotrain::models
