// WordPieceTokenizer beyond the golden ids: added tokens in Encode but not EncodeOrdinary, the
// loaders refusing what is not implemented (naming the file and the field), vocab.txt problems,
// and a ClassificationSet framing examples with the vocabulary's real [CLS]/[SEP]/[PAD].
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/data/classification_set.h"
#include "models/data/sample_id.h"
#include "models/data/tokenizer_fingerprint.h"
#include "models/tokenizer/tokenizer_loaders.h"
#include "tests/testing/temp_dir.h"

namespace geotrain::models {
namespace {

using geotrain::testing::TempDir;
using nlohmann::json;

std::string FixtureDir(const std::string& name) {
  return std::string(GEOTRAIN_SOURCE_DIR) + "/tests/golden/tokenizers/" + name;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

const Tokenizer& Uncased() {
  static const Tokenizer* tokenizer = [] {
    auto loaded = LoadTokenizerDirectory(FixtureDir("bert_uncased"));
    EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
    return loaded.ok() ? std::move(loaded).value().release() : nullptr;
  }();
  return *tokenizer;
}

void ExpectErrorContains(const Status& s, const std::vector<std::string>& wanted,
                         const std::string& label) {
  ASSERT_FALSE(s.ok()) << label;
  for (const std::string& w : wanted) {
    EXPECT_NE(s.message().find(w), std::string::npos)
        << label << ": \"" << w << "\" missing from: " << s.ToString();
  }
}

TEST(WordPieceTokenizerTest, SpecialTokensAreMatchedByEncodeOnly) {
  const Tokenizer& t = Uncased();
  const int32_t cls = *t.TokenId("[CLS]");
  const int32_t sep = *t.TokenId("[SEP]");
  const std::vector<int32_t> hello = t.EncodeOrdinary("hello");
  std::vector<int32_t> want = {cls};
  want.insert(want.end(), hello.begin(), hello.end());
  want.push_back(sep);
  EXPECT_EQ(t.Encode("[CLS]hello[SEP]"), want);
  // Typed by a user into a corpus, "[SEP]" is the words "[", "sep", "]".
  const std::vector<int32_t> ordinary = t.EncodeOrdinary("[SEP]");
  EXPECT_EQ(ordinary, t.EncodeOrdinary("[ sep ]"));
  EXPECT_EQ(ordinary.front(), *t.TokenId("["));
  EXPECT_EQ(std::count(ordinary.begin(), ordinary.end(), sep), 0);
  EXPECT_EQ(t.added_tokens().size(), 5u);
}

TEST(WordPieceTokenizerTest, ContinuationsAndUnknownWords) {
  const Tokenizer& t = Uncased();
  const int32_t unk = *t.TokenId("[UNK]");
  // A word the vocabulary cannot finish is one [UNK], also when it starts with known pieces.
  EXPECT_EQ(t.EncodeOrdinary("romeo\xE2\x98\x83"), std::vector<int32_t>{unk});
  EXPECT_EQ(t.EncodeOrdinary(std::string(101, 'a')), std::vector<int32_t>{unk});
  // Invalid UTF-8 reads as U+FFFD, which clean_text drops.
  EXPECT_EQ(t.EncodeOrdinary("ro\xFFmeo"), t.EncodeOrdinary("romeo"));
  EXPECT_EQ(*t.Decode(t.EncodeOrdinary("Romeo, Juliet!")), "romeo, juliet!");
  EXPECT_FALSE(t.Decode(std::vector<int32_t>{t.vocab_size()}).ok());
}

TEST(WordPieceTokenizerTest, FingerprintSeesNormalizationSettings) {
  // The same vocabulary with lowercasing off must not reuse the uncased token caches.
  TempDir dir;
  dir.Write("vocab.txt", ReadFile(FixtureDir("bert_uncased") + "/vocab.txt"));
  dir.Write("tokenizer_config.json", "{\"do_lower_case\": false}");
  auto cased_settings = LoadTokenizerDirectory(dir.path());
  ASSERT_TRUE(cased_settings.ok()) << cased_settings.status().ToString();
  EXPECT_NE(data::TokenizerFingerprint(Uncased()), data::TokenizerFingerprint(**cased_settings));
  EXPECT_EQ((*cased_settings)->EncodeOrdinary("Romeo"),
            std::vector<int32_t>{*Uncased().TokenId("[UNK]")});
}

TEST(WordPieceTokenizerTest, TokenizerJsonSettingsNotImplementedAreRefusedByName) {
  const json original = json::parse(ReadFile(FixtureDir("bert_uncased") + "/tokenizer.json"));
  struct Case {
    std::string label;
    std::function<void(json*)> edit;
    std::vector<std::string> wanted;
  };
  const std::vector<Case> cases = {
      {"other normalizer",
       [](json* j) {
         (*j)["normalizer"] = {{"type", "Lowercase"}};
       },
       {"normalizer.type", "\"Lowercase\" is not supported", "BertNormalizer"}},
      {"normalizer option",
       [](json* j) { (*j)["normalizer"]["extra"] = 1; },
       {"normalizer.extra", "not supported"}},
      {"normalizer flag not boolean",
       [](json* j) { (*j)["normalizer"]["lowercase"] = "yes"; },
       {"normalizer.lowercase", "expected a boolean"}},
      {"other pre-tokenizer",
       [](json* j) {
         (*j)["pre_tokenizer"] = {{"type", "Whitespace"}};
       },
       {"pre_tokenizer.type", "\"Whitespace\" is not supported"}},
      {"no pre-tokenizer",
       [](json* j) { (*j)["pre_tokenizer"] = nullptr; },
       {"pre_tokenizer: missing"}},
      {"no decoder", [](json* j) { (*j)["decoder"] = nullptr; }, {"decoder: missing"}},
      {"other decoder",
       [](json* j) {
         (*j)["decoder"] = {{"type", "ByteLevel"}};
       },
       {"decoder.type", "\"ByteLevel\" is not supported"}},
      {"other post-processor",
       [](json* j) {
         (*j)["post_processor"] = {{"type", "ByteLevel"}};
       },
       {"post_processor.type", "not supported"}},
      {"truncation",
       [](json* j) {
         (*j)["truncation"] = {{"max_length", 8}};
       },
       {"truncation", "not supported"}},
      {"unknown model option",
       [](json* j) { (*j)["model"]["dropout"] = 0.1; },
       {"model.dropout", "not supported"}},
      {"unk token not in vocabulary",
       [](json* j) { (*j)["model"]["unk_token"] = "[NOPE]"; },
       {"model.vocab", "\"[NOPE]\" is not in the vocabulary"}},
      {"max chars not a number",
       [](json* j) { (*j)["model"]["max_input_chars_per_word"] = "many"; },
       {"model.max_input_chars_per_word"}},
      {"vocab not an object",
       [](json* j) { (*j)["model"]["vocab"] = json::array(); },
       {"model.vocab"}},
      {"normalized added token",
       [](json* j) { (*j)["added_tokens"][1]["normalized"] = true; },
       {"added_tokens[1].normalized", "not supported"}},
      {"added token rstrip",
       [](json* j) { (*j)["added_tokens"][0]["rstrip"] = true; },
       {"added_tokens[0].rstrip", "not supported"}},
      {"added token id conflicts with vocabulary",
       [](json* j) { (*j)["added_tokens"][2]["id"] = 7; },
       {"added token \"[CLS]\"", "id 7", "vocabulary has it as id 2"}},
  };
  for (const Case& c : cases) {
    TempDir dir;
    json j = original;
    c.edit(&j);
    const std::string path = dir.Write("tokenizer.json", j.dump());
    std::vector<std::string> wanted = c.wanted;
    wanted.push_back(path);
    ExpectErrorContains(LoadWordPieceTokenizerJson(path).status(), wanted, c.label);
    ExpectErrorContains(LoadTokenizerDirectory(dir.path()).status(), wanted, c.label + " (dir)");
  }
  // Each loader names the model it reads.
  const std::string gpt2 = std::string(GEOTRAIN_SOURCE_DIR) + "/examples/tokenizers/gpt2";
  ExpectErrorContains(LoadWordPieceTokenizerJson(gpt2 + "/tokenizer.json").status(),
                      {"model.type", "\"BPE\"", "WordPiece"}, "BPE file");
  ExpectErrorContains(LoadTokenizerJson(FixtureDir("bert_uncased") + "/tokenizer.json").status(),
                      {"not supported"}, "WordPiece file, BPE loader");
  // The directory loader picks by model type.
  auto bpe = LoadTokenizerDirectory(gpt2);
  ASSERT_TRUE(bpe.ok()) << bpe.status().ToString();
  EXPECT_NE(dynamic_cast<const BpeTokenizer*>(bpe->get()), nullptr);
  EXPECT_NE(dynamic_cast<const WordPieceTokenizer*>(&Uncased()), nullptr);
}

TEST(WordPieceTokenizerTest, VocabTxtProblemsNameTheFileAndLine) {
  TempDir dir;
  ExpectErrorContains(LoadWordPieceVocab(dir.Write("vocab.txt", "[UNK]\na\n[UNK]\n")).status(),
                      {"vocab.txt line 3", "\"[UNK]\" is also on line 1"}, "duplicate");
  ExpectErrorContains(LoadWordPieceVocab(dir.Write("vocab.txt", "a\nb\n")).status(),
                      {"vocab.txt", "unknown token \"[UNK]\""}, "no [UNK]");
  ExpectErrorContains(LoadWordPieceVocab(dir.Write("vocab.txt", "[UNK]\n\xFF\n")).status(),
                      {"vocab.txt", "UTF-8"}, "not UTF-8");
  // Trailing white space and CRLF line ends are not part of a token.
  auto crlf = LoadWordPieceVocab(dir.Write("vocab.txt", "[UNK]\r\nhello \r\n##s\n[CLS]"));
  ASSERT_TRUE(crlf.ok()) << crlf.status().ToString();
  EXPECT_EQ((*crlf)->Encode("[CLS] Hellos"), (std::vector<int32_t>{3, 1, 2}));
  EXPECT_EQ((*crlf)->vocab_size(), 4);
  dir.Write("tokenizer_config.json", "{\"do_lower_case\": \"yes\"}");
  ExpectErrorContains(LoadTokenizerDirectory(dir.path()).status(),
                      {"tokenizer_config.json", "do_lower_case", "expected a boolean"}, "config");
  ExpectErrorContains(LoadTokenizerDirectory(dir.File("nothing")).status(),
                      {"nothing", "vocab.txt"}, "empty directory");
}

TEST(WordPieceTokenizerTest, ClassificationSetFramesWithTheVocabularysSpecialTokens) {
  const Tokenizer& t = Uncased();
  TempDir dir;
  const std::string path = dir.Write(
      "train.jsonl", "{\"text\": \"But, soft!\", \"pair\": \"What light\", \"label\": 1}\n");
  data::ClassificationOptions options;
  options.sources = {{path, 1.0}};
  options.pair_field = "pair";
  options.seq_length = 12;
  auto set = data::OpenClassificationSet(options, t);
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  const auto cls = static_cast<uint32_t>(*t.TokenId("[CLS]"));
  const auto sep = static_cast<uint32_t>(*t.TokenId("[SEP]"));
  const auto pad = static_cast<uint32_t>(*t.TokenId("[PAD]"));
  EXPECT_EQ(cls, 2u);
  EXPECT_EQ(sep, 3u);
  EXPECT_EQ(pad, 0u);
  std::vector<uint32_t> want = {cls};
  for (int32_t id : t.EncodeOrdinary("But, soft!")) want.push_back(static_cast<uint32_t>(id));
  want.push_back(sep);
  const size_t first_segment = want.size();
  for (int32_t id : t.EncodeOrdinary("What light")) want.push_back(static_cast<uint32_t>(id));
  want.push_back(sep);
  const size_t length = want.size();
  ASSERT_LE(length, 12u);
  want.resize(12, pad);
  const Span<const uint32_t> row = *(*set)->dataset().Block(data::MakeSampleId(0, 0));
  EXPECT_EQ(std::vector<uint32_t>(row.begin(), row.end()), want);
  const data::ClassificationExample example = *(*set)->Example(data::MakeSampleId(0, 0));
  EXPECT_EQ(example.length, length);
  EXPECT_EQ(example.first_segment, first_segment);
  EXPECT_EQ(example.label, 1);
}

}  // namespace
}  // namespace geotrain::models
