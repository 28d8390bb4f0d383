// AdaptiveController: lowering to the largest bits that hide, the error floor, raising with
// hysteresis, the interval, data-parallel groups deciding as one, cocktail's top-k below
// min_bits, ignored observations, and Restore / Reannounce. Pure: steps are the only time.
#include "coordinator/adaptive_controller.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace geotrain::coordinator {
namespace {

constexpr v1::TrafficKind kForward = v1::TRAFFIC_KIND_ACTIVATION;
constexpr v1::TrafficKind kBackward = v1::TRAFFIC_KIND_GRADIENT;
constexpr v1::TrafficKind kDataParallel = v1::TRAFFIC_KIND_DATA_PARALLEL;

runtime::JobSpec Spec(const std::string& sections) {
  StatusOr<runtime::JobSpec> spec =
      runtime::ParseJobSpec("name: t\nmodel: {dir: m}\ndata: {train: [a.txt]}\n" + sections);
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  return spec.ok() ? *spec : runtime::JobSpec();
}

// Two stages, 8-bit fixpoint forward sends, changes at most every 3 steps, announced 2 ahead.
runtime::JobSpec PipelineSpec(const std::string& adaptive = "{interval_steps: 3}",
                              int forward_bits = 8) {
  return Spec(
      "pipeline: {stages: 2, micro_batches: 4}\ncompression:\n  forward: {codec: "
      "fixpoint, bits: " +
      std::to_string(forward_bits) + "}\n  adaptive: " + adaptive + "\n");
}

// The ranks' side of the protocol: each send uses the newest setting announced for it whose
// effective step has come, and its wire bytes follow the codec's size (1 MB per bit per value
// for a quantizer; cocktail: per sampled coordinate 1 bitmap bit + topk x (bits + 16/128)).
class Ranks {
 public:
  explicit Ranks(const runtime::JobSpec& spec) : controller(Created(spec)) {
    const auto& c = spec.base.compression;
    forward_bits_ =
        c.forward.codec == compression::CodecId::kTah ? c.forward.high_bits : c.forward.bits;
    dp_bits_ = c.data_parallel.codec.quant_bits;
    dp_topk_ = c.data_parallel.codec.topk_ratio;
  }

  // The (bits, topk) a rank's sends of `kind` use at `step`.
  std::pair<uint32_t, double> SettingAt(int stage, int replica, v1::TrafficKind kind,
                                        int64_t step) const {
    std::pair<uint32_t, double> setting = kind == kDataParallel
                                              ? std::pair<uint32_t, double>(dp_bits_, dp_topk_)
                                              : std::pair<uint32_t, double>(forward_bits_, 0.0);
    int64_t newest = -1;
    for (const RankChange& change : history) {
      if (change.stage != stage || change.replica != replica || change.effective_step > step ||
          change.effective_step < newest) {
        continue;
      }
      const v1::CodecOverride& o = kind == kForward    ? change.forward
                                   : kind == kBackward ? change.backward
                                                       : change.data_parallel;
      if (o.bits() == 0) continue;
      setting = {o.bits(), o.topk_ratio()};
      newest = change.effective_step;
    }
    return setting;
  }

  static double WireBytes(v1::TrafficKind kind, std::pair<uint32_t, double> setting) {
    if (kind == kDataParallel) return 1e6 * (1 + setting.second * (setting.first + 16.0 / 128));
    return 1e6 * setting.first;
  }

  // One step's observation of one rank's sends, as its report and the link estimates give it.
  // `error_at_0`: the relative error extrapolated to 0 bits (it halves per bit); 0: none
  // reported.
  SendObservation Observation(int stage, int replica, v1::TrafficKind kind, int64_t step,
                              double throughput, double compute = 1.0, double error_at_0 = 0,
                              double wire_noise = 1.0) const {
    const auto setting = SettingAt(stage, replica, kind, step);
    SendObservation o;
    o.stage = stage;
    o.replica = replica;
    o.kind = kind;
    o.step = step;
    o.wire_bytes = static_cast<uint64_t>(WireBytes(kind, setting) * wire_noise);
    o.bits = setting.first;
    o.relative_error = error_at_0 * std::ldexp(1.0, -static_cast<int>(setting.first));
    o.compute_seconds = compute;
    o.throughput_bytes_per_second = throughput;
    o.messages = 4;
    return o;
  }
  void Send(int stage, int replica, v1::TrafficKind kind, int64_t step, double throughput,
            double compute = 1.0, double error_at_0 = 0, double wire_noise = 1.0) {
    controller.Observe(
        Observation(stage, replica, kind, step, throughput, compute, error_at_0, wire_noise));
  }
  std::vector<RankChange> Decide(int64_t step) {
    std::vector<RankChange> changes = controller.Decide(step);
    history.insert(history.end(), changes.begin(), changes.end());
    return changes;
  }
  // Stage 0 replica 0's forward sends for `step`, then the decision.
  std::vector<RankChange> ForwardStep(int64_t step, double throughput, double compute = 1.0,
                                      double error_at_0 = 0) {
    Send(0, 0, kForward, step, throughput, compute, error_at_0);
    return Decide(step);
  }

  AdaptiveController controller;
  std::vector<RankChange> history;

 private:
  static AdaptiveController Created(const runtime::JobSpec& spec) {
    StatusOr<AdaptiveController> created = AdaptiveController::Create(spec);
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    if (!created.ok()) created = AdaptiveController::Create(PipelineSpec());
    return std::move(created).value();
  }

  uint32_t forward_bits_ = 8;
  uint32_t dp_bits_ = 4;
  double dp_topk_ = 0.2;
};

const v1::LinkCompression* Find(const std::vector<v1::LinkCompression>& links, int stage,
                                int replica, v1::TrafficKind kind) {
  for (const v1::LinkCompression& link : links) {
    if (link.stage() == stage && link.replica() == replica && link.kind() == kind) return &link;
  }
  return nullptr;
}

TEST(AdaptiveControllerTest, TracksTheAdjustableSendsOfTheJob) {
  const runtime::JobSpec spec = Spec(
      "pipeline: {stages: 3}\ndata_parallel: {replicas: 2, mode: cocktail, codec: {codec: "
      "cocktail}}\ncompression: {adaptive: true, forward: {codec: fixpoint, bits: 6}, "
      "backward: {codec: tah, high_bits: 5}}\n");
  StatusOr<AdaptiveController> controller = AdaptiveController::Create(spec);
  ASSERT_TRUE(controller.ok()) << controller.status().ToString();
  const std::vector<v1::LinkCompression> links = controller->Current();
  // Forward from stages 0-1, backward from stages 1-2, data-parallel on all 3; 2 replicas each.
  EXPECT_EQ(links.size(), 14u);
  ASSERT_NE(Find(links, 1, 1, kForward), nullptr);
  EXPECT_EQ(Find(links, 1, 1, kForward)->bits(), 6u);
  EXPECT_EQ(Find(links, 2, 0, kForward), nullptr);
  EXPECT_EQ(Find(links, 0, 0, kBackward), nullptr);
  ASSERT_NE(Find(links, 2, 0, kBackward), nullptr);
  EXPECT_EQ(Find(links, 2, 0, kBackward)->bits(), 5u);
  ASSERT_NE(Find(links, 2, 1, kDataParallel), nullptr);
  EXPECT_EQ(Find(links, 2, 1, kDataParallel)->bits(), 4u);
  EXPECT_EQ(Find(links, 2, 1, kDataParallel)->topk_ratio(), 0.2);
  EXPECT_EQ(Find(links, 2, 1, kDataParallel)->effective_step(), 0);
  EXPECT_EQ(Find(links, 0, 0, kForward)->topk_ratio(), 0.0);

  EXPECT_EQ(AdaptiveController::Create(Spec("pipeline: {stages: 2}\ncompression: {forward: "
                                            "{codec: fixpoint}}\n"))
                .status()
                .code(),
            StatusCode::kFailedPrecondition);
}

TEST(AdaptiveControllerTest, BandwidthDropLowersToTheLargestBitsThatHide) {
  Ranks ranks(PipelineSpec());
  // 8 MB per step at 100 MB/s: 0.08 s against 1 s of compute, and 8 bits is the top.
  for (int64_t step = 1; step <= 3; ++step) EXPECT_TRUE(ranks.ForwardStep(step, 100e6).empty());

  // 4 MB/s: b MB take b/4 s; 3 bits (0.75 s) is the largest within 0.8 x 1 s.
  const std::vector<RankChange> changes = ranks.ForwardStep(4, 4e6);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].stage, 0);
  EXPECT_EQ(changes[0].replica, 0);
  EXPECT_EQ(changes[0].effective_step, 6);
  EXPECT_EQ(changes[0].forward.bits(), 3u);
  EXPECT_EQ(changes[0].backward.bits(), 0u);
  EXPECT_EQ(changes[0].data_parallel.bits(), 0u);
  EXPECT_EQ(changes[0].reason,
            "stage 0 replica 0 forward: 4 MB/s, 2.00 s transfer vs 1.00 s compute: 8 bits -> 3 "
            "bits");

  const v1::LinkCompression* link = Find(ranks.controller.Current(), 0, 0, kForward);
  ASSERT_NE(link, nullptr);
  EXPECT_EQ(link->bits(), 3u);
  EXPECT_EQ(link->effective_step(), 6);
  EXPECT_EQ(link->changes(), 1);
  EXPECT_DOUBLE_EQ(link->transfer_seconds(), 0.75);
  EXPECT_DOUBLE_EQ(link->compute_seconds(), 1.0);
  EXPECT_EQ(link->throughput_bytes_per_second(), 4e6);
}

TEST(AdaptiveControllerTest, OneChangePerRankCarriesEveryChangedKind) {
  Ranks ranks(
      Spec("pipeline: {stages: 3}\ncompression: {adaptive: true, forward: {codec: "
           "fixpoint, bits: 8}, backward: {codec: fixpoint, bits: 8}}\n"));
  ranks.Send(1, 0, kForward, 1, 4e6);
  ranks.Send(1, 0, kBackward, 1, 2e6);
  const std::vector<RankChange> changes = ranks.Decide(1);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].stage, 1);
  EXPECT_EQ(changes[0].forward.bits(), 3u);
  EXPECT_EQ(changes[0].backward.bits(), 2u);  // 1 s at 2 MB/s: nothing hides, min_bits
  EXPECT_EQ(changes[0].data_parallel.bits(), 0u);
  EXPECT_EQ(changes[0].reason,
            "stage 1 replica 0 forward: 4 MB/s, 2.00 s transfer vs 1.00 s compute: 8 bits -> 3 "
            "bits; stage 1 replica 0 backward: 2 MB/s, 4.00 s transfer vs 1.00 s compute: 8 bits "
            "-> 2 bits");
}

TEST(AdaptiveControllerTest, LatencyCountsOncePerMessage) {
  Ranks ranks(PipelineSpec());
  SendObservation o = ranks.Observation(0, 0, kForward, 1, 4e6);
  o.latency_seconds = 0.05;  // 4 messages: 0.2 s, so b/4 + 0.2 <= 0.8 leaves 2 bits
  ranks.controller.Observe(o);
  const std::vector<RankChange> changes = ranks.Decide(1);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].forward.bits(), 2u);
}

TEST(AdaptiveControllerTest, NothingHidesMeansMinBits) {
  Ranks ranks(PipelineSpec("{min_bits: 4}"));
  const std::vector<RankChange> changes = ranks.ForwardStep(1, 1e6);  // 4 bits still take 4 s
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].forward.bits(), 4u);
}

TEST(AdaptiveControllerTest, ErrorFloorStopsAtTheBitsItAllows) {
  // Error 0.01 at 8 bits doubles per bit removed: 0.16 at 4 bits, 0.32 at 3, so a limit of 0.3
  // allows 4 bits though only 2 would hide.
  Ranks ranks(PipelineSpec("{max_relative_error: 0.3}"));
  const double error_at_0 = 0.01 * 256;
  const std::vector<RankChange> changes = ranks.ForwardStep(1, 2.5e6, 1.0, error_at_0);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].forward.bits(), 4u);
  EXPECT_NE(changes[0].reason.find("8 bits -> 4 bits (error floor)"), std::string::npos)
      << changes[0].reason;
  EXPECT_DOUBLE_EQ(Find(ranks.controller.Current(), 0, 0, kForward)->relative_error(), 0.01);

  // At the floor, still not hiding: nothing lower is allowed, so nothing changes.
  for (int64_t step = 2; step <= 12; ++step) {
    EXPECT_TRUE(ranks.ForwardStep(step, 2.5e6, 1.0, error_at_0).empty()) << step;
  }
}

TEST(AdaptiveControllerTest, IntervalStepsAndPendingChangesAreRespected) {
  Ranks ranks(PipelineSpec("{interval_steps: 3, announce_steps: 2}"));
  ASSERT_EQ(ranks.ForwardStep(4, 4e6).size(), 1u);  // 8 -> 3 from step 6
  // At 1 MB/s even 3 bits take 3 s, but the change of step 4 holds until step 4 + 3. Steps 4
  // and 5 still send 8 bits, which the reported bits tell apart from 3.
  EXPECT_TRUE(ranks.ForwardStep(5, 1e6).empty());
  EXPECT_TRUE(ranks.ForwardStep(6, 1e6).empty());
  const std::vector<RankChange> changes = ranks.ForwardStep(7, 1e6);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].forward.bits(), 2u);
  EXPECT_EQ(changes[0].effective_step, 9);
  EXPECT_NE(changes[0].reason.find("3.00 s transfer vs 1.00 s compute: 3 bits -> 2 bits"),
            std::string::npos)
      << changes[0].reason;
}

TEST(AdaptiveControllerTest, RecoveryRaisesOnlyAfterTwoConsecutiveDecisions) {
  Ranks ranks(PipelineSpec("{interval_steps: 1, announce_steps: 1}"));
  ASSERT_EQ(ranks.ForwardStep(1, 4e6).size(), 1u);  // 8 -> 3 from step 2
  // 9 MB/s: 4 bits would take 0.44 s, within 0.5 x 1 s; 5 bits (0.56 s) would not.
  EXPECT_TRUE(ranks.ForwardStep(2, 9e6).empty());
  std::vector<RankChange> changes = ranks.ForwardStep(3, 9e6);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].forward.bits(), 4u);
  EXPECT_NE(changes[0].reason.find("3 bits -> 4 bits"), std::string::npos) << changes[0].reason;

  // One good decision (11 MB/s: 5 bits 0.45 s), one bad (8 MB/s: 0.625 s), one good: no raise.
  EXPECT_TRUE(ranks.ForwardStep(4, 11e6).empty());
  EXPECT_TRUE(ranks.ForwardStep(5, 8e6).empty());
  EXPECT_TRUE(ranks.ForwardStep(6, 11e6).empty());
  changes = ranks.ForwardStep(7, 11e6);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].forward.bits(), 5u);

  // A link that came back fast: straight to max_bits in one change, and no further.
  for (int64_t step = 8; step <= 30; ++step) ranks.ForwardStep(step, 1e9);
  EXPECT_EQ(Find(ranks.controller.Current(), 0, 0, kForward)->bits(), 8u);
  EXPECT_EQ(Find(ranks.controller.Current(), 0, 0, kForward)->changes(), 4);
}

TEST(AdaptiveControllerTest, NoFlappingBetweenTheRaiseAndHideFractions) {
  Ranks ranks(PipelineSpec("{interval_steps: 1, announce_steps: 1}", 4));
  // 4 bits at 6 MB/s take 0.67 s (under 0.8), 5 bits at 12 MB/s 0.42 s (under 0.5): every other
  // decision would raise, every step's compute and bytes are off by 10%.
  for (int64_t step = 1; step <= 50; ++step) {
    const bool odd = step % 2 == 1;
    ranks.Send(0, 0, kForward, step, odd ? 6e6 : 12e6, odd ? 1.1 : 0.9, 0, odd ? 0.9 : 1.1);
    ranks.Decide(step);
  }
  EXPECT_TRUE(ranks.history.empty()) << ranks.history.front().reason;
  EXPECT_EQ(Find(ranks.controller.Current(), 0, 0, kForward)->changes(), 0);
}

TEST(AdaptiveControllerTest, DataParallelReplicasChangeTogether) {
  Ranks ranks(
      Spec("pipeline: {stages: 2}\ndata_parallel: {replicas: 3, mode: cocktail, "
           "codec: {codec: cocktail, quant_bits: 6, topk_ratio: 0.2}}\n"
           "compression: {adaptive: {interval_steps: 1}}\n"));
  // Stage 1 replica 2's group link runs at 2.5 MB/s: 1 + 0.2 (q + 1/8) MB hide within 0.8 s up
  // to q = 4; everything else is fast.
  for (int stage = 0; stage < 2; ++stage) {
    for (int replica = 0; replica < 3; ++replica) {
      ranks.Send(stage, replica, kDataParallel, 1, stage == 1 && replica == 2 ? 2.5e6 : 100e6);
    }
  }
  const std::vector<RankChange> changes = ranks.Decide(1);
  ASSERT_EQ(changes.size(), 3u);
  for (int replica = 0; replica < 3; ++replica) {
    SCOPED_TRACE(replica);
    EXPECT_EQ(changes[replica].stage, 1);
    EXPECT_EQ(changes[replica].replica, replica);
    EXPECT_EQ(changes[replica].effective_step, 3);
    EXPECT_EQ(changes[replica].data_parallel.bits(), 4u);
    EXPECT_EQ(changes[replica].data_parallel.topk_ratio(), 0.2);
    EXPECT_EQ(changes[replica].forward.bits(), 0u);
    EXPECT_EQ(changes[replica].reason,
              "stage 1 data_parallel (slowest replica 2): 2.5 MB/s, 0.89 s transfer vs 1.00 s "
              "compute: 6 bits, topk 0.2 -> 4 bits, topk 0.2");
  }
  for (const v1::LinkCompression& link : ranks.controller.Current()) {
    EXPECT_EQ(link.bits(), link.stage() == 1 ? 4u : 6u);
  }
  // A replica without a link estimate holds back its whole group.
  ranks.Send(0, 0, kDataParallel, 2, 0.5e6);
  ranks.Send(0, 1, kDataParallel, 2, 0.5e6);
  ranks.Send(0, 2, kDataParallel, 2, 0);
  EXPECT_TRUE(ranks.Decide(2).empty());
}

TEST(AdaptiveControllerTest, CocktailHalvesTopkBelowMinBitsAndRestoresItFirst) {
  Ranks ranks(
      Spec("data_parallel: {replicas: 2, mode: cocktail, codec: {codec: cocktail, "
           "quant_bits: 4, topk_ratio: 0.2}}\ncompression: {adaptive: {min_bits: 3, "
           "max_bits: 4, min_topk_ratio: 0.05, interval_steps: 1, announce_steps: 1}}\n"));
  const auto step = [&](int64_t s, double throughput) {
    ranks.Send(0, 0, kDataParallel, s, throughput);
    ranks.Send(0, 1, kDataParallel, s, throughput);
    return ranks.Decide(s);
  };
  const auto setting = [&] {
    const v1::LinkCompression* link = Find(ranks.controller.Current(), 0, 1, kDataParallel);
    return std::make_pair(link->bits(), link->topk_ratio());
  };
  using Setting = std::pair<uint32_t, double>;
  // 1.7 MB/s: even 3 bits at topk 0.2 (1.625 MB, 0.96 s) does not hide; the ladder goes on past
  // min_bits to the top-k ratio, and 0.1 (1.3125 MB, 0.77 s) hides: one decision gets there.
  ASSERT_EQ(step(1, 1.7e6).size(), 2u);
  EXPECT_EQ(setting(), Setting(3, 0.1));
  EXPECT_EQ(ranks.history.back().data_parallel.topk_ratio(), 0.1);
  EXPECT_TRUE(step(2, 1.7e6).empty());
  // 1 MB/s: nothing hides; down to min_topk_ratio, not below.
  ASSERT_EQ(step(3, 1e6).size(), 2u);
  EXPECT_EQ(setting(), Setting(3, 0.05));
  EXPECT_TRUE(step(4, 1e6).empty());
  // Fast again: the top-k ratio back to the spec's and the bits up, in one change.
  std::vector<Setting> seen;
  for (int64_t s = 5; s <= 20; ++s) {
    if (!step(s, 100e6).empty()) seen.push_back(setting());
  }
  EXPECT_EQ(seen, (std::vector<Setting>{{4, 0.2}}));
}

TEST(AdaptiveControllerTest, WarmUpObservationsAreIgnored) {
  Ranks ranks(PipelineSpec());
  for (int64_t step = 1; step <= 5; ++step) {
    SendObservation o = ranks.Observation(0, 0, kForward, step, 1e6);
    o.compressed = false;
    o.bits = 32;
    o.wire_bytes = 32000000;
    ranks.controller.Observe(o);
    EXPECT_TRUE(ranks.Decide(step).empty());
  }
  const v1::LinkCompression* link = Find(ranks.controller.Current(), 0, 0, kForward);
  EXPECT_EQ(link->transfer_seconds(), 0.0);
  EXPECT_EQ(link->throughput_bytes_per_second(), 0.0);
  // The first compressed step decides on its own numbers.
  ASSERT_EQ(ranks.ForwardStep(6, 4e6).size(), 1u);
  EXPECT_EQ(ranks.history.back().forward.bits(), 3u);
}

TEST(AdaptiveControllerTest, UnknownThroughputMeansNoDecision) {
  Ranks ranks(PipelineSpec());
  for (int64_t step = 1; step <= 10; ++step) EXPECT_TRUE(ranks.ForwardStep(step, 0).empty());
  EXPECT_EQ(Find(ranks.controller.Current(), 0, 0, kForward)->bits(), 8u);
}

TEST(AdaptiveControllerTest, TahNeverGoesBelowThreeBits) {
  Ranks ranks(
      Spec("pipeline: {stages: 2}\ncompression: {adaptive: true, forward: {codec: tah, "
           "high_bits: 6, low_bits: 4, high_ratio: 0.5}}\n"));
  // tah reports no bits; the setting comes from the announced step.
  SendObservation o = ranks.Observation(0, 0, kForward, 1, 0.1e6);
  o.bits = 0;
  ranks.controller.Observe(o);
  const std::vector<RankChange> changes = ranks.Decide(1);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].forward.bits(), 3u);
}

TEST(AdaptiveControllerTest, RestoreRoundTripsAndReannounces) {
  const runtime::JobSpec spec = Spec(
      "pipeline: {stages: 2}\ndata_parallel: {replicas: 2, mode: cocktail, codec: {codec: "
      "cocktail, quant_bits: 6}}\ncompression: {adaptive: {interval_steps: 1}, forward: {codec: "
      "fixpoint, bits: 8}}\n");
  Ranks ranks(spec);
  ranks.Send(0, 0, kForward, 4, 4e6);
  ranks.Send(1, 0, kDataParallel, 4, 2.5e6);
  ranks.Send(1, 1, kDataParallel, 4, 2.5e6);
  // Stage 0 replica 0's forward sends, and stage 1's exchange on both replicas.
  ASSERT_EQ(ranks.Decide(4).size(), 3u);
  const std::vector<v1::LinkCompression> before = ranks.controller.Current();

  StatusOr<AdaptiveController> restored = AdaptiveController::Create(spec);
  ASSERT_TRUE(restored.ok());
  ASSERT_TRUE(restored->Restore(before).ok());
  const std::vector<v1::LinkCompression> after = restored->Current();
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < after.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(after[i].stage(), before[i].stage());
    EXPECT_EQ(after[i].replica(), before[i].replica());
    EXPECT_EQ(after[i].kind(), before[i].kind());
    EXPECT_EQ(after[i].bits(), before[i].bits());
    EXPECT_EQ(after[i].topk_ratio(), before[i].topk_ratio());
    EXPECT_EQ(after[i].effective_step(), before[i].effective_step());
    EXPECT_EQ(after[i].changes(), before[i].changes());
  }
  EXPECT_EQ(Find(after, 0, 0, kForward)->bits(), 3u);
  EXPECT_EQ(Find(after, 1, 1, kDataParallel)->bits(), 4u);

  // Re-placed ranks start from the spec: what differs from it is announced again.
  const std::vector<RankChange> again = restored->Reannounce(40);
  ASSERT_EQ(again.size(), 3u);  // stage 0 replica 0 (forward), stage 1 replicas 0 and 1 (dp)
  EXPECT_EQ(again[0].stage, 0);
  EXPECT_EQ(again[0].replica, 0);
  EXPECT_EQ(again[0].forward.bits(), 3u);
  EXPECT_EQ(again[0].effective_step, 40);
  EXPECT_EQ(again[1].stage, 1);
  EXPECT_EQ(again[1].replica, 0);
  EXPECT_EQ(again[1].data_parallel.bits(), 4u);
  EXPECT_EQ(again[2].replica, 1);
  EXPECT_EQ(again[2].data_parallel.bits(), 4u);
  EXPECT_EQ(Find(restored->Current(), 0, 0, kForward)->changes(), 1);

  // Entries that are not this job's, or that a stage's replicas disagree on, restore nothing.
  std::vector<v1::LinkCompression> foreign = before;
  foreign[0].set_stage(7);
  Status status = restored->Restore(foreign);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("compression[0] (stage 7 replica 0"), std::string::npos)
      << status.message();
  std::vector<v1::LinkCompression> wide = before;
  wide[0].set_bits(9);
  EXPECT_NE(restored->Restore(wide).message().find("bits 9 is outside 2..8"), std::string::npos);
  std::vector<v1::LinkCompression> split = before;
  for (v1::LinkCompression& link : split) {
    if (link.kind() == kDataParallel && link.stage() == 1 && link.replica() == 1) {
      link.set_bits(5);
    }
  }
  EXPECT_NE(restored->Restore(split).message().find("replicas of stage 1"), std::string::npos);
  EXPECT_EQ(Find(restored->Current(), 1, 1, kDataParallel)->bits(), 4u);
}

}  // namespace
}  // namespace geotrain::coordinator
