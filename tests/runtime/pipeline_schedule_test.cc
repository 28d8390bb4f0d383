// GPipe and 1F1B schedules: exact orders for small pipelines, the epilogue rule, and the
// rendezvous simulation over every small pipeline shape.
#include "runtime/pipeline_schedule.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace geotrain::runtime {
namespace {

using Kind = PipelineOp::Kind;

// "F0 F1 B0 B1*": F/B and the micro-batch, * on epilogue ops.
std::string Render(const std::vector<PipelineOp>& ops) {
  std::string out;
  for (const PipelineOp& op : ops) {
    if (!out.empty()) out += ' ';
    out += (op.kind == Kind::kForward ? "F" : "B") + std::to_string(op.micro_batch);
    if (op.epilogue) out += '*';
  }
  return out;
}

std::vector<std::vector<PipelineOp>> AllStages(ScheduleKind kind, int num_stages, int m) {
  std::vector<std::vector<PipelineOp>> stages;
  for (int s = 0; s < num_stages; ++s)
    stages.push_back(BuildPipelineSchedule(kind, s, num_stages, m));
  return stages;
}

// Parses Render's format back, for hand-written schedules.
std::vector<PipelineOp> Ops(const std::string& text) {
  std::vector<PipelineOp> ops;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != 'F' && text[i] != 'B') continue;
    ops.push_back({text[i] == 'F' ? Kind::kForward : Kind::kBackward, text[i + 1] - '0', false});
  }
  return ops;
}

TEST(PipelineScheduleTest, OneFOneBFourStagesSixMicroBatchesIsMegatronOrder) {
  const std::vector<std::string> expected = {
      "F0 F1 F2 F3 B0 F4 B1 F5 B2* B3* B4* B5*",
      "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3* B4* B5*",
      "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4* B5*",
      "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5*",
  };
  for (int s = 0; s < 4; ++s) {
    EXPECT_EQ(Render(BuildPipelineSchedule(ScheduleKind::kOneFOneB, s, 4, 6)), expected[s])
        << "stage " << s;
  }
}

TEST(PipelineScheduleTest, OneFOneBWithFewerMicroBatchesThanWarmUpIsAllForwardsFirst) {
  EXPECT_EQ(Render(BuildPipelineSchedule(ScheduleKind::kOneFOneB, 0, 4, 2)), "F0 F1 B0* B1*");
  EXPECT_EQ(Render(BuildPipelineSchedule(ScheduleKind::kOneFOneB, 2, 4, 2)), "F0 F1 B0* B1*");
  EXPECT_EQ(Render(BuildPipelineSchedule(ScheduleKind::kOneFOneB, 3, 4, 2)), "F0 B0 F1 B1*");
  EXPECT_EQ(Render(BuildPipelineSchedule(ScheduleKind::kOneFOneB, 0, 1, 3)), "F0 B0 F1 B1 F2 B2*");
}

TEST(PipelineScheduleTest, GPipeRunsAllForwardsThenAscendingBackwardsAllInTheEpilogue) {
  for (int s = 0; s < 3; ++s) {
    EXPECT_EQ(Render(BuildPipelineSchedule(ScheduleKind::kGPipe, s, 3, 4)),
              "F0 F1 F2 F3 B0* B1* B2* B3*")
        << "stage " << s;
  }
}

TEST(PipelineScheduleTest, OutOfRangeArgumentsGiveNoOps) {
  EXPECT_TRUE(BuildPipelineSchedule(ScheduleKind::kGPipe, 2, 2, 4).empty());
  EXPECT_TRUE(BuildPipelineSchedule(ScheduleKind::kOneFOneB, -1, 2, 4).empty());
  EXPECT_TRUE(BuildPipelineSchedule(ScheduleKind::kOneFOneB, 0, 2, 0).empty());
}

TEST(PipelineScheduleTest, EveryMicroBatchOnceForwardBeforeBackwardEpilogueAfterLastForward) {
  for (ScheduleKind kind : {ScheduleKind::kGPipe, ScheduleKind::kOneFOneB}) {
    for (int num_stages = 1; num_stages <= 6; ++num_stages) {
      for (int m = 1; m <= 9; ++m) {
        for (int s = 0; s < num_stages; ++s) {
          const std::vector<PipelineOp> ops = BuildPipelineSchedule(kind, s, num_stages, m);
          SCOPED_TRACE(std::string(ScheduleKindName(kind)) + " S=" + std::to_string(num_stages) +
                       " M=" + std::to_string(m) + " stage " + std::to_string(s) + ": " +
                       Render(ops));
          ASSERT_EQ(ops.size(), 2u * m);
          std::vector<int> forward_at(m, -1), backward_at(m, -1);
          int last_forward = -1, next_backward = 0;
          for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
            const PipelineOp& op = ops[i];
            ASSERT_GE(op.micro_batch, 0);
            ASSERT_LT(op.micro_batch, m);
            if (op.kind == Kind::kForward) {
              EXPECT_EQ(forward_at[op.micro_batch], -1);
              forward_at[op.micro_batch] = last_forward = i;
            } else {
              EXPECT_EQ(op.micro_batch, next_backward++);  // ascending
              backward_at[op.micro_batch] = i;
            }
          }
          for (int i = 0; i < m; ++i) {
            EXPECT_LT(forward_at[i], backward_at[i]) << "micro-batch " << i;
          }
          for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
            EXPECT_EQ(ops[i].epilogue, ops[i].kind == Kind::kBackward && i > last_forward);
          }
        }
      }
    }
  }
}

TEST(PipelineScheduleTest, BothKindsAreDeadlockFreeForEverySmallPipeline) {
  for (ScheduleKind kind : {ScheduleKind::kGPipe, ScheduleKind::kOneFOneB}) {
    for (int num_stages = 1; num_stages <= 6; ++num_stages) {
      for (int m = 1; m <= 9; ++m) {
        const Status status = CheckPipelineSchedules(AllStages(kind, num_stages, m));
        EXPECT_TRUE(status.ok()) << ScheduleKindName(kind) << " S=" << num_stages << " M=" << m
                                 << ": " << status.ToString();
      }
    }
  }
}

TEST(PipelineScheduleTest, CheckFindsTheDeadlockOfStagesThatDisagreeOnTheKind) {
  // Stage 0 (1F1B) wants micro-batch 0's gradient before it sends activation 4; stage 1 (GPipe)
  // wants activation 4 before it runs any backward.
  std::vector<std::vector<PipelineOp>> stages = AllStages(ScheduleKind::kOneFOneB, 4, 5);
  stages[1] = BuildPipelineSchedule(ScheduleKind::kGPipe, 1, 4, 5);
  const Status status = CheckPipelineSchedules(stages);
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("stage 1 receives the activation of micro-batch 4 from stage 0"),
            std::string::npos)
      << status.message();
}

TEST(PipelineScheduleTest, CheckFindsLinksCarryingMicroBatchesInDifferentOrders) {
  // Stage 1 runs its backwards in reverse, so stage 0 would read micro-batch 1's gradient as 0's.
  const Status status = CheckPipelineSchedules({Ops("F0 F1 B0 B1"), Ops("F0 F1 B1 B0")});
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("stage 0 receives the gradient of micro-batch 0 from stage 1, "
                                  "which sends micro-batch 1"),
            std::string::npos)
      << status.message();
}

TEST(PipelineScheduleTest, CheckFindsDeadlocksAndNamesWhatEachStageWaitsFor) {
  // Stage 0 wants a gradient before it has sent the activation it belongs to.
  const Status status = CheckPipelineSchedules({Ops("B0 F0"), Ops("F0 B0")});
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("stage 0 receives the gradient of micro-batch 0 from stage 1"),
            std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find("stage 1 receives the activation of micro-batch 0 from stage 0"),
            std::string::npos)
      << status.message();
}

TEST(PipelineScheduleTest, CheckFindsAStageThatSkipsAMicroBatch) {
  const Status status =
      CheckPipelineSchedules({BuildPipelineSchedule(ScheduleKind::kGPipe, 0, 2, 2), Ops("F0 B0")});
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition) << status.ToString();
}

TEST(PipelineScheduleTest, CheckRefusesAnEmptyPipeline) {
  EXPECT_EQ(CheckPipelineSchedules({}).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace geotrain::runtime
