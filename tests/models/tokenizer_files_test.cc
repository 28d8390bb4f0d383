// Hostile and malformed tokenizer files: each gives an error naming the file and the field.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "models/tokenizer/tokenizer_loaders.h"
#include "tests/models/tiny_bpe_files.h"
#include "tests/testing/temp_dir.h"

namespace geotrain::models {
namespace {

using geotrain::testing::TempDir;
using nlohmann::json;

void ExpectErrorContains(const Status& s, const std::vector<std::string>& wanted,
                         const std::string& label) {
  ASSERT_FALSE(s.ok()) << label;
  for (const std::string& w : wanted) {
    EXPECT_NE(s.message().find(w), std::string::npos)
        << label << ": \"" << w << "\" missing from: " << s.ToString();
  }
}

TEST(TokenizerFilesTest, TinyFilesLoadInBothFormats) {
  TempDir dir;
  auto from_pair = LoadVocabMergesTokenizer(dir.Write("vocab.json", testing::TinyVocab().dump()),
                                            dir.Write("merges.txt", testing::TinyMergesText()));
  ASSERT_TRUE(from_pair.ok()) << from_pair.status().ToString();
  auto from_json =
      LoadTokenizerJson(dir.Write("tokenizer.json", testing::TinyTokenizerJson().dump()));
  ASSERT_TRUE(from_json.ok()) << from_json.status().ToString();
  EXPECT_EQ((*from_pair)->Encode("hello"), (*from_json)->Encode("hello"));
  // Legacy "left right" merge strings are read too.
  json legacy = testing::TinyTokenizerJson();
  legacy["model"]["merges"] = json::array();
  for (const auto& [a, b] : testing::TinyMerges()) legacy["model"]["merges"].push_back(a + " " + b);
  auto from_legacy = LoadTokenizerJson(dir.Write("legacy.json", legacy.dump()));
  ASSERT_TRUE(from_legacy.ok()) << from_legacy.status().ToString();
  EXPECT_EQ((*from_legacy)->Encode("hello"), std::vector<int32_t>{259});
  // A directory prefers tokenizer.json.
  auto from_dir = LoadTokenizerDirectory(dir.path());
  ASSERT_TRUE(from_dir.ok()) << from_dir.status().ToString();
  EXPECT_EQ((*from_dir)->Encode("<|eot|>"), std::vector<int32_t>{261});
}

// As in Hugging Face tokenizers (BPE without unk_token or byte_fallback), a byte the vocabulary
// lacks is dropped: SmolLM2's vocabulary lacks 21 bytes.
TEST(TokenizerFilesTest, BytesWithoutATokenAreDropped) {
  json vocab = testing::TinyVocab();
  vocab.erase(testing::ByteSpelling('\n'));
  TempDir dir;
  auto tokenizer = LoadVocabMergesTokenizer(dir.Write("vocab.json", vocab.dump()),
                                            dir.Write("merges.txt", testing::TinyMergesText()));
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().ToString();
  EXPECT_EQ((*tokenizer)->Encode("hello\n"), (*tokenizer)->Encode("hello"));
  EXPECT_EQ((*tokenizer)->Encode("\n\n"), std::vector<int32_t>{});
}

TEST(TokenizerFilesTest, HostileVocabJson) {
  struct Case {
    const char* label;
    std::string vocab;
    std::vector<std::string> wanted;
  };
  json negative = testing::TinyVocab();
  negative["he"] = -4;
  json duplicate_id = testing::TinyVocab();
  duplicate_id["ll"] = 256;  // "he" has 256 too
  json huge_id = testing::TinyVocab();
  huge_id["he"] = 1LL << 40;
  json string_id = testing::TinyVocab();
  string_id["he"] = "256";
  const std::vector<Case> cases = {
      {"bad JSON", "{\"a\": 1,", {"vocab.json", "invalid JSON"}},
      {"not an object", "[1, 2]", {"vocab.json", "expected an object"}},
      {"negative id", negative.dump(), {"vocab.json", "[\"he\"]", "negative"}},
      {"id not an integer", string_id.dump(), {"vocab.json", "[\"he\"]", "expected an integer"}},
      {"id too large", huge_id.dump(), {"vocab.json", "[\"he\"]", "exceeds"}},
      {"duplicate ids",
       duplicate_id.dump(),
       {"vocab.json", "duplicate id 256", "\"he\"", "\"ll\""}},
      {"duplicate token", "{\"a\": 1, \"a\": 2}", {"vocab.json", "duplicate key \"a\""}},
  };
  for (const Case& c : cases) {
    TempDir dir;
    const Status s = LoadVocabMergesTokenizer(dir.Write("vocab.json", c.vocab),
                                              dir.Write("merges.txt", testing::TinyMergesText()))
                         .status();
    ExpectErrorContains(s, c.wanted, c.label);
  }
}

TEST(TokenizerFilesTest, HostileMergesTxt) {
  struct Case {
    const char* label;
    std::string merges;
    std::vector<std::string> wanted;
  };
  const std::vector<Case> cases = {
      {"one token", "#version: 0.2\nh e\nll\n", {"merges.txt line 3", "two tokens"}},
      {"three tokens", "h e x\n", {"merges.txt line 1", "two tokens"}},
      {"unknown token",
       "h e\nq \xc3\xb1\xc3\xb1\n",
       {"merges.txt line 2", "not in the vocabulary"}},
      {"merged token unknown", "h l\n", {"merges.txt line 1", "merged token \"hl\""}},
      {"duplicate merge", "h e\nl l\nh e\n", {"merges.txt line 3", "duplicate merge", "line 1"}},
  };
  for (const Case& c : cases) {
    TempDir dir;
    const Status s = LoadVocabMergesTokenizer(dir.Write("vocab.json", testing::TinyVocab().dump()),
                                              dir.Write("merges.txt", c.merges))
                         .status();
    ExpectErrorContains(s, c.wanted, c.label);
  }
  TempDir dir;
  ExpectErrorContains(LoadVocabMergesTokenizer(dir.Write("vocab.json", testing::TinyVocab().dump()),
                                               dir.Write("merges.txt", testing::TinyMergesText()),
                                               {std::vector<std::string>{"<|nope|>"}})
                          .status(),
                      {"vocab.json", "special token \"<|nope|>\""}, "unknown special token");
  const Status missing =
      LoadVocabMergesTokenizer(dir.File("absent.json"), dir.File("m.txt")).status();
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_NE(missing.message().find("absent.json"), std::string::npos);
}

TEST(TokenizerFilesTest, HostileTokenizerJson) {
  struct Case {
    const char* label;
    std::function<void(json*)> edit;
    std::vector<std::string> wanted;
  };
  const std::vector<Case> cases = {
      {"no model", [](json* j) { j->erase("model"); }, {"model: missing"}},
      {"model not object", [](json* j) { (*j)["model"] = 3; }, {"model: expected an object"}},
      {"no model type", [](json* j) { (*j)["model"].erase("type"); }, {"model.type: missing"}},
      {"WordPiece",
       [](json* j) { (*j)["model"]["type"] = "WordPiece"; },
       {"model.type", "WordPiece", "not supported"}},
      {"dropout", [](json* j) { (*j)["model"]["dropout"] = 0.1; }, {"model.dropout"}},
      {"subword prefix",
       [](json* j) { (*j)["model"]["continuing_subword_prefix"] = "##"; },
       {"model.continuing_subword_prefix"}},
      {"no vocab", [](json* j) { (*j)["model"].erase("vocab"); }, {"model.vocab: missing"}},
      {"vocab array",
       [](json* j) { (*j)["model"]["vocab"] = json::array(); },
       {"model.vocab", "expected an object"}},
      {"no merges", [](json* j) { (*j)["model"].erase("merges"); }, {"model.merges: missing"}},
      {"merge malformed",
       [](json* j) { (*j)["model"]["merges"][2] = json::array({"he"}); },
       {"model.merges[2]", "expected"}},
      {"merge unknown token",
       [](json* j) {
         (*j)["model"]["merges"][1] = {"l", "zz"};
       },
       {"model.merges[1]", "\"zz\"", "not in the vocabulary"}},
      {"normalizer",
       [](json* j) {
         (*j)["normalizer"] = {{"type", "NFC"}};
       },
       {"normalizer", "NFC", "not supported"}},
      {"no pre_tokenizer",
       [](json* j) { (*j)["pre_tokenizer"] = nullptr; },
       {"pre_tokenizer: missing"}},
      {"Whitespace pre_tokenizer",
       [](json* j) {
         (*j)["pre_tokenizer"] = {{"type", "Whitespace"}};
       },
       {"pre_tokenizer.type", "Whitespace", "not supported"}},
      {"use_regex false",
       [](json* j) { (*j)["pre_tokenizer"]["use_regex"] = false; },
       {"pre_tokenizer.use_regex"}},
      {"Sequence with Split",
       [](json* j) {
         (*j)["pre_tokenizer"] = {
             {"type", "Sequence"},
             {"pretokenizers", {{{"type", "Split"}}, {{"type", "ByteLevel"}}}}};
       },
       {"pre_tokenizer.pretokenizers", "exactly one ByteLevel"}},
      {"added_tokens not array",
       [](json* j) { (*j)["added_tokens"] = 1; },
       {"added_tokens", "expected an array"}},
      {"added token without id",
       [](json* j) { (*j)["added_tokens"][0].erase("id"); },
       {"added_tokens[0].id: missing"}},
      {"added token negative id",
       [](json* j) { (*j)["added_tokens"][0]["id"] = -1; },
       {"added_tokens[0].id", "negative"}},
      {"added token without content",
       [](json* j) { (*j)["added_tokens"][0].erase("content"); },
       {"added_tokens[0].content: missing"}},
      {"added token lstrip",
       [](json* j) { (*j)["added_tokens"][0]["lstrip"] = true; },
       {"added_tokens[0].lstrip", "not supported"}},
      {"added token id conflicts with vocab",
       [](json* j) { (*j)["added_tokens"][0]["id"] = 5; },
       {"added token \"<|eot|>\"", "id 5", "vocabulary has it as id 261"}},
      {"duplicate added ids",
       [](json* j) {
         (*j)["added_tokens"].push_back({{"id", 261}, {"content", "<x>"}, {"special", true}});
       },
       {"added token \"<x>\"", "id 261"}},
  };
  for (const Case& c : cases) {
    TempDir dir;
    json j = testing::TinyTokenizerJson();
    c.edit(&j);
    const std::string path = dir.Write("tokenizer.json", j.dump());
    std::vector<std::string> wanted = c.wanted;
    wanted.push_back(path);
    ExpectErrorContains(LoadTokenizerJson(path).status(), wanted, c.label);
  }
  TempDir dir;
  ExpectErrorContains(LoadTokenizerJson(dir.Write("t.json", "{\"model\": ")).status(),
                      {"t.json", "invalid JSON"}, "bad JSON");
  ExpectErrorContains(LoadTokenizerJson(dir.Write("t.json", "[]")).status(),
                      {"t.json", "expected a JSON object"}, "not an object");
  EXPECT_EQ(LoadTokenizerDirectory(dir.File("nothing")).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace geotrain::models
