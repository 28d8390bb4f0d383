// SplitDigits (the Digits pre-tokenizer) on hand-written cases, and LoadTokenizerJson accepting
// Sequence[Digits, ByteLevel] and refusing its variants. No files needed beyond temporary ones.
#include "models/tokenizer/digits_splitter.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "models/tokenizer/tokenizer_loaders.h"
#include "tests/models/tiny_bpe_files.h"
#include "tests/testing/temp_dir.h"

namespace geotrain::models {
namespace {

using nlohmann::json;

std::vector<std::string> Split(std::string_view text, DigitSplitting mode) {
  std::vector<std::string_view> pieces;
  SplitDigits(text, mode, &pieces);
  std::string joined;
  std::vector<std::string> out;
  for (std::string_view piece : pieces) {
    EXPECT_FALSE(piece.empty());
    joined.append(piece);
    out.emplace_back(piece);
  }
  EXPECT_EQ(joined, text);
  return out;
}

using Pieces = std::vector<std::string>;

TEST(DigitsSplitterTest, IndividualDigits) {
  constexpr DigitSplitting kMode = DigitSplitting::kIndividual;
  EXPECT_EQ(Split("", kMode), Pieces{});
  EXPECT_EQ(Split("abc", kMode), (Pieces{"abc"}));
  EXPECT_EQ(Split("7", kMode), (Pieces{"7"}));
  EXPECT_EQ(Split("abc 123x", kMode), (Pieces{"abc ", "1", "2", "3", "x"}));
  EXPECT_EQ(Split("2024-11-22", kMode), (Pieces{"2", "0", "2", "4", "-", "1", "1", "-", "2", "2"}));
  EXPECT_EQ(Split("a1b22", kMode), (Pieces{"a", "1", "b", "2", "2"}));
  // \p{N}: Arabic-Indic (Nd), superscripts and fractions (No), Roman numerals (Nl), circled (No),
  // mathematical digits outside the BMP (Nd).
  EXPECT_EQ(Split("٣٤ ۱", kMode), (Pieces{"٣", "٤", " ", "۱"}));
  EXPECT_EQ(Split("x²³ ½", kMode), (Pieces{"x", "²", "³", " ", "½"}));
  EXPECT_EQ(Split("Ⅻ①", kMode), (Pieces{"Ⅻ", "①"}));
  EXPECT_EQ(Split("𝟙𝟚!", kMode), (Pieces{"𝟙", "𝟚", "!"}));
  // Invalid UTF-8 is not a digit and stays byte for byte in its piece.
  EXPECT_EQ(Split("\xff"
                  "1\xe2\x82",
                  kMode),
            (Pieces{"\xff", "1", "\xe2\x82"}));
}

TEST(DigitsSplitterTest, ContiguousDigits) {
  constexpr DigitSplitting kMode = DigitSplitting::kContiguous;
  EXPECT_EQ(Split("abc 123x", kMode), (Pieces{"abc ", "123", "x"}));
  EXPECT_EQ(Split("2024-11-22", kMode), (Pieces{"2024", "-", "11", "-", "22"}));
  EXPECT_EQ(Split("a1b22", kMode), (Pieces{"a", "1", "b", "22"}));
  EXPECT_EQ(Split("x²³ ½¾ 𝟙𝟚", kMode), (Pieces{"x", "²³", " ", "½¾", " ", "𝟙𝟚"}));
  EXPECT_EQ(Split("42", kMode), (Pieces{"42"}));
}

TEST(DigitsSplitterTest, NoneKeepsTheText) {
  EXPECT_EQ(Split("a 12", DigitSplitting::kNone), (Pieces{"a 12"}));
  EXPECT_EQ(Split("", DigitSplitting::kNone), Pieces{});
}

// The tiny vocabulary plus "Ġ1" (262) and "12" (263), so the three splittings encode " 12"
// differently.
json TinyWithDigitMerges(const json& pre_tokenizer) {
  json j = testing::TinyTokenizerJson();
  j["model"]["vocab"]["Ġ1"] = 262;
  j["model"]["vocab"]["12"] = 263;
  j["model"]["merges"].push_back({"Ġ", "1"});
  j["model"]["merges"].push_back({"1", "2"});
  j["pre_tokenizer"] = pre_tokenizer;
  return j;
}

json ByteLevel() {
  return {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
}

json DigitsThenByteLevel(bool individual) {
  return {
      {"type", "Sequence"},
      {"pretokenizers", {{{"type", "Digits"}, {"individual_digits", individual}}, ByteLevel()}}};
}

TEST(DigitsSplitterTest, TokenizerJsonSequenceSplitsDigitsBeforeByteLevel) {
  geotrain::testing::TempDir dir;
  struct Case {
    const char* label;
    json pre_tokenizer;
    std::vector<int32_t> ids;  // of " 12"
  };
  const std::vector<Case> cases = {
      {"ByteLevel", ByteLevel(), {262, '2'}},
      {"individual", DigitsThenByteLevel(true), {' ', '1', '2'}},
      {"contiguous", DigitsThenByteLevel(false), {' ', 263}},
  };
  for (const Case& c : cases) {
    auto tokenizer = LoadTokenizerJson(
        dir.Write(std::string(c.label) + ".json", TinyWithDigitMerges(c.pre_tokenizer).dump()));
    ASSERT_TRUE(tokenizer.ok()) << c.label << ": " << tokenizer.status().ToString();
    EXPECT_EQ((*tokenizer)->Encode(" 12"), c.ids) << c.label;
    const std::string text = "hello 12<|eot|>a1b2 \xff 99's";
    auto decoded = (*tokenizer)->Decode((*tokenizer)->Encode(text));
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    EXPECT_EQ(*decoded, text) << c.label;
  }
}

TEST(DigitsSplitterTest, TokenizerJsonRefusesOtherSequences) {
  geotrain::testing::TempDir dir;
  struct Case {
    const char* label;
    json pre_tokenizer;
    std::vector<std::string> wanted;
  };
  json prefix = DigitsThenByteLevel(true);
  prefix["pretokenizers"][1]["add_prefix_space"] = true;
  json reversed = {{"type", "Sequence"}, {"pretokenizers", {ByteLevel(), {{"type", "Digits"}}}}};
  json three = DigitsThenByteLevel(true);
  three["pretokenizers"].push_back(ByteLevel());
  json digits_flag = DigitsThenByteLevel(true);
  digits_flag["pretokenizers"][0]["individual_digits"] = "yes";
  json no_regex = DigitsThenByteLevel(false);
  no_regex["pretokenizers"][1]["use_regex"] = false;
  const std::vector<Case> cases = {
      {"prefix space", prefix, {"pre_tokenizer.pretokenizers[1].add_prefix_space", "Digits"}},
      {"reversed", reversed, {"pre_tokenizer.pretokenizers[0].type", "\"ByteLevel\""}},
      {"three", three, {"pre_tokenizer.pretokenizers", "Digits then ByteLevel"}},
      {"flag", digits_flag, {"pre_tokenizer.pretokenizers[0].individual_digits", "boolean"}},
      {"no regex", no_regex, {"pre_tokenizer.pretokenizers[1].use_regex"}},
      {"Digits alone", {{"type", "Digits"}}, {"pre_tokenizer.type", "\"Digits\""}},
  };
  for (const Case& c : cases) {
    const std::string path = dir.Write("t.json", TinyWithDigitMerges(c.pre_tokenizer).dump());
    const Status status = LoadTokenizerJson(path).status();
    ASSERT_FALSE(status.ok()) << c.label;
    for (const std::string& w : c.wanted) {
      EXPECT_NE(status.message().find(w), std::string::npos)
          << c.label << ": \"" << w << "\" missing from: " << status.ToString();
    }
  }
}

}  // namespace
}  // namespace geotrain::models
