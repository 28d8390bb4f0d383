#include "worker/step_line.h"

#include <gtest/gtest.h>

#include "runtime/rank_runner.h"

namespace geotrain::worker {
namespace {

// The producer's own output, so that a key renamed on either side breaks this test.
TEST(StepLineTest, ReadsEveryFieldOfTheRuntimesStepLine) {
  runtime::StageAssignment assignment;
  assignment.num_stages = 2;
  assignment.stage = 1;
  assignment.dp_size = 2;
  assignment.dp_rank = 1;
  runtime::StepResult result;
  result.step = 12;
  result.total_steps = 100;
  result.loss = 3.25;
  result.eval_loss = 3.5;
  result.lr = 2.5e-4;
  result.grad_norm = 0.75;
  result.compressed = true;
  result.checkpointed = true;
  result.forward_relative_error = 0.01;
  result.step_seconds = 1.5;
  result.compute_seconds = 1.0;
  result.codec_seconds = 0.25;
  result.comm_seconds = 0.125;
  result.raw_bytes = {1, 2, 3, 4};
  result.wire_bytes = {5, 6, 7, 8};
  const std::string line = runtime::StepResultJson(assignment, result).dump();

  auto report = ParseStepLine(line);
  ASSERT_TRUE(report.ok()) << report.status().ToString() << "\n" << line;
  EXPECT_EQ(report->step(), 12);
  EXPECT_EQ(report->total_steps(), 100);
  ASSERT_TRUE(report->has_loss());
  EXPECT_DOUBLE_EQ(report->loss(), 3.25);
  ASSERT_TRUE(report->has_eval_loss());
  EXPECT_DOUBLE_EQ(report->eval_loss(), 3.5);
  EXPECT_DOUBLE_EQ(report->lr(), 2.5e-4);
  EXPECT_DOUBLE_EQ(report->grad_norm(), 0.75);
  EXPECT_TRUE(report->compressed());
  EXPECT_TRUE(report->checkpointed());
  EXPECT_DOUBLE_EQ(report->forward_relative_error(), 0.01);
  EXPECT_DOUBLE_EQ(report->step_seconds(), 1.5);
  EXPECT_DOUBLE_EQ(report->compute_seconds(), 1.0);
  EXPECT_DOUBLE_EQ(report->codec_seconds(), 0.25);
  EXPECT_DOUBLE_EQ(report->comm_seconds(), 0.125);
  EXPECT_EQ(report->raw_bytes_forward(), 1u);
  EXPECT_EQ(report->raw_bytes_backward(), 2u);
  EXPECT_EQ(report->raw_bytes_dp(), 3u);
  EXPECT_EQ(report->raw_bytes_embedding(), 4u);
  EXPECT_EQ(report->wire_bytes_forward(), 5u);
  EXPECT_EQ(report->wire_bytes_backward(), 6u);
  EXPECT_EQ(report->wire_bytes_dp(), 7u);
  EXPECT_EQ(report->wire_bytes_embedding(), 8u);
  // Which task it belongs to is the caller's to say, not the line's.
  EXPECT_EQ(report->job_id(), "");
}

TEST(StepLineTest, LossIsAbsentOnStagesOtherThanTheLast) {
  runtime::StageAssignment assignment;
  assignment.num_stages = 2;
  runtime::StepResult result;  // loss NaN: not the last stage
  result.step = 1;
  auto report = ParseStepLine(runtime::StepResultJson(assignment, result).dump());
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_FALSE(report->has_loss());
  EXPECT_FALSE(report->has_eval_loss());
}

TEST(StepLineTest, OtherLinesAreNotStepLines) {
  for (const std::string line :
       {"", "   ", "[2024-01-01 00:00:00.000] [geotrain-task] [info] loading", "{", "{\"step\": 1,",
        "[1, 2, 3]", "{\"loss\": 2.0}", "{\"stepping\": 1}", "\"step\"", "{not json}",
        "{\"step\": 1} trailing"}) {
    auto report = ParseStepLine(line);
    ASSERT_FALSE(report.ok()) << line;
    EXPECT_EQ(report.status().code(), StatusCode::kNotFound) << line;
  }
}

TEST(StepLineTest, WrongTypesAreErrorsNamingTheKey) {
  const std::pair<std::string, std::string> cases[] = {
      {R"({"step": "3"})", "step: expected an integer, got string"},
      {R"({"step": null})", "step: expected an integer, got null"},
      {R"({"step": 1.5})", "step: expected an integer"},
      {R"({"step": 1, "lr": "high"})", "lr: expected a number, got string"},
      {R"({"step": 1, "loss": [1]})", "loss: expected a number, got array"},
      {R"({"step": 1, "compressed": 1})", "compressed: expected true or false"},
      {R"({"step": 1, "raw_bytes": 5})", "raw_bytes: expected an object"},
      {R"({"step": 1, "raw_bytes": {"dp": -5}})", "raw_bytes.dp: -5 is negative"},
      {R"({"step": 1, "wire_bytes": {"forward": "x"}})",
       "wire_bytes.forward: expected a non-negative"},
      {R"({"step": 18446744073709551615})", "step: 18446744073709551615 is too large"},
  };
  for (const auto& [line, message] : cases) {
    auto report = ParseStepLine(line);
    ASSERT_FALSE(report.ok()) << line;
    EXPECT_EQ(report.status().code(), StatusCode::kInvalidArgument) << line;
    EXPECT_NE(report.status().message().find(message), std::string::npos)
        << line << " -> " << report.status().message();
  }
}

TEST(StepLineTest, MissingOptionalKeysKeepTheirDefaults) {
  auto report = ParseStepLine(R"(  {"step": 7, "loss": null, "unknown_key": {"a": 1}})");
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->step(), 7);
  EXPECT_FALSE(report->has_loss());
  EXPECT_EQ(report->lr(), 0);
  EXPECT_EQ(report->raw_bytes_dp(), 0u);
}

}  // namespace
}  // namespace geotrain::worker
