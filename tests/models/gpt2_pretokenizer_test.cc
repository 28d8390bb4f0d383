// SplitGpt2Pretokens against pieces produced by Hugging Face tokenizers' ByteLevel pre-tokenizer.
#include "models/tokenizer/gpt2_pretokenizer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/utf8.h"
#include "models/tokenizer/unicode_classes.h"

namespace geotrain::models {
namespace {

std::vector<std::string> Split(const std::string& text) {
  std::vector<std::string_view> pieces;
  SplitGpt2Pretokens(text, &pieces);
  return std::vector<std::string>(pieces.begin(), pieces.end());
}

using Pieces = std::vector<std::string>;

TEST(Gpt2PretokenizerTest, WordsNumbersAndPunctuation) {
  EXPECT_EQ(Split("Hello world"), (Pieces{"Hello", " world"}));
  EXPECT_EQ(Split("123 4567"), (Pieces{"123", " 4567"}));
  EXPECT_EQ(Split("Hi!!! ok?"), (Pieces{"Hi", "!!!", " ok", "?"}));
  EXPECT_EQ(Split("x2"), (Pieces{"x", "2"}));
  EXPECT_EQ(Split(""), Pieces{});
}

TEST(Gpt2PretokenizerTest, Contractions) {
  EXPECT_EQ(Split("can't we'll they've I'd"),
            (Pieces{"can", "'t", " we", "'ll", " they", "'ve", " I", "'d"}));
  // Case-sensitive; a leading space or a second apostrophe makes them punctuation.
  EXPECT_EQ(Split("'S 's ''s"), (Pieces{"'", "S", " '", "s", " ''", "s"}));
}

TEST(Gpt2PretokenizerTest, WhiteSpaceRuns) {
  // The last space of a run joins the next word; a lone non-space white space stands alone.
  EXPECT_EQ(Split("a   b"), (Pieces{"a", "  ", " b"}));
  EXPECT_EQ(Split("x  \n\ny"), (Pieces{"x", "  \n", "\n", "y"}));
  EXPECT_EQ(Split("a \x1c b"), (Pieces{"a", " \x1c", " b"}));  // U+001C is not \s
  EXPECT_EQ(Split("a \xc2\x85"
                  "b"),
            (Pieces{"a", " ", "\xc2\x85", "b"}));  // U+0085 is
  EXPECT_EQ(Split("\xc2\xa0\xc2\xa0z"), (Pieces{"\xc2\xa0", "\xc2\xa0", "z"}));
  EXPECT_EQ(Split("end  "), (Pieces{"end", "  "}));
  EXPECT_EQ(Split("\t\tx"), (Pieces{"\t", "\t", "x"}));
}

TEST(Gpt2PretokenizerTest, NonAsciiClasses) {
  EXPECT_EQ(Split("caf\xc3\xa9 na\xc3\xafve"), (Pieces{"caf\xc3\xa9", " na\xc3\xafve"}));
  // A combining mark (Mn) is not a letter: it splits the word, as in the reference.
  EXPECT_EQ(Split("e\xcc\x81t"), (Pieces{"e", "\xcc\x81", "t"}));
  // U+2168 ROMAN NUMERAL NINE is a number (Nl); U+00BD is a number (No).
  EXPECT_EQ(Split("a\xe2\x85\xa8\xc2\xbd"), (Pieces{"a", "\xe2\x85\xa8\xc2\xbd"}));
  // Emoji are "other".
  EXPECT_EQ(Split("hi \xf0\x9f\x98\x80\xf0\x9f\x98\x80!"),
            (Pieces{"hi", " \xf0\x9f\x98\x80\xf0\x9f\x98\x80!"}));
}

TEST(Gpt2PretokenizerTest, InvalidUtf8BytesAreOtherCharacters) {
  EXPECT_EQ(Split("ab\xff\xfe cd"), (Pieces{"ab", "\xff\xfe", " cd"}));
  EXPECT_EQ(Split("a\xe2\x82"), (Pieces{"a", "\xe2\x82"}));  // truncated sequence
}

TEST(Gpt2PretokenizerTest, PiecesCoverTheText) {
  const std::string text =
      "  Mixed\tscripts: \xe4\xb8\xad\xe6\x96\x87 & \xd0\xa0\xd1\x83\xd1\x81 42\n\n";
  std::string joined;
  for (const std::string& piece : Split(text)) {
    EXPECT_FALSE(piece.empty());
    joined += piece;
  }
  EXPECT_EQ(joined, text);
}

TEST(UnicodeClassesTest, SpotChecks) {
  EXPECT_EQ(ClassifyCodePoint('a'), CodePointClass::kLetter);
  EXPECT_EQ(ClassifyCodePoint('7'), CodePointClass::kNumber);
  EXPECT_EQ(ClassifyCodePoint(' '), CodePointClass::kWhitespace);
  EXPECT_EQ(ClassifyCodePoint(0x3000), CodePointClass::kWhitespace);
  EXPECT_EQ(ClassifyCodePoint(0x1C), CodePointClass::kOther);
  EXPECT_EQ(ClassifyCodePoint(0x4E2D), CodePointClass::kLetter);  // CJK
  EXPECT_EQ(ClassifyCodePoint(0x1C89), CodePointClass::kLetter);  // new in Unicode 16
  EXPECT_EQ(ClassifyCodePoint(0x1F600), CodePointClass::kOther);  // emoji
  EXPECT_EQ(ClassifyCodePoint(0x0661), CodePointClass::kNumber);  // Arabic-Indic one
  EXPECT_EQ(ClassifyCodePoint(kInvalidCodePoint), CodePointClass::kOther);
}

TEST(Utf8Test, DecodesAndRejectsAsTheStandardSays) {
  EXPECT_TRUE(IsValidUtf8("plain \xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80"));
  EXPECT_FALSE(IsValidUtf8("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));      // surrogate U+D800
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\x80"));              // stray continuation
  EXPECT_FALSE(IsValidUtf8("\xe4\xb8"));          // truncated
  const DecodedCodePoint d = DecodeUtf8("\xf0\x9f\x98\x80", 0);
  EXPECT_EQ(d.code_point, 0x1F600u);
  EXPECT_EQ(d.length, 4u);
  std::string out;
  for (char32_t cp : {0x24u, 0xA2u, 0x20ACu, 0x10348u}) AppendUtf8(cp, &out);
  EXPECT_EQ(out, "$\xc2\xa2\xe2\x82\xac\xf0\x90\x8d\x88");
}

}  // namespace
}  // namespace geotrain::models
