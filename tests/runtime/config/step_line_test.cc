// The step line's one description, both ways: what StepLineText writes ParseStepLine reads back
// as the same StepLine, every field; the bytes stay those of the lines earlier builds wrote; a
// bad value of each kind is refused naming its key. (tests/worker/step_line_test.cc checks the
// worker's StepReport of a line.)
#include "runtime/step_line.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>

namespace geotrain::runtime {
namespace {

// Every member set, to values that survive only if each key goes to its own member.
StepLine FullLine() {
  StepLine line;
  line.rank = 5;
  line.stage = 2;
  line.replica = 1;
  StepResult& r = line.result;
  r.step = 12;
  r.total_steps = 100;
  r.loss = 3.25;
  r.lr = 2.5e-4;
  r.grad_norm = 0.75;
  r.compressed = true;
  r.step_seconds = 1.5;
  r.compute_seconds = 1.0 / 3;
  r.codec_seconds = 0.25;
  r.comm_seconds = 1e20;
  r.peak_host_memory_bytes = 3ull << 30;
  r.raw_bytes = {1, 2, 3, UINT64_MAX};
  r.wire_bytes = {5, 6, 7, 8};
  r.forward_relative_error = 0.01;
  r.eval_loss = 3.5;
  r.eval_metrics = ClassificationMetrics{0.875, 0.8, -0.25};
  r.checkpointed = true;
  r.checkpoint_error = "step-12: \"disk\" full\n";
  r.phases = {0.5, 0.75, 0.0625, 0.03125, 0.125, 0.25, 0.375, 0.0078125, 0.015625, 2.5, 3.5};
  r.tokens = 4096;
  r.backward_relative_error = 0.02;
  for (int i = 0; i < 4; ++i) {
    LinkTraffic t;
    t.peer_stage = i;
    t.peer_replica = 3 - i;
    t.kind = static_cast<TrafficKind>(i);
    t.sent = i % 2 == 0;
    t.raw_bytes = (1ull << 40) + i;
    t.wire_bytes = 3000 + i;
    t.seconds = 0.5 + i;
    t.bits = 4 * i;
    t.relative_error = 0.125 * i;
    if (i != 1) t.latency_seconds = 0.001 * (i + 1);
    r.traffic.push_back(t);
  }
  return line;
}

// Doubles compare exactly: the writer prints each with enough digits to read back the same.
void ExpectSame(const StepLine& want, const StepLine& got) {
  EXPECT_EQ(got.rank, want.rank);
  EXPECT_EQ(got.stage, want.stage);
  EXPECT_EQ(got.replica, want.replica);
  EXPECT_EQ(got.has_phases, want.has_phases);
  const StepResult& w = want.result;
  const StepResult& g = got.result;
  EXPECT_EQ(g.step, w.step);
  EXPECT_EQ(g.total_steps, w.total_steps);
  if (std::isnan(w.loss)) {
    EXPECT_TRUE(std::isnan(g.loss)) << g.loss;
  } else {
    EXPECT_EQ(g.loss, w.loss);
  }
  EXPECT_EQ(g.lr, w.lr);
  EXPECT_EQ(g.grad_norm, w.grad_norm);
  EXPECT_EQ(g.compressed, w.compressed);
  EXPECT_EQ(g.step_seconds, w.step_seconds);
  EXPECT_EQ(g.compute_seconds, w.compute_seconds);
  EXPECT_EQ(g.codec_seconds, w.codec_seconds);
  EXPECT_EQ(g.comm_seconds, w.comm_seconds);
  EXPECT_EQ(g.peak_host_memory_bytes, w.peak_host_memory_bytes);
  for (const auto& [got_bytes, want_bytes] :
       {std::make_pair(g.raw_bytes, w.raw_bytes), std::make_pair(g.wire_bytes, w.wire_bytes)}) {
    EXPECT_EQ(got_bytes.forward, want_bytes.forward);
    EXPECT_EQ(got_bytes.backward, want_bytes.backward);
    EXPECT_EQ(got_bytes.dp, want_bytes.dp);
    EXPECT_EQ(got_bytes.embedding, want_bytes.embedding);
  }
  EXPECT_EQ(g.forward_relative_error, w.forward_relative_error);
  EXPECT_EQ(g.eval_loss, w.eval_loss);
  ASSERT_EQ(g.eval_metrics.has_value(), w.eval_metrics.has_value());
  if (w.eval_metrics) {
    EXPECT_EQ(g.eval_metrics->accuracy, w.eval_metrics->accuracy);
    EXPECT_EQ(g.eval_metrics->f1, w.eval_metrics->f1);
    EXPECT_EQ(g.eval_metrics->mcc, w.eval_metrics->mcc);
  }
  EXPECT_EQ(g.checkpointed, w.checkpointed);
  EXPECT_EQ(g.checkpoint_error, w.checkpoint_error);
  const StepPhases& gp = g.phases;
  const StepPhases& wp = w.phases;
  EXPECT_EQ(gp.forward, wp.forward);
  EXPECT_EQ(gp.backward, wp.backward);
  EXPECT_EQ(gp.encode, wp.encode);
  EXPECT_EQ(gp.decode, wp.decode);
  EXPECT_EQ(gp.send, wp.send);
  EXPECT_EQ(gp.recv, wp.recv);
  EXPECT_EQ(gp.sync, wp.sync);
  EXPECT_EQ(gp.optimizer, wp.optimizer);
  EXPECT_EQ(gp.data, wp.data);
  EXPECT_EQ(gp.eval, wp.eval);
  EXPECT_EQ(gp.checkpoint, wp.checkpoint);
  EXPECT_EQ(g.tokens, w.tokens);
  EXPECT_EQ(g.backward_relative_error, w.backward_relative_error);
  ASSERT_EQ(g.traffic.size(), w.traffic.size());
  for (size_t i = 0; i < w.traffic.size(); ++i) {
    SCOPED_TRACE("traffic[" + std::to_string(i) + "]");
    const LinkTraffic& gt = g.traffic[i];
    const LinkTraffic& wt = w.traffic[i];
    EXPECT_EQ(gt.peer_stage, wt.peer_stage);
    EXPECT_EQ(gt.peer_replica, wt.peer_replica);
    EXPECT_EQ(gt.kind, wt.kind);
    EXPECT_EQ(gt.sent, wt.sent);
    EXPECT_EQ(gt.raw_bytes, wt.raw_bytes);
    EXPECT_EQ(gt.wire_bytes, wt.wire_bytes);
    EXPECT_EQ(gt.seconds, wt.seconds);
    EXPECT_EQ(gt.bits, wt.bits);
    EXPECT_EQ(gt.relative_error, wt.relative_error);
    EXPECT_EQ(gt.latency_seconds, wt.latency_seconds);
  }
}

TEST(StepLineTest, WhatIsWrittenReadsBackTheSame) {
  const StepLine line = FullLine();
  const std::string text = StepLineText(line);
  StatusOr<StepLine> read = ParseStepLine(text);
  ASSERT_TRUE(read.ok()) << read.status().ToString() << "\n" << text;
  ExpectSame(line, *read);
  EXPECT_EQ(StepLineText(*read), text);
}

TEST(StepLineTest, UnsetFiguresStayUnset) {
  StepLine line;  // loss NaN (not the last stage), no evaluation, no checkpoint error, no memory
  line.result.step = 1;
  line.has_phases = false;
  const std::string text = StepLineText(line);
  for (const char* key : {"\"loss\"", "eval_", "checkpoint_error", "phases", "memory"}) {
    EXPECT_EQ(text.find(key), std::string::npos) << key << " in " << text;
  }
  StatusOr<StepLine> read = ParseStepLine(text);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ExpectSame(line, *read);
}

TEST(StepLineTest, StepLineOfNamesTheRank) {
  StageAssignment assignment;
  assignment.num_stages = 3;
  assignment.stage = 2;
  assignment.dp_size = 2;
  assignment.dp_rank = 1;
  StepResult result;
  result.step = 7;
  const StepLine line = StepLineOf(assignment, result);
  EXPECT_EQ(line.rank, 5);
  EXPECT_EQ(line.stage, 2);
  EXPECT_EQ(line.replica, 1);
  EXPECT_EQ(line.result.step, 7);
  EXPECT_TRUE(line.has_phases);
}

// The bytes earlier builds wrote (runtime::StepResultJson), which scripts and the chaos tests read.
TEST(StepLineTest, TheBytesOfEarlierBuilds) {
  StepLine line;
  line.rank = 3;
  line.stage = 1;
  line.replica = 1;
  StepResult& r = line.result;
  r.step = 2;
  r.total_steps = 4;
  r.loss = 2.5;
  r.lr = 0.001;
  r.compressed = true;
  r.step_seconds = 0.5;
  r.raw_bytes.forward = 64;
  r.wire_bytes.forward = 16;
  r.phases.forward = 0.25;
  LinkTraffic t;
  t.kind = TrafficKind::kGradient;
  t.sent = true;
  t.wire_bytes = 16;
  t.bits = 8;
  t.latency_seconds = 0.001;
  r.traffic = {t};
  EXPECT_EQ(StepLineText(line),
            R"({"backward_relative_error":0.0,"checkpointed":false,"codec_seconds":0.0,)"
            R"("comm_seconds":0.0,"compressed":true,"compute_seconds":0.0,)"
            R"("forward_relative_error":0.0,"grad_norm":0.0,"loss":2.5,"lr":0.001,)"
            R"("phases":{"backward":0.0,"checkpoint":0.0,"data":0.0,"decode":0.0,"encode":0.0,)"
            R"("eval":0.0,"forward":0.25,"optimizer":0.0,"recv":0.0,"send":0.0,"sync":0.0},)"
            R"("rank":3,"raw_bytes":{"backward":0,"dp":0,"embedding":0,"forward":64},)"
            R"("replica":1,"stage":1,"step":2,"step_seconds":0.5,"tokens":0,"total_steps":4,)"
            R"("traffic":[{"bits":8,"direction":"sent","kind":"gradient",)"
            R"("latency_seconds":0.001,"peer_replica":0,"peer_stage":0,"raw_bytes":0,)"
            R"("relative_error":0.0,"seconds":0.0,"wire_bytes":16}],)"
            R"("wire_bytes":{"backward":0,"dp":0,"embedding":0,"forward":16}})");
}

TEST(StepLineTest, LogLinesAreNotStepLines) {
  for (const std::string text : {"", "[info] loading", "{", "[1]", "{\"loss\": 2}", "{} x"}) {
    StatusOr<StepLine> read = ParseStepLine(text);
    ASSERT_FALSE(read.ok()) << text;
    EXPECT_EQ(read.status().code(), StatusCode::kNotFound) << text;
  }
}

TEST(StepLineTest, AbsentNullAndUnknownKeysKeepTheDefaults) {
  StatusOr<StepLine> read = ParseStepLine(
      R"({"step": 3, "lr": null, "eval_loss": null, "future": [1], "phases": {"future": 2}})");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->result.step, 3);
  EXPECT_EQ(read->result.lr, 0);
  EXPECT_TRUE(std::isnan(read->result.loss));
  EXPECT_FALSE(read->result.eval_loss.has_value());
  EXPECT_TRUE(read->has_phases);
  EXPECT_FALSE(ParseStepLine(R"({"step": 3})")->has_phases);
}

TEST(StepLineTest, AScoreARoundingErrorPastItsEndIsClamped) {
  StatusOr<StepLine> read =
      ParseStepLine(R"({"step": 1, "eval_accuracy": 1.0000000001, "eval_f1": -1e-12,
                        "eval_mcc": -1.0000000001})");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ASSERT_TRUE(read->result.eval_metrics.has_value());
  EXPECT_EQ(read->result.eval_metrics->accuracy, 1);
  EXPECT_EQ(read->result.eval_metrics->f1, 0);
  EXPECT_EQ(read->result.eval_metrics->mcc, -1);
}

// One case per kind of member and rule of the description.
TEST(StepLineTest, ABadValueOfEachKindIsRefusedNamingItsKey) {
  const std::string kEntry = R"("peer_stage": 0, "peer_replica": 0, "kind": "gradient")";
  const std::pair<std::string, std::string> cases[] = {
      // int: an index
      {R"({"step": 1, "stage": -1})", "stage: -1 is negative"},
      {R"({"step": 1, "rank": "0"})", "rank: expected a non-negative integer, got string"},
      {R"({"step": 1, "replica": 2147483648})", "replica: 2147483648 is too large"},
      // int64_t
      {R"({"step": "3"})", "step: expected an integer, got string"},
      {R"({"step": 1, "total_steps": 9223372036854775808})",
       "total_steps: 9223372036854775808 is too large"},
      {R"({"step": 1, "tokens": -4})", "tokens: -4 is negative"},
      // uint32_t, uint64_t
      {R"({"step": 1, "traffic": [{)" + kEntry + R"(, "direction": "sent", "bits": 4294967296}]})",
       "traffic[0].bits: 4294967296 is too large"},
      {R"({"step": 1, "raw_bytes": {"dp": -5}})", "raw_bytes.dp: -5 is negative"},
      {R"({"step": 1, "wire_bytes": {"embedding": 1.5}})",
       "wire_bytes.embedding: expected a non-negative integer, got number"},
      // double, with its rules
      {R"({"step": 1, "lr": "high"})", "lr: expected a number, got string"},
      {R"({"step": 1, "loss": true})", "loss: expected a number, got boolean"},
      {R"({"step": 1, "phases": {"send": -1}})", "phases.send: -1 is negative"},
      {R"({"step": 1, "eval_accuracy": 1, "eval_f1": 2, "eval_mcc": 0})",
       "eval_f1: 2.000000 is outside [0, 1]"},
      // std::optional
      {R"({"step": 1, "peak_host_memory_bytes": -1})", "peak_host_memory_bytes: -1 is negative"},
      {R"({"step": 1, "eval_loss": "low"})", "eval_loss: expected a number, got string"},
      {R"({"step": 1, "traffic": [{)" + kEntry + R"(, "direction": "sent",
          "latency_seconds": -0.5}]})",
       "traffic[0].latency_seconds: -0.5 is negative"},
      // bool, std::string, names
      {R"({"step": 1, "checkpointed": "yes"})", "checkpointed: expected true or false, got string"},
      {R"({"step": 1, "checkpoint_error": 5})", "checkpoint_error: expected a string, got number"},
      {R"({"step": 1, "traffic": [{)" + kEntry + R"(, "direction": "up"}]})",
       R"(traffic[0].direction: "up" is not one of sent, received)"},
      {R"({"step": 1, "traffic": [{"peer_stage": 0, "peer_replica": 0, "kind": "x",
          "direction": "sent"}]})",
       R"(traffic[0].kind: "x" is not one of activation, gradient, data_parallel, embedding)"},
      // sections and lists
      {R"({"step": 1, "wire_bytes": []})", "wire_bytes: expected an object, got array"},
      {R"({"step": 1, "phases": 3})", "phases: expected an object, got number"},
      {R"({"step": 1, "traffic": "x"})", "traffic: expected an array, got string"},
      {R"({"step": 1, "traffic": [{)" + kEntry + R"(, "direction": "sent"}, 1]})",
       "traffic[1]: expected an object, got number"},
      // required keys, keys that come together
      {R"({"step": null})", "step: expected an integer, got null"},
      {R"({"step": 1, "traffic": [{"peer_stage": 0, "kind": "gradient", "direction": "sent"}]})",
       "traffic[0].peer_replica: missing"},
      {R"({"step": 1, "traffic": [{)" + kEntry + R"(, "direction": null}]})",
       "traffic[0].direction: expected a string, got null"},
      {R"({"step": 1, "eval_accuracy": 0.5, "eval_mcc": 0.5})",
       "eval_accuracy, eval_f1 and eval_mcc: some given without the others"},
  };
  for (const auto& [text, message] : cases) {
    StatusOr<StepLine> read = ParseStepLine(text);
    ASSERT_FALSE(read.ok()) << text;
    EXPECT_EQ(read.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_EQ(read.status().message(), "step line: " + message) << text;
  }
}

}  // namespace
}  // namespace geotrain::runtime
