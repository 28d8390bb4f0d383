#include "worker/step_line.h"

#include <gtest/gtest.h>

#include "runtime/step_line.h"

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
  result.eval_metrics = runtime::ClassificationMetrics{0.875, 0.8, -0.25};
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
  result.tokens = 4096;
  result.backward_relative_error = 0.02;
  result.phases = {0.5, 0.75, 0.0625, 0.03125, 0.125, 0.25, 0.375, 0.0078125, 0.015625, 2.5, 3.5};
  runtime::LinkTraffic activation;
  activation.peer_stage = 0;
  activation.peer_replica = 1;
  activation.kind = runtime::TrafficKind::kActivation;
  activation.sent = false;
  activation.raw_bytes = 1ull << 40;
  activation.wire_bytes = 3000;
  activation.seconds = 0.5;
  activation.bits = 4;
  activation.latency_seconds = 0.001;
  runtime::LinkTraffic gradient = activation;
  gradient.kind = runtime::TrafficKind::kGradient;
  gradient.sent = true;
  gradient.relative_error = 0.125;
  gradient.latency_seconds.reset();
  runtime::LinkTraffic dp = gradient;
  dp.kind = runtime::TrafficKind::kDataParallel;
  dp.peer_stage = 1;
  dp.peer_replica = 0;
  dp.bits = 0;
  runtime::LinkTraffic embedding = dp;
  embedding.kind = runtime::TrafficKind::kEmbedding;
  embedding.bits = 32;
  result.traffic = {activation, gradient, dp, embedding};
  const std::string line = runtime::StepLineText(runtime::StepLineOf(assignment, result));

  auto report = ParseStepLine(line);
  ASSERT_TRUE(report.ok()) << report.status().ToString() << "\n" << line;
  EXPECT_EQ(report->step(), 12);
  EXPECT_EQ(report->total_steps(), 100);
  ASSERT_TRUE(report->has_loss());
  EXPECT_DOUBLE_EQ(report->loss(), 3.25);
  ASSERT_TRUE(report->has_eval_loss());
  EXPECT_DOUBLE_EQ(report->eval_loss(), 3.5);
  ASSERT_TRUE(report->has_eval_scores());
  EXPECT_DOUBLE_EQ(report->eval_scores().accuracy(), 0.875);
  EXPECT_DOUBLE_EQ(report->eval_scores().f1(), 0.8);
  EXPECT_DOUBLE_EQ(report->eval_scores().mcc(), -0.25);
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
  EXPECT_EQ(report->tokens(), 4096);
  EXPECT_DOUBLE_EQ(report->backward_relative_error(), 0.02);
  const geotrain::v1::StepPhases& phases = report->phases();
  EXPECT_DOUBLE_EQ(phases.forward(), 0.5);
  EXPECT_DOUBLE_EQ(phases.backward(), 0.75);
  EXPECT_DOUBLE_EQ(phases.encode(), 0.0625);
  EXPECT_DOUBLE_EQ(phases.decode(), 0.03125);
  EXPECT_DOUBLE_EQ(phases.send(), 0.125);
  EXPECT_DOUBLE_EQ(phases.recv(), 0.25);
  EXPECT_DOUBLE_EQ(phases.sync(), 0.375);
  EXPECT_DOUBLE_EQ(phases.optimizer(), 0.0078125);
  EXPECT_DOUBLE_EQ(phases.data(), 0.015625);
  EXPECT_DOUBLE_EQ(phases.eval(), 2.5);
  EXPECT_DOUBLE_EQ(phases.checkpoint(), 3.5);
  ASSERT_EQ(report->traffic_size(), 4);
  const geotrain::v1::TrafficKind kinds[] = {
      geotrain::v1::TRAFFIC_KIND_ACTIVATION, geotrain::v1::TRAFFIC_KIND_GRADIENT,
      geotrain::v1::TRAFFIC_KIND_DATA_PARALLEL, geotrain::v1::TRAFFIC_KIND_EMBEDDING};
  for (int i = 0; i < 4; ++i) {
    const runtime::LinkTraffic& want = result.traffic[i];
    const geotrain::v1::LinkTraffic& got = report->traffic(i);
    EXPECT_EQ(got.kind(), kinds[i]) << i;
    EXPECT_EQ(got.peer_stage(), want.peer_stage) << i;
    EXPECT_EQ(got.peer_replica(), want.peer_replica) << i;
    EXPECT_EQ(got.sent(), want.sent) << i;
    EXPECT_EQ(got.raw_bytes(), want.raw_bytes) << i;
    EXPECT_EQ(got.wire_bytes(), want.wire_bytes) << i;
    EXPECT_DOUBLE_EQ(got.seconds(), want.seconds) << i;
    EXPECT_EQ(got.bits(), want.bits) << i;
    EXPECT_DOUBLE_EQ(got.relative_error(), want.relative_error) << i;
    EXPECT_EQ(got.has_latency_seconds(), want.latency_seconds.has_value()) << i;
    if (want.latency_seconds) {
      EXPECT_DOUBLE_EQ(got.latency_seconds(), *want.latency_seconds) << i;
    }
  }
  // Which task it belongs to is the caller's to say, not the line's.
  EXPECT_EQ(report->job_id(), "");
}

TEST(StepLineTest, LossIsAbsentOnStagesOtherThanTheLast) {
  runtime::StageAssignment assignment;
  assignment.num_stages = 2;
  runtime::StepResult result;  // loss NaN: not the last stage
  result.step = 1;
  auto report = ParseStepLine(runtime::StepLineText(runtime::StepLineOf(assignment, result)));
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_FALSE(report->has_loss());
  EXPECT_FALSE(report->has_eval_loss());
  EXPECT_FALSE(report->has_eval_scores());
}

TEST(StepLineTest, CarriesThePeakHostMemoryWhenTheLineHasIt) {
  runtime::StageAssignment assignment;
  runtime::StepResult result;
  result.step = 3;
  auto report = ParseStepLine(runtime::StepLineText(runtime::StepLineOf(assignment, result)));
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_FALSE(report->has_peak_host_memory_bytes());

  result.peak_host_memory_bytes = 5ull << 30;
  report = ParseStepLine(runtime::StepLineText(runtime::StepLineOf(assignment, result)));
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_TRUE(report->has_peak_host_memory_bytes());
  EXPECT_EQ(report->peak_host_memory_bytes(), 5ull << 30);
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
  const std::string kEntry =
      R"({"peer_stage": 1, "peer_replica": 0, "kind": "activation", "direction": "sent"})";
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
      {R"({"step": 1, "tokens": -4})", "tokens: -4 is negative"},
      {R"({"step": 1, "tokens": 2.5})", "tokens: expected an integer"},
      {R"({"step": 1, "backward_relative_error": "x"})",
       "backward_relative_error: expected a number, got string"},
      {R"({"step": 1, "phases": [1]})", "phases: expected an object, got array"},
      {R"({"step": 1, "phases": {"sync": "1"}})", "phases.sync: expected a number, got string"},
      {R"({"step": 1, "phases": {"forward": -0.5}})", "phases.forward: -0.5 is negative"},
      {R"({"step": 1, "traffic": {}})", "traffic: expected an array, got object"},
      {R"({"step": 1, "traffic": [7]})", "traffic[0]: expected an object, got number"},
      {R"({"step": 1, "traffic": [)" + kEntry + "," + kEntry + R"(, {"peer_stage": 0,
          "peer_replica": 0, "kind": "x", "direction": "sent"}]})",
       R"(traffic[2].kind: "x" is not one of activation, gradient, data_parallel, embedding)"},
      {R"({"step": 1, "traffic": [{"peer_stage": 0, "peer_replica": 0, "kind": 3,
          "direction": "sent"}]})",
       "traffic[0].kind: expected a string, got number"},
      {R"({"step": 1, "traffic": [{"peer_stage": 0, "peer_replica": 0, "kind": "gradient",
          "direction": "both"}]})",
       R"(traffic[0].direction: "both" is not one of sent, received)"},
      {R"({"step": 1, "traffic": [{"peer_stage": 0, "peer_replica": 0, "direction": "sent"}]})",
       "traffic[0].kind: missing"},
      {R"({"step": 1, "traffic": [{"peer_replica": 0, "kind": "gradient", "direction": "sent"}]})",
       "traffic[0].peer_stage: missing"},
      {R"({"step": 1, "traffic": [{"peer_stage": -1, "peer_replica": 0, "kind": "gradient",
          "direction": "sent"}]})",
       "traffic[0].peer_stage: -1 is negative"},
      {R"({"step": 1, "traffic": [{"peer_stage": 0, "peer_replica": 4294967296,
          "kind": "gradient", "direction": "sent"}]})",
       "traffic[0].peer_replica: 4294967296 is too large"},
      {R"({"step": 1, "traffic": [{"peer_stage": 0, "peer_replica": 0.5, "kind": "gradient",
          "direction": "sent"}]})",
       "traffic[0].peer_replica: expected a non-negative integer"},
      {R"({"step": 1, "traffic": [{"peer_stage": 0, "peer_replica": 0, "kind": "gradient",
          "direction": "sent", "raw_bytes": -1}]})",
       "traffic[0].raw_bytes: -1 is negative"},
      {R"({"step": 1, "traffic": [{"peer_stage": 0, "peer_replica": 0, "kind": "gradient",
          "direction": "sent", "bits": 4294967296}]})",
       "traffic[0].bits: 4294967296 is too large"},
      {R"({"step": 1, "traffic": [{"peer_stage": 0, "peer_replica": 0, "kind": "gradient",
          "direction": "sent", "seconds": "fast"}]})",
       "traffic[0].seconds: expected a number, got string"},
      {R"({"step": 1, "traffic": [{"peer_stage": 0, "peer_replica": 0, "kind": "gradient",
          "direction": "sent", "latency_seconds": -2}]})",
       "traffic[0].latency_seconds: -2 is negative"},
      {R"({"step": 1, "eval_accuracy": "high", "eval_f1": 1, "eval_mcc": 1})",
       "eval_accuracy: expected a number, got string"},
      {R"({"step": 1, "eval_accuracy": 1.5, "eval_f1": 1, "eval_mcc": 1})",
       "eval_accuracy: 1.500000 is outside [0, 1]"},
      {R"({"step": 1, "eval_accuracy": 1, "eval_f1": 1, "eval_mcc": -2})",
       "eval_mcc: -2.000000 is outside [-1, 1]"},
      {R"({"step": 1, "eval_accuracy": 0.5})",
       "eval_accuracy, eval_f1 and eval_mcc: some given without the others"},
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
  // A child of an older build prints no phases, tokens or traffic.
  EXPECT_FALSE(report->has_phases());
  EXPECT_EQ(report->tokens(), 0);
  EXPECT_EQ(report->traffic_size(), 0);
}

TEST(StepLineTest, TrafficEntriesNeedOnlyTheirPeerKindAndDirection) {
  auto report = ParseStepLine(
      R"({"step": 2, "phases": {"forward": 1.5, "future_phase": 9}, "traffic": [{"peer_stage": 3,
          "peer_replica": 2, "kind": "embedding", "direction": "received"}]})");
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_DOUBLE_EQ(report->phases().forward(), 1.5);
  EXPECT_EQ(report->phases().backward(), 0);
  ASSERT_EQ(report->traffic_size(), 1);
  EXPECT_EQ(report->traffic(0).kind(), geotrain::v1::TRAFFIC_KIND_EMBEDDING);
  EXPECT_EQ(report->traffic(0).peer_stage(), 3);
  EXPECT_EQ(report->traffic(0).peer_replica(), 2);
  EXPECT_FALSE(report->traffic(0).sent());
  EXPECT_EQ(report->traffic(0).wire_bytes(), 0u);
  EXPECT_FALSE(report->traffic(0).has_latency_seconds());
}

TEST(StepLineTest, GarbageInTheNewKeysNeverThrows) {
  for (const std::string line :
       {R"({"step": 1, "traffic": [null]})", R"({"step": 1, "traffic": [[], {}, "x"]})",
        R"({"step": 1, "phases": {"forward": {"nested": [1, 2]}}})",
        R"({"step": 1, "traffic": [{"peer_stage": 1e300, "peer_replica": true}]})",
        R"({"step": 1, "traffic": [{"peer_stage": 0, "peer_replica": 0,
            "kind": "\u0000\ud83d\ude00", "direction": "sent"}]})",
        R"({"step": 1, "tokens": 99999999999999999999999})"}) {
    auto report = ParseStepLine(line);
    EXPECT_FALSE(report.ok()) << line;
    EXPECT_EQ(report.status().code(), StatusCode::kInvalidArgument) << line;
  }
}

}  // namespace
}  // namespace geotrain::worker
