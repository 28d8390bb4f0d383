// What every step report of a real 2 stages x 2 replicas job over fake links says beyond the
// loss: seconds per phase, tokens, and the traffic per peer, kind and direction.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <map>
#include <mutex>

#include "runtime/rank_runner.h"
#include "runtime/stage_runtime.h"
#include "tests/runtime/runtime_test_job.h"

namespace geotrain::runtime {
namespace {

using testing::RunRanks;
using testing::TinyJob;

double Sum(const StepPhases& p) {
  return p.forward + p.backward + p.encode + p.decode + p.send + p.recv + p.sync + p.optimizer +
         p.data;
}

const LinkTraffic* Find(const std::vector<LinkTraffic>& traffic, int stage, int replica,
                        TrafficKind kind, bool sent) {
  for (const LinkTraffic& t : traffic) {
    if (t.peer_stage == stage && t.peer_replica == replica && t.kind == kind && t.sent == sent) {
      return &t;
    }
  }
  return nullptr;
}

class StepReportTest : public ::testing::Test {
 protected:
  // Runs the job; keeps every rank's step results by (stage, replica).
  void Train() {
    RunRanks(job_, true, [&](int, const StageAssignment& assignment, StageLinks links) {
      auto runtime = StageRuntime::Create(assignment, std::move(links));
      ASSERT_TRUE(runtime.ok()) << runtime.status().ToString();
      const Status status = (*runtime)->Run([&](const StepResult& result) {
        std::lock_guard<std::mutex> lock(mu_);
        results_[{assignment.stage, assignment.dp_rank}].push_back(result);
      });
      ASSERT_TRUE(status.ok()) << status.ToString();
    });
  }

  geotrain::testing::TempDir dir_;
  StageAssignment job_ = TinyJob(dir_, 2, 2);
  std::mutex mu_;
  std::map<std::pair<int, int>, std::vector<StepResult>> results_;
};

TEST_F(StepReportTest, PhasesTokensAndTrafficOfEveryStep) {
  job_.training.total_steps = 4;
  job_.training.eval_every = 2;
  job_.training.eval_batches = 1;
  job_.training.checkpoint_every = 3;
  job_.training.checkpoint_dir = dir_.File("checkpoints");
  job_.compression.warmup_steps = 1;
  job_.compression.forward.codec = compression::CodecId::kFixpoint;
  job_.compression.forward.bits = 4;
  job_.compression.backward.codec = compression::CodecId::kFixpoint;
  job_.compression.backward.bits = 6;
  job_.compression.data_parallel.mode = DataParallelMode::kQuantizedMomentum;
  job_.compression.data_parallel.codec.codec = compression::CodecId::kFixpoint;
  job_.compression.data_parallel.codec.bits = 8;
  Train();
  const int64_t tokens = 2 * 2 * 16;  // micro-batches x micro-batch size x sequence length

  for (const auto& [rank, steps] : results_) {
    const auto [stage, replica] = rank;
    ASSERT_EQ(steps.size(), 4u) << stage << "," << replica;
    for (const StepResult& r : steps) {
      SCOPED_TRACE("stage " + std::to_string(stage) + " replica " + std::to_string(replica) +
                   " step " + std::to_string(r.step));
      const StepPhases& p = r.phases;
      for (const double seconds : {p.forward, p.backward, p.encode, p.decode, p.send, p.recv,
                                   p.sync, p.optimizer, p.data, p.eval, p.checkpoint}) {
        EXPECT_GE(seconds, 0);
      }
      EXPECT_GT(p.forward, 0);
      EXPECT_GT(p.backward, 0);
      EXPECT_GT(p.sync, 0);
      EXPECT_GT(p.optimizer, 0);
      // Measured apart, within the step: never more than the step.
      EXPECT_LE(Sum(p), r.step_seconds + 1e-6);
      EXPECT_EQ(p.eval > 0, r.step % 2 == 0);
      EXPECT_EQ(p.checkpoint > 0, r.checkpointed);
      EXPECT_EQ(r.checkpointed, r.step == 3 || r.step == 4);
      EXPECT_EQ(r.tokens, tokens);
      // Reading batches (first stage) and labels (last stage).
      EXPECT_GT(p.data, 0);
      if (stage == 0) {
        EXPECT_GT(p.encode, 0);                   // activations
        EXPECT_GT(p.decode, 0);                   // gradients
        EXPECT_EQ(r.backward_relative_error, 0);  // nothing upstream
      } else if (r.compressed) {
        EXPECT_GT(r.backward_relative_error, 0);
      }
    }
  }

  // Stage 0 of replica 0, step by step.
  const std::vector<StepResult>& first = results_[{0, 0}];
  for (const StepResult& r : first) {
    SCOPED_TRACE("step " + std::to_string(r.step));
    const LinkTraffic* activation = Find(r.traffic, 1, 0, TrafficKind::kActivation, true);
    const LinkTraffic* gradient = Find(r.traffic, 1, 0, TrafficKind::kGradient, false);
    const LinkTraffic* dp_sent = Find(r.traffic, 0, 1, TrafficKind::kDataParallel, true);
    const LinkTraffic* dp_received = Find(r.traffic, 0, 1, TrafficKind::kDataParallel, false);
    ASSERT_TRUE(activation && gradient && dp_sent && dp_received);
    // What the pipeline links counted, plus the 8-byte frames of the gradient-norm sum (and, on
    // evaluation steps, the evaluation's activations).
    EXPECT_GE(activation->wire_bytes, r.wire_bytes.forward);
    if (r.step % 2 != 0) {
      EXPECT_LE(activation->wire_bytes, r.wire_bytes.forward + 64);
    }
    EXPECT_EQ(activation->relative_error, r.forward_relative_error);
    EXPECT_EQ(gradient->relative_error, 0);
    for (const LinkTraffic* t : {activation, gradient, dp_sent, dp_received}) {
      EXPECT_GT(t->wire_bytes, 0u);
      EXPECT_GE(t->seconds, 0);
    }
    // The gradient-norm sum's 8-byte frames are latency samples.
    ASSERT_TRUE(activation->latency_seconds.has_value());
    if (!r.compressed) {
      for (const LinkTraffic* t : {activation, gradient, dp_sent, dp_received}) {
        EXPECT_EQ(t->bits, 32u) << TrafficKindName(t->kind);
      }
      EXPECT_EQ(activation->relative_error, 0);
      continue;
    }
    EXPECT_GT(activation->relative_error, 0);
    EXPECT_EQ(activation->bits, 4u);
    EXPECT_EQ(gradient->bits, 6u);
    EXPECT_EQ(dp_sent->bits, 8u);
    EXPECT_EQ(dp_received->bits, 8u);
    for (const LinkTraffic* t : {activation, gradient, dp_sent, dp_received}) {
      EXPECT_GT(t->raw_bytes, t->wire_bytes) << TrafficKindName(t->kind);
    }
  }
  // The evaluation's float32 activations count in the step that ran it.
  const LinkTraffic* plain_step = Find(first[2].traffic, 1, 0, TrafficKind::kActivation, true);
  const LinkTraffic* eval_step = Find(first[3].traffic, 1, 0, TrafficKind::kActivation, true);
  ASSERT_TRUE(plain_step && eval_step);
  EXPECT_GT(eval_step->wire_bytes, plain_step->wire_bytes + 4 * 2 * 16 * 32 / 2);

  // The tied embedding's fused group: stage 0 of replica 0 talks to other members of it.
  bool embedding = false;
  for (const LinkTraffic& t : first.back().traffic) {
    if (t.kind != TrafficKind::kEmbedding) continue;
    embedding = true;
    EXPECT_TRUE(t.peer_stage == 0 || t.peer_stage == 1);
    EXPECT_FALSE(t.peer_stage == 0 && t.peer_replica == 0);
    EXPECT_EQ(t.raw_bytes, t.wire_bytes);  // an uncompressed all-reduce
    EXPECT_EQ(t.bits, 32u);
  }
  EXPECT_TRUE(embedding);

  // The last stage receives activations and sends gradients.
  const StepResult& last = results_[{1, 0}].back();
  const LinkTraffic* activation_in = Find(last.traffic, 0, 0, TrafficKind::kActivation, false);
  const LinkTraffic* gradient_out = Find(last.traffic, 0, 0, TrafficKind::kGradient, true);
  ASSERT_TRUE(activation_in && gradient_out);
  EXPECT_EQ(gradient_out->relative_error, last.backward_relative_error);
  EXPECT_EQ(gradient_out->bits, 6u);
  EXPECT_GE(gradient_out->wire_bytes, last.wire_bytes.backward);
}

// Step() alone (no Run()) reports its traffic too.
TEST_F(StepReportTest, StepAloneMeasuresItsTraffic) {
  job_.dp_size = 1;
  job_.training.total_steps = 2;
  RunRanks(job_, true, [&](int, const StageAssignment& assignment, StageLinks links) {
    auto runtime = StageRuntime::Create(assignment, std::move(links));
    ASSERT_TRUE(runtime.ok()) << runtime.status().ToString();
    for (int i = 0; i < 2; ++i) {
      auto result = (*runtime)->Step();
      ASSERT_TRUE(result.ok()) << result.status().ToString();
      EXPECT_FALSE(result->traffic.empty());
      EXPECT_EQ(result->phases.eval, 0);
      EXPECT_EQ(result->phases.checkpoint, 0);
      if (assignment.is_first_stage() && assignment.dp_rank == 0) {
        const LinkTraffic* activation = Find(result->traffic, 1, 0, TrafficKind::kActivation, true);
        ASSERT_NE(activation, nullptr);
        EXPECT_LE(activation->wire_bytes, result->wire_bytes.forward + 64);
        EXPECT_EQ(activation->bits, 32u);  // codec none
      }
    }
  });
}

// RunRank owns the process, so it is the one that reports how much host memory the process held.
TEST_F(StepReportTest, RunRankReportsThePeakHostMemoryOfTheProcess) {
  job_.num_stages = 1;
  job_.dp_size = 1;
  job_.training.total_steps = 2;
  RankRunOptions options;
  options.assignment = job_;
  std::vector<StepResult> steps;
  const Status status = RunRank(options, [&](const StepResult& r) { steps.push_back(r); });
  ASSERT_TRUE(status.ok()) << status.ToString();
  ASSERT_EQ(steps.size(), 2u);
  struct rusage usage {};
  ASSERT_EQ(getrusage(RUSAGE_SELF, &usage), 0);
  const uint64_t peak_now = static_cast<uint64_t>(usage.ru_maxrss) * 1024;
  uint64_t previous = 0;
  for (const StepResult& r : steps) {
    SCOPED_TRACE("step " + std::to_string(r.step));
    ASSERT_TRUE(r.peak_host_memory_bytes.has_value());
    EXPECT_GT(*r.peak_host_memory_bytes, 1u << 20);  // LibTorch alone holds more than a MiB
    EXPECT_GE(*r.peak_host_memory_bytes, previous);  // a high-water mark
    EXPECT_LE(*r.peak_host_memory_bytes, peak_now);
    previous = *r.peak_host_memory_bytes;
  }
}

}  // namespace
}  // namespace geotrain::runtime
