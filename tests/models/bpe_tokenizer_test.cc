// BpeTokenizer behaviour beyond the golden ids: byte-exact round trips on arbitrary text, added
// tokens, decode errors, options, concurrent use.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "models/tokenizer/tokenizer_loaders.h"
#include "tests/models/gpt2_tokenizer_files.h"
#include "tests/models/tiny_bpe_files.h"
#include "tests/testing/temp_dir.h"

namespace geotrain::models {
namespace {

using testing::Gpt2FromVocabMerges;

// Random text mixing scripts, emoji, digits, punctuation, white space and contractions.
std::string RandomMixedText(std::mt19937* rng) {
  static const std::vector<std::string> kChunks = {"a",
                                                   "Z",
                                                   "the",
                                                   " ",
                                                   "  ",
                                                   "\n",
                                                   "\t",
                                                   "\r\n",
                                                   "'s",
                                                   "'ll",
                                                   "'",
                                                   "7",
                                                   "42",
                                                   "!",
                                                   "?!",
                                                   ".",
                                                   "<|",
                                                   "|>",
                                                   "\xc3\xa9",
                                                   "\xc3\x9f",
                                                   "\xce\xa9",
                                                   "\xd0\x96",
                                                   "\xd7\xa9",
                                                   "\xd8\xb9",
                                                   "\xe0\xa4\xb9\xe0\xa4\xbf",
                                                   "\xe4\xb8\xad",
                                                   "\xe6\x96\x87",
                                                   "\xe3\x81\x82",
                                                   "\xed\x95\x9c",
                                                   "\xf0\x9f\x98\x80",
                                                   "\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd",
                                                   "\xe2\x80\x8d",
                                                   "\xef\xbb\xbf",
                                                   "\xcc\x81",
                                                   "\xe2\x85\xa8",
                                                   "\xc2\xa0",
                                                   "\xe3\x80\x80",
                                                   "\xf0\x9d\x94\x98",
                                                   "\x00",
                                                   "\x7f",
                                                   "\xef\xbf\xbd",
                                                   "\xe2\x82\xac"};
  std::string text;
  const int n = static_cast<int>((*rng)() % 40);
  for (int i = 0; i < n; ++i) text += kChunks[(*rng)() % kChunks.size()];
  return text;
}

TEST(BpeTokenizerTest, RoundTripsArbitraryUtf8) {
  const BpeTokenizer* gpt2 = Gpt2FromVocabMerges();
  ASSERT_NE(gpt2, nullptr);
  std::mt19937 rng(20240601);
  for (int trial = 0; trial < 2000; ++trial) {
    const std::string text = RandomMixedText(&rng);
    auto decoded = gpt2->Decode(gpt2->Encode(text));
    ASSERT_TRUE(decoded.ok());
    ASSERT_EQ(*decoded, text);
  }
}

TEST(BpeTokenizerTest, RoundTripsArbitraryBytes) {
  // Not valid UTF-8 at all: every byte still has a token, so decoding gives the bytes back.
  const BpeTokenizer* gpt2 = Gpt2FromVocabMerges();
  ASSERT_NE(gpt2, nullptr);
  std::mt19937 rng(7);
  for (int trial = 0; trial < 500; ++trial) {
    std::string bytes(rng() % 64, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    auto decoded = gpt2->Decode(gpt2->EncodeOrdinary(bytes));
    ASSERT_TRUE(decoded.ok());
    ASSERT_EQ(*decoded, bytes);
  }
}

TEST(BpeTokenizerTest, SpecialTokensAreMatchedBeforePreTokenization) {
  const BpeTokenizer* gpt2 = Gpt2FromVocabMerges();
  ASSERT_NE(gpt2, nullptr);
  const std::vector<int32_t> ids = gpt2->Encode("Hello<|endoftext|> world");
  EXPECT_EQ(ids, (std::vector<int32_t>{15496, 50256, 995}));
  // As ordinary text, the marker is its pieces and never id 50256.
  const std::vector<int32_t> plain = gpt2->EncodeOrdinary("Hello<|endoftext|> world");
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 50256), 0);
  EXPECT_EQ(*gpt2->Decode(plain), "Hello<|endoftext|> world");
  EXPECT_EQ(*gpt2->Decode(ids), "Hello<|endoftext|> world");
  ASSERT_EQ(gpt2->added_tokens().size(), 1u);
  EXPECT_TRUE(gpt2->added_tokens()[0].special);
}

TEST(BpeTokenizerTest, AddedTokensMatchLeftmostLongest) {
  auto model =
      BpeModel::Create(testing::TinyVocab().get<std::unordered_map<std::string, int32_t>>(), {}, {},
                       "vocab", [](size_t) { return std::string(); });
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto tokenizer = BpeTokenizer::Create(
      std::move(model).value(), {{"<a>", 300, true}, {"<a><b>", 301, true}, {"<b>", 302, false}},
      {}, "test");
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().ToString();
  EXPECT_EQ((*tokenizer)->Encode("x<a><b><b>"), (std::vector<int32_t>{'x', 301, 302}));
  EXPECT_EQ((*tokenizer)->Encode("<a><a>"), (std::vector<int32_t>{300, 300}));
  EXPECT_EQ((*tokenizer)->vocab_size(), 303);
  EXPECT_EQ(*(*tokenizer)->Decode(std::vector<int32_t>{301, 'h'}), "<a><b>h");
}

TEST(BpeTokenizerTest, MergesApplyByRank) {
  geotrain::testing::TempDir dir;
  const std::string vocab = dir.Write("vocab.json", testing::TinyVocab().dump());
  const std::string merges = dir.Write("merges.txt", testing::TinyMergesText());
  auto tokenizer = LoadVocabMergesTokenizer(vocab, merges, {std::vector<std::string>{"<|eot|>"}});
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().ToString();
  EXPECT_EQ((*tokenizer)->Encode("hello world<|eot|>"),
            (std::vector<int32_t>{259, 260, 'o', 'r', 'l', 'd', 261}));
  EXPECT_EQ((*tokenizer)->Encode("hellhe"), (std::vector<int32_t>{258, 256}));
}

TEST(BpeTokenizerTest, AddPrefixSpaceAndIgnoreMerges) {
  geotrain::testing::TempDir dir;
  nlohmann::json json = testing::TinyTokenizerJson();
  json["pre_tokenizer"]["add_prefix_space"] = true;
  auto prefixed = LoadTokenizerJson(dir.Write("a.json", json.dump()));
  ASSERT_TRUE(prefixed.ok()) << prefixed.status().ToString();
  EXPECT_EQ((*prefixed)->Encode("w"), (std::vector<int32_t>{260}));  // " w"
  EXPECT_EQ((*prefixed)->Encode(" w"), (std::vector<int32_t>{260}));

  // With ignore_merges a piece that is itself a token wins even where merges would not reach it.
  json = testing::TinyTokenizerJson();
  json["model"]["merges"] = nlohmann::json::array();
  json["model"]["ignore_merges"] = true;
  auto whole = LoadTokenizerJson(dir.Write("b.json", json.dump()));
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  EXPECT_EQ((*whole)->Encode("hello"), (std::vector<int32_t>{259}));
  EXPECT_EQ((*whole)->Encode("hellos"), (std::vector<int32_t>{'h', 'e', 'l', 'l', 'o', 's'}));
}

TEST(BpeTokenizerTest, DecodeRejectsUnknownIds) {
  const BpeTokenizer* gpt2 = Gpt2FromVocabMerges();
  ASSERT_NE(gpt2, nullptr);
  for (int32_t bad : {-1, 50257, 1 << 30}) {
    const Status s = gpt2->Decode(std::vector<int32_t>{15496, bad}).status();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("ids[1]"), std::string::npos) << s.ToString();
  }
}

TEST(BpeTokenizerTest, ConcurrentEncodesAgree) {
  const BpeTokenizer* gpt2 = Gpt2FromVocabMerges();
  ASSERT_NE(gpt2, nullptr);
  std::mt19937 rng(99);
  std::vector<std::string> texts;
  for (int i = 0; i < 200; ++i) texts.push_back(RandomMixedText(&rng));
  std::vector<std::vector<int32_t>> expected;
  for (const std::string& t : texts) expected.push_back(gpt2->Encode(t));
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 5; ++round) {
        for (size_t i = 0; i < texts.size(); ++i) {
          if (gpt2->Encode(texts[(i + t * 37) % texts.size()]) !=
              expected[(i + t * 37) % texts.size()]) {
            ++mismatches[t];
          }
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

}  // namespace
}  // namespace geotrain::models
