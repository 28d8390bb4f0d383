// StageAssignment::Problems: every wrong field once, in the struct's order, without consequences of
// a field already reported; Validate is its first problem; ProblemListStatus formats a list.
#include "runtime/stage_assignment.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace geotrain::runtime {
namespace {

StageAssignment Valid() {
  StageAssignment a;
  a.model_dir = "m";
  a.data.train = {{"a.txt", 1.0}};
  return a;
}

std::vector<std::string> Listed(const StageAssignment& a) {
  std::vector<std::string> lines;
  for (const FieldProblem& problem : a.Problems()) lines.push_back(problem.ToString());
  return lines;
}

TEST(StageAssignmentTest, ValidHasNoProblems) {
  EXPECT_TRUE(Valid().Problems().empty());
  EXPECT_TRUE(Valid().Validate().ok());
}

TEST(StageAssignmentTest, ListsEveryProblemInOrder) {
  StageAssignment a = Valid();
  a.model_dir.clear();
  a.optimizer.beta2 = 1.0;
  a.optimizer.eps = std::nan("");
  a.data.seq_length = 0;
  a.compression.forward.codec = compression::CodecId::kFixpoint;
  a.compression.forward.bits = 9;
  a.training.micro_batches = -2;
  a.training.checkpoint_every = 10;
  const std::vector<std::string> expected = {
      "model_dir: empty",
      "optimizer.beta2: 1 is outside [0, 1)",
      "optimizer.eps: nan is not positive",
      "data.seq_length: 0 is not positive",
      "compression.forward.bits: 9 is outside 2..8",
      "training.micro_batches: -2 is not positive",
      "training.checkpoint_dir: needed when checkpoint_every > 0",
  };
  EXPECT_EQ(Listed(a), expected);

  const Status first = a.Validate();
  EXPECT_EQ(first.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(first.message(), "model_dir: empty");

  // A combination names the other field it read.
  const std::vector<FieldProblem> problems = a.Problems();
  EXPECT_EQ(problems.back().field, "training.checkpoint_dir");
  EXPECT_EQ(problems.back().also_reads, std::vector<std::string>{"training.checkpoint_every"});
}

TEST(StageAssignmentTest, CodecProblemsNameTheCodecField) {
  StageAssignment a = Valid();
  a.compression.data_parallel.mode = DataParallelMode::kCocktail;
  a.compression.data_parallel.codec.codec = compression::CodecId::kCocktail;
  a.compression.data_parallel.codec.quant_bits = 1;
  a.compression.backward.codec = compression::CodecId::kTah;
  a.compression.backward.tile_size = 12;
  const std::vector<FieldProblem> problems = a.Problems();
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0].field, "compression.backward.tile_size");
  EXPECT_EQ(problems[0].reason, "12 must be a power of two in 8..1024");
  EXPECT_EQ(problems[1].field, "compression.data_parallel.codec.quant_bits");

  // The data-parallel codec only matters to the modes that use it.
  a.compression.data_parallel.mode = DataParallelMode::kAllReduce;
  EXPECT_EQ(a.Problems().size(), 1u);
}

TEST(StageAssignmentTest, SkipsChecksOfWhatIsAlreadyWrong) {
  StageAssignment a = Valid();
  a.num_stages = 0;  // stage 0 is outside [0, 0), but that is the same mistake
  a.dp_size = -1;
  a.optimizer.lr = -1;  // min_lr 0 is larger, the same mistake again
  EXPECT_EQ(Listed(a), (std::vector<std::string>{"num_stages: 0 is not positive",
                                                 "dp_size: -1 is not positive",
                                                 "optimizer.lr: -1 is negative"}));

  StageAssignment ranks = Valid();
  ranks.num_stages = 2;
  ranks.stage = 2;
  ranks.dp_rank = -1;
  EXPECT_EQ(Listed(ranks), (std::vector<std::string>{"stage: 2 is outside [0, 2)",
                                                     "dp_rank: -1 is outside [0, 1)"}));
}

TEST(StageAssignmentTest, ProblemListStatusFormatsOneOrMany) {
  EXPECT_TRUE(ProblemListStatus({}).ok());
  const Status one = ProblemListStatus({"a: bad"});
  EXPECT_EQ(one.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(one.message(), "a: bad");
  EXPECT_EQ(ProblemListStatus({"a: bad", "b: worse"}).message(),
            "2 problems:\n  a: bad\n  b: worse");
}

}  // namespace
}  // namespace geotrain::runtime
