// The real `geotrain` binary: stdout contract of tokenize and the documented exit codes.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace {

struct CommandResult {
  int exit_code = -1;
  std::string stdout_text;
};

CommandResult RunShell(const std::string& command) {
  CommandResult result;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0)
    result.stdout_text.append(buffer, n);
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

const std::string kBinary = GEOTRAIN_BINARY;
const std::string kSource = GEOTRAIN_SOURCE_DIR;

TEST(GeotrainBinaryTest, TokenizePrintsAJsonArray) {
  const CommandResult result =
      RunShell("printf 'Hello world' | " + kBinary + " tokenize --tokenizer " + kSource +
               "/examples/tokenizers/gpt2");
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.stdout_text, "[15496,995]\n");
}

TEST(GeotrainBinaryTest, UsageErrorsExitWithTwo) {
  EXPECT_EQ(RunShell(kBinary + " tokenize 2>/dev/null </dev/null").exit_code, 2);  // no --tokenizer
  EXPECT_EQ(RunShell(kBinary + " no-such-command 2>/dev/null").exit_code, 2);
  EXPECT_EQ(RunShell(kBinary + " 2>/dev/null").exit_code, 2);
  EXPECT_EQ(RunShell(kBinary + " eval --model m --tokenizer t --data d --seq-length 8 -o xml "
                               "2>/dev/null")
                .exit_code,
            2);
}

TEST(GeotrainBinaryTest, HelpExitsWithZero) {
  EXPECT_EQ(RunShell(kBinary + " --help >/dev/null").exit_code, 0);
}

TEST(GeotrainBinaryTest, FailuresExitWithOneAndNameTheFile) {
  const CommandResult result =
      RunShell("echo x | " + kBinary + " tokenize --tokenizer /nonexistent/tok 2>&1");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.stdout_text.find("/nonexistent/tok"), std::string::npos) << result.stdout_text;
}

}  // namespace

namespace {

TEST(GeotrainBinaryTest, EvalPrintsOneJsonLine) {
  const CommandResult result =
      RunShell(kBinary + " eval --model " + kSource + "/tests/golden/models/gpt2 --tokenizer " +
               kSource + "/tests/golden/tokenizers/gpt2_bytes --data " + kSource +
               "/tests/golden/eval_text.txt --seq-length 24 -o json");
  EXPECT_EQ(result.exit_code, 0);
  // The loss itself is checked against transformers in eval_command_test.cc.
  EXPECT_EQ(result.stdout_text.rfind("{\"loss\":6.14260", 0), 0u) << result.stdout_text;
  EXPECT_NE(result.stdout_text.find(",\"tokens\":345}\n"), std::string::npos) << result.stdout_text;
}

}  // namespace
