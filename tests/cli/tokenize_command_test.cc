// `geotrain tokenize` as a function: stdin text -> one JSON array of ids.
#include "cli/tokenize_command.h"

#include <gtest/gtest.h>

#include <sstream>

namespace geotrain::cli {
namespace {

const std::string kGpt2Tokenizer = std::string(GEOTRAIN_SOURCE_DIR) + "/examples/tokenizers/gpt2";

std::string Tokenize(const std::string& dir, const std::string& text, Status* status) {
  std::istringstream in(text);
  std::ostringstream out;
  *status = RunTokenize({dir}, in, out);
  return out.str();
}

TEST(TokenizeCommandTest, PrintsGpt2Ids) {
  Status status;
  EXPECT_EQ(Tokenize(kGpt2Tokenizer, "Hello world", &status), "[15496,995]\n");
  EXPECT_TRUE(status.ok()) << status.ToString();
}

TEST(TokenizeCommandTest, AddedTokensInTheTextBecomeTheirIds) {
  Status status;
  EXPECT_EQ(Tokenize(kGpt2Tokenizer, "<|endoftext|>", &status), "[50256]\n");
  EXPECT_TRUE(status.ok()) << status.ToString();
}

TEST(TokenizeCommandTest, EmptyInputIsAnEmptyArray) {
  Status status;
  EXPECT_EQ(Tokenize(kGpt2Tokenizer, "", &status), "[]\n");
  EXPECT_TRUE(status.ok()) << status.ToString();
}

TEST(TokenizeCommandTest, MissingTokenizerNamesTheDirectory) {
  Status status;
  EXPECT_EQ(Tokenize("/nonexistent/tokenizer", "x", &status), "");
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("/nonexistent/tokenizer"), std::string::npos)
      << status.ToString();
}

}  // namespace
}  // namespace geotrain::cli
