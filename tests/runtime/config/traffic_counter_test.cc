// TrafficCounter: one cumulative count per (peer, kind, direction); a period is the difference
// of two copies, a reset source counts from zero.
#include "runtime/traffic_counter.h"

#include <gtest/gtest.h>

namespace geotrain::runtime {
namespace {

TrafficCount Bytes(uint64_t raw, uint64_t wire) {
  TrafficCount count;
  count.frames = 1;
  count.raw_bytes = raw;
  count.wire_bytes = wire;
  return count;
}

TEST(TrafficCounter, KeepsEachPeerKindAndDirectionApart) {
  const TrafficKey to_next{1, 0, TrafficKind::kActivation, true};
  const TrafficKey from_next{1, 0, TrafficKind::kGradient, false};
  const TrafficKey other_replica{1, 1, TrafficKind::kActivation, true};
  const TrafficKey received{1, 0, TrafficKind::kActivation, false};
  TrafficCounter counter;
  counter.Add(to_next, Bytes(400, 100));
  counter.Add(to_next, Bytes(400, 120));
  counter.Add(from_next, Bytes(800, 200));

  EXPECT_EQ(counter.Total(to_next).frames, 2u);
  EXPECT_EQ(counter.Total(to_next).raw_bytes, 800u);
  EXPECT_EQ(counter.Total(to_next).wire_bytes, 220u);
  EXPECT_EQ(counter.Total(from_next).wire_bytes, 200u);
  EXPECT_EQ(counter.Total(other_replica).wire_bytes, 0u);
  EXPECT_EQ(counter.Total(received).wire_bytes, 0u);
  EXPECT_EQ(counter.Total(TrafficKey::Sync(TrafficKind::kDataParallel)).frames, 0u);
}

TEST(TrafficCounter, AddsEverySecondAndError) {
  const TrafficKey key{0, 0, TrafficKind::kGradient, true};
  TrafficCount frame;
  frame.codec_seconds = 0.25;
  frame.wait_seconds = 0.5;
  frame.relative_error_sum = 0.125;
  TrafficCounter counter;
  counter.Add(key, frame);
  counter.Add(key, frame);
  EXPECT_DOUBLE_EQ(counter.Total(key).codec_seconds, 0.5);
  EXPECT_DOUBLE_EQ(counter.Total(key).wait_seconds, 1.0);
  EXPECT_DOUBLE_EQ(counter.Total(key).relative_error_sum, 0.25);
}

TEST(TrafficCounter, SinceIsWhatAKeyGainedAfterACopy) {
  const TrafficKey dp = TrafficKey::Sync(TrafficKind::kDataParallel);
  const TrafficKey pipeline{2, 0, TrafficKind::kActivation, false};
  TrafficCounter counter;
  counter.Set(dp, Bytes(1000, 250));
  const TrafficCounter start = counter;
  counter.Set(dp, Bytes(3000, 700));
  counter.Add(pipeline, Bytes(64, 16));

  const TrafficCount gained = counter.Since(start, dp);
  EXPECT_EQ(gained.raw_bytes, 2000u);
  EXPECT_EQ(gained.wire_bytes, 450u);
  EXPECT_EQ(gained.frames, 0u);
  // A key first counted after the copy gained all of it.
  EXPECT_EQ(counter.Since(start, pipeline).wire_bytes, 16u);
  // The copy itself did not move.
  EXPECT_EQ(start.Total(dp).wire_bytes, 250u);
}

TEST(TrafficCounter, SetReplacesTheTotal) {
  const TrafficKey key{0, 1, TrafficKind::kEmbedding, true};
  TrafficCounter counter;
  counter.Add(key, Bytes(10, 10));
  counter.Set(key, Bytes(5, 4));
  EXPECT_EQ(counter.Total(key).raw_bytes, 5u);
  EXPECT_EQ(counter.Total(key).wire_bytes, 4u);
}

TEST(TrafficCounter, AResetSourceCountsEverythingSinceTheReset) {
  TrafficCount before = Bytes(900, 300);
  before.frames = 5;
  before.wait_seconds = 2.0;
  TrafficCount after = Bytes(90, 30);
  after.wait_seconds = 0.5;
  const TrafficCount gained = after.Since(before);
  EXPECT_EQ(gained.raw_bytes, 90u);
  EXPECT_EQ(gained.wire_bytes, 30u);
  EXPECT_EQ(gained.frames, 1u);
  EXPECT_DOUBLE_EQ(gained.wait_seconds, 0.5);
}

}  // namespace
}  // namespace geotrain::runtime
