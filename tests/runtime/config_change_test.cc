// CodecChange lines (parse, print, each bad key named), the bits helpers, and CodecChangeFile's
// polling of a file another process appends to.
#include "runtime/config_change.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/testing/temp_dir.h"

namespace geotrain::runtime {
namespace {

namespace cz = compression;

void Append(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::app);
  out << text;
}

TEST(CodecChangeLineTest, PrintsAndParsesBack) {
  CodecChange change;
  change.effective_step = 12;
  change.forward_bits = 4;
  change.backward_bits = 3;
  change.dp_bits = 2;
  change.dp_topk_ratio = 0.1;
  change.reason = "link 1 -> 2 at 6.1 MB/s: \"slow\"";
  const std::string line = CodecChangeLine(change);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  StatusOr<CodecChange> parsed = ParseCodecChangeLine(line);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->effective_step, 12);
  EXPECT_EQ(parsed->forward_bits, 4u);
  EXPECT_EQ(parsed->backward_bits, 3u);
  EXPECT_EQ(parsed->dp_bits, 2u);
  EXPECT_DOUBLE_EQ(parsed->dp_topk_ratio, 0.1);
  EXPECT_EQ(parsed->reason, change.reason);

  // Kept settings are left out of the line, and read back as 0.
  CodecChange forward_only;
  forward_only.effective_step = 0;
  forward_only.forward_bits = 8;
  EXPECT_EQ(CodecChangeLine(forward_only), R"({"effective_step":0,"forward_bits":8})");
  parsed = ParseCodecChangeLine(CodecChangeLine(forward_only));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->backward_bits, 0u);
  EXPECT_EQ(parsed->dp_topk_ratio, 0);
  EXPECT_TRUE(parsed->reason.empty());
}

TEST(CodecChangeLineTest, EveryMistakeNamesItsKey) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"effective_step": 3, "forward_bits": 9})", "forward_bits: 9 is outside 2..8"},
      {R"({"effective_step": 3, "backward_bits": 1})", "backward_bits: 1 is outside 2..8"},
      {R"({"effective_step": 3, "dp_bits": 12})", "dp_bits: 12 is outside 2..8"},
      {R"({"effective_step": 3, "forward_bits": -4})", "forward_bits: -4 is negative"},
      {R"({"effective_step": 3, "forward_bits": 4.5})", "forward_bits: expected an integer"},
      {R"({"effective_step": 3, "forward_bits": "4"})", "forward_bits: expected an integer"},
      {R"({"effective_step": 3, "dp_topk_ratio": 1.5})", "dp_topk_ratio: 1.5 is outside (0, 1]"},
      {R"({"effective_step": 3, "dp_topk_ratio": -0.1})", "dp_topk_ratio: -0.1 is outside"},
      {R"({"effective_step": 3, "dp_topk_ratio": "x"})", "dp_topk_ratio: expected a number"},
      {R"({"effective_step": -1, "forward_bits": 4})", "effective_step: -1 is negative"},
      {R"({"effective_step": 2.5, "forward_bits": 4})", "effective_step: expected an integer"},
      {R"({"forward_bits": 4})", "effective_step: missing"},
      {R"({"effective_step": 3, "forward_bits": 4, "reason": 7})", "reason: expected a string"},
      {R"({"effective_step": 3, "forward_bit": 4})", "forward_bit: unknown key"},
      {R"({"effective_step": 3})", "sets none of forward_bits"},
      {R"({"effective_step": 3, "forward_bits": 0})", "sets none of forward_bits"},
      {R"([3, 4])", "expected a JSON object, got array"},
      {R"({"effective_step": 3, )", "not a JSON value"},
  };
  for (const auto& [line, expected] : cases) {
    StatusOr<CodecChange> parsed = ParseCodecChangeLine(line);
    ASSERT_FALSE(parsed.ok()) << line;
    EXPECT_NE(parsed.status().message().find(expected), std::string::npos)
        << line << " -> " << parsed.status().message();
  }
}

TEST(CodecChangeBitsTest, PipelineCodecsTakeTheirWidth) {
  cz::CodecConfig fixpoint;
  fixpoint.codec = cz::CodecId::kFixpoint;
  fixpoint.bits = 8;
  StatusOr<cz::CodecConfig> changed = WithPipelineBits(fixpoint, 4);
  ASSERT_TRUE(changed.ok()) << changed.status().ToString();
  EXPECT_EQ(changed->bits, 4);
  EXPECT_EQ(changed->scale_mode, fixpoint.scale_mode);

  cz::CodecConfig delta;
  delta.codec = cz::CodecId::kDeltaLowBits;
  delta.bits = 4;
  delta.cache_bits = 8;
  changed = WithPipelineBits(delta, 2);
  ASSERT_TRUE(changed.ok()) << changed.status().ToString();
  EXPECT_EQ(changed->bits, 2);
  EXPECT_EQ(changed->cache_bits, 8);  // the cache's layout never changes

  // tah: high_bits = bits; low_bits stays below it but never under 2.
  cz::CodecConfig tah;
  tah.codec = cz::CodecId::kTah;
  tah.high_bits = 6;
  tah.low_bits = 4;
  changed = WithPipelineBits(tah, 3);
  ASSERT_TRUE(changed.ok()) << changed.status().ToString();
  EXPECT_EQ(changed->high_bits, 3);
  EXPECT_EQ(changed->low_bits, 2);
  changed = WithPipelineBits(tah, 8);
  ASSERT_TRUE(changed.ok()) << changed.status().ToString();
  EXPECT_EQ(changed->low_bits, 4);
  changed = WithPipelineBits(tah, 2);
  ASSERT_TRUE(changed.ok()) << changed.status().ToString();
  EXPECT_EQ(changed->high_bits, 2);
  EXPECT_EQ(changed->low_bits, 2);

  for (cz::CodecId id : {cz::CodecId::kNone, cz::CodecId::kTopK, cz::CodecId::kPowerSgd}) {
    cz::CodecConfig other;
    other.codec = id;
    StatusOr<cz::CodecConfig> refused = WithPipelineBits(other, 4);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find(std::string("codec ") + cz::CodecName(id)),
              std::string::npos)
        << refused.status().message();
  }
  EXPECT_FALSE(WithPipelineBits(fixpoint, 9).ok());
}

TEST(CodecChangeBitsTest, OnlyCocktailHasADataParallelCodecToChange) {
  DataParallelSettings cocktail;
  cocktail.mode = DataParallelMode::kCocktail;
  cocktail.codec.quant_bits = 4;
  cocktail.codec.topk_ratio = 0.2;
  cocktail.codec.random_ratio = 0.1;
  StatusOr<DataParallelSettings> changed = WithDataParallelChange(cocktail, 2, 0);
  ASSERT_TRUE(changed.ok()) << changed.status().ToString();
  EXPECT_EQ(changed->codec.quant_bits, 2);
  EXPECT_DOUBLE_EQ(changed->codec.topk_ratio, 0.2);  // 0 keeps it
  changed = WithDataParallelChange(cocktail, 0, 0.05);
  ASSERT_TRUE(changed.ok()) << changed.status().ToString();
  EXPECT_EQ(changed->codec.quant_bits, 4);
  EXPECT_DOUBLE_EQ(changed->codec.topk_ratio, 0.05);
  EXPECT_DOUBLE_EQ(changed->codec.random_ratio, 0.1);  // the shared mask never changes

  DataParallelSettings allreduce;
  StatusOr<DataParallelSettings> refused = WithDataParallelChange(allreduce, 2, 0);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("allreduce"), std::string::npos)
      << refused.status().message();
}

TEST(CodecChangeFileTest, AMissingFileHasNoChangesYet) {
  geotrain::testing::TempDir dir;
  CodecChangeFile file(dir.File("changes.jsonl"));
  StatusOr<std::vector<CodecChangeFileLine>> lines = file.Poll();
  ASSERT_TRUE(lines.ok()) << lines.status().ToString();
  EXPECT_TRUE(lines->empty());
  // Created later, it is read from its start.
  Append(dir.File("changes.jsonl"), R"({"effective_step": 2, "forward_bits": 4})"
                                    "\n");
  lines = file.Poll();
  ASSERT_TRUE(lines.ok()) << lines.status().ToString();
  ASSERT_EQ(lines->size(), 1u);
  EXPECT_EQ((*lines)[0].number, 1);
  EXPECT_EQ((*lines)[0].change.forward_bits, 4u);
}

TEST(CodecChangeFileTest, ReturnsEachCompleteLineOnceAndWaitsForAPartialOne) {
  geotrain::testing::TempDir dir;
  const std::string path = dir.File("changes.jsonl");
  Append(path, "");
  CodecChangeFile file(path);
  StatusOr<std::vector<CodecChangeFileLine>> lines = file.Poll();
  ASSERT_TRUE(lines.ok() && lines->empty());

  // Two whole lines and the start of a third.
  Append(path, R"({"effective_step": 3, "forward_bits": 4, "reason": "a"})"
               "\n"
               R"({"effective_step": 5, "dp_bits": 2})"
               "\n"
               R"({"effective_step": 7, "backw)");
  lines = file.Poll();
  ASSERT_TRUE(lines.ok()) << lines.status().ToString();
  ASSERT_EQ(lines->size(), 2u);
  EXPECT_TRUE((*lines)[0].status.ok());
  EXPECT_EQ((*lines)[0].number, 1);
  EXPECT_EQ((*lines)[0].change.effective_step, 3);
  EXPECT_EQ((*lines)[0].change.reason, "a");
  EXPECT_EQ((*lines)[1].number, 2);
  EXPECT_EQ((*lines)[1].change.dp_bits, 2u);

  // Nothing new: nothing returned; the partial line still waits.
  lines = file.Poll();
  ASSERT_TRUE(lines.ok() && lines->empty());

  // Its end arrives, with a blank line and a line without its newline yet.
  Append(path, R"(ard_bits": 3})"
               "\n\n"
               R"({"effective_step": 8, "forward_bits": 6})");
  lines = file.Poll();
  ASSERT_TRUE(lines.ok()) << lines.status().ToString();
  ASSERT_EQ(lines->size(), 1u);
  EXPECT_EQ((*lines)[0].number, 3);
  EXPECT_EQ((*lines)[0].change.effective_step, 7);
  EXPECT_EQ((*lines)[0].change.backward_bits, 3u);
  Append(path, "\n");
  lines = file.Poll();
  ASSERT_TRUE(lines.ok()) << lines.status().ToString();
  ASSERT_EQ(lines->size(), 1u);
  EXPECT_EQ((*lines)[0].number, 5);  // the blank line counts in the numbering
  EXPECT_EQ((*lines)[0].change.forward_bits, 6u);
}

TEST(CodecChangeFileTest, ABadLineIsReportedOnceAndSkipped) {
  geotrain::testing::TempDir dir;
  const std::string path = dir.File("changes.jsonl");
  Append(path, R"({"effective_step": 3, "forward_bits": 4})"
               "\n"
               R"({"effective_step": 4, "forward_bits": 9})"
               "\n"
               "not json\n"
               R"({"effective_step": 5, "backward_bits": 2})"
               "\r\n");
  CodecChangeFile file(path);
  StatusOr<std::vector<CodecChangeFileLine>> lines = file.Poll();
  ASSERT_TRUE(lines.ok()) << lines.status().ToString();
  ASSERT_EQ(lines->size(), 4u);
  EXPECT_TRUE((*lines)[0].status.ok());
  EXPECT_EQ((*lines)[1].number, 2);
  EXPECT_EQ((*lines)[1].status.message(), "forward_bits: 9 is outside 2..8");
  EXPECT_EQ((*lines)[2].number, 3);
  EXPECT_FALSE((*lines)[2].status.ok());
  EXPECT_TRUE((*lines)[3].status.ok()) << (*lines)[3].status.ToString();
  EXPECT_EQ((*lines)[3].change.backward_bits, 2u);
  lines = file.Poll();
  ASSERT_TRUE(lines.ok() && lines->empty());
}

TEST(CodecChangeFileTest, AShrunkFileIsAnErrorAndReadingGoesOnFromItsEnd) {
  geotrain::testing::TempDir dir;
  const std::string path = dir.File("changes.jsonl");
  Append(path, R"({"effective_step": 3, "forward_bits": 4})"
               "\n");
  CodecChangeFile file(path);
  ASSERT_EQ(file.Poll()->size(), 1u);
  dir.Write("changes.jsonl", "");  // truncated: not what the daemon ever does
  StatusOr<std::vector<CodecChangeFileLine>> lines = file.Poll();
  ASSERT_FALSE(lines.ok());
  EXPECT_NE(lines.status().message().find("shrank"), std::string::npos);
  Append(path, R"({"effective_step": 6, "dp_topk_ratio": 0.5})"
               "\n");
  lines = file.Poll();
  ASSERT_TRUE(lines.ok()) << lines.status().ToString();
  ASSERT_EQ(lines->size(), 1u);
  EXPECT_DOUBLE_EQ((*lines)[0].change.dp_topk_ratio, 0.5);
}

}  // namespace
}  // namespace geotrain::runtime
