// LinkTable: passive samples mapped to directed links, probes and passive samples in one
// estimate, the matrix of live workers, and the table surviving the state store.
#include "coordinator/link_table.h"

#include <gtest/gtest.h>

#include "coordinator/state_store.h"
#include "tests/coordinator/coordinator_test_support.h"

namespace geotrain::coordinator {
namespace {

using testing::TempDir;

constexpr int64_t kNow = 1'700'000'000'000;
constexpr uint64_t kMiB = 1 << 20;

// Placements of a 2-stage x 2-replica job: rank (stage, replica) on w-<1 + replica*2 + stage>.
google::protobuf::RepeatedPtrField<v1::Placement> Placements() {
  google::protobuf::RepeatedPtrField<v1::Placement> placements;
  for (int replica = 0; replica < 2; ++replica) {
    for (int stage = 0; stage < 2; ++stage) {
      v1::Placement* p = placements.Add();
      p->set_stage(stage);
      p->set_replica(replica);
      p->set_worker_id("w-" + std::to_string(1 + replica * 2 + stage));
    }
  }
  return placements;
}

v1::LinkTraffic* AddTraffic(v1::StepReport& report, int peer_stage, int peer_replica, bool sent,
                            uint64_t wire_bytes, double seconds) {
  v1::LinkTraffic* traffic = report.add_traffic();
  traffic->set_peer_stage(peer_stage);
  traffic->set_peer_replica(peer_replica);
  traffic->set_kind(v1::TRAFFIC_KIND_ACTIVATION);
  traffic->set_sent(sent);
  traffic->set_wire_bytes(wire_bytes);
  traffic->set_raw_bytes(wire_bytes * 4);
  traffic->set_seconds(seconds);
  return traffic;
}

v1::ProbeResult Probe(const std::string& dst, double throughput, double latency,
                      const std::string& error = "") {
  v1::ProbeResult result;
  result.set_dst_worker_id(dst);
  result.set_throughput_bytes_per_second(throughput);
  result.set_latency_seconds(latency);
  result.set_bytes(8 * kMiB);
  result.set_seconds(1);
  result.set_error(error);
  return result;
}

v1::Worker Worker(const std::string& id, const std::string& region) {
  v1::Worker worker;
  worker.set_id(id);
  worker.mutable_capabilities()->set_region(region);
  return worker;
}

TEST(PassiveLinkSamplesTest, SentAndReceivedTrafficGiveTheTwoDirections) {
  // Stage 0, replica 0 (w-1): sends activations to stage 1 (w-2), receives its gradients, and
  // syncs with replica 1 (w-3) both ways.
  v1::StepReport report;
  AddTraffic(report, 1, 0, /*sent=*/true, 4 * kMiB, 0.5);
  AddTraffic(report, 1, 0, /*sent=*/false, 2 * kMiB, 0.25)->set_latency_seconds(0.02);
  AddTraffic(report, 0, 1, /*sent=*/true, kMiB, 0.1);
  v1::LinkTraffic* dp_in = AddTraffic(report, 0, 1, /*sent=*/false, kMiB, 0.1);
  dp_in->set_kind(v1::TRAFFIC_KIND_DATA_PARALLEL);
  // The same link in the same direction, another kind: one sample of both.
  AddTraffic(report, 0, 1, /*sent=*/false, kMiB, 0.3)->set_kind(v1::TRAFFIC_KIND_EMBEDDING);
  AddTraffic(report, 1, 5, /*sent=*/true, kMiB, 0.1);  // no such rank: skipped
  AddTraffic(report, 0, 0, /*sent=*/true, kMiB, 0.1);  // itself: skipped

  const std::vector<PassiveLinkSample> samples = PassiveLinkSamples(report, "w-1", Placements());
  ASSERT_EQ(samples.size(), 4u);
  std::map<std::pair<std::string, std::string>, PassiveLinkSample> by_link;
  for (const PassiveLinkSample& s : samples) by_link[{s.src_worker_id, s.dst_worker_id}] = s;
  const auto link = [&](const std::string& src, const std::string& dst) {
    return by_link[std::make_pair(src, dst)];
  };
  const auto has = [&](const std::string& src, const std::string& dst) {
    return by_link.count(std::make_pair(src, dst)) == 1;
  };
  ASSERT_TRUE(has("w-1", "w-2"));
  EXPECT_EQ(link("w-1", "w-2").wire_bytes, 4 * kMiB);
  EXPECT_DOUBLE_EQ(link("w-1", "w-2").seconds, 0.5);
  EXPECT_FALSE(link("w-1", "w-2").latency_seconds.has_value());
  ASSERT_TRUE(has("w-2", "w-1"));
  EXPECT_EQ(link("w-2", "w-1").wire_bytes, 2 * kMiB);
  ASSERT_TRUE(link("w-2", "w-1").latency_seconds.has_value());
  EXPECT_DOUBLE_EQ(*link("w-2", "w-1").latency_seconds, 0.02);
  ASSERT_TRUE(has("w-3", "w-1"));
  EXPECT_EQ(link("w-3", "w-1").wire_bytes, 2 * kMiB);
  EXPECT_DOUBLE_EQ(link("w-3", "w-1").seconds, 0.4);
  EXPECT_TRUE(has("w-1", "w-3"));

  LinkTable table;
  for (const PassiveLinkSample& s : samples) table.AddPassive(s, kNow);
  const std::optional<LinkFigures> out = table.Lookup("w-1", "w-2");
  ASSERT_TRUE(out.has_value());
  EXPECT_DOUBLE_EQ(out->throughput_bytes_per_second, 8.0 * kMiB);
  EXPECT_EQ(out->samples, 1u);
  EXPECT_EQ(out->probe_samples, 0u);
  EXPECT_EQ(out->updated_unix_ms, kNow);
  const std::optional<LinkFigures> back = table.Lookup("w-2", "w-1");
  ASSERT_TRUE(back.has_value());
  EXPECT_DOUBLE_EQ(back->throughput_bytes_per_second, 8.0 * kMiB);
  EXPECT_DOUBLE_EQ(back->latency_seconds, 0.02);
  EXPECT_DOUBLE_EQ(table.Lookup("w-3", "w-1")->throughput_bytes_per_second, 5.0 * kMiB);
  EXPECT_FALSE(table.Lookup("w-2", "w-3").has_value());
}

TEST(LinkTableTest, TinyTransfersGiveNoThroughputButStillLatency) {
  LinkTable table;
  PassiveLinkSample tiny{"w-1", "w-2", kMinPassiveSampleBytes - 1, 0.001, std::nullopt};
  EXPECT_FALSE(table.AddPassive(tiny, kNow));
  EXPECT_FALSE(table.Lookup("w-1", "w-2").has_value());
  PassiveLinkSample no_time{"w-1", "w-2", 4 * kMiB, 0, std::nullopt};
  EXPECT_FALSE(table.AddPassive(no_time, kNow));

  tiny.latency_seconds = 0.015;
  EXPECT_TRUE(table.AddPassive(tiny, kNow));
  const std::optional<LinkFigures> figures = table.Lookup("w-1", "w-2");
  ASSERT_TRUE(figures.has_value());
  EXPECT_EQ(figures->samples, 0u);
  EXPECT_EQ(figures->throughput_bytes_per_second, 0.0);
  EXPECT_DOUBLE_EQ(figures->latency_seconds, 0.015);
  EXPECT_EQ(figures->latency_samples, 1u);
}

TEST(LinkTableTest, ProbesAndPassiveSamplesFeedOneEstimate) {
  LinkTable table;
  ASSERT_TRUE(table.AddProbe("w-1", Probe("w-2", 100e6, 0.010), kNow));
  LinkFigures figures = *table.Lookup("w-1", "w-2");
  // The first sample is returned exactly (bias correction).
  EXPECT_DOUBLE_EQ(figures.throughput_bytes_per_second, 100e6);
  EXPECT_DOUBLE_EQ(figures.latency_seconds, 0.010);
  EXPECT_EQ(figures.samples, 1u);
  EXPECT_EQ(figures.probe_samples, 1u);
  EXPECT_DOUBLE_EQ(figures.probe_throughput_bytes_per_second, 100e6);
  EXPECT_EQ(figures.probed_unix_ms, kNow);

  // A step moved 50 MB in one second: the estimate lies between the two, as one EWMA of both
  // ((b x 100 + 50) / (1 + b), b = LinkTable::kDecay).
  ASSERT_TRUE(table.AddPassive({"w-1", "w-2", 50'000'000, 1.0, 0.020}, kNow + 1000));
  figures = *table.Lookup("w-1", "w-2");
  EXPECT_NEAR(figures.throughput_bytes_per_second,
              (LinkTable::kDecay * 100e6 + 50e6) / (1 + LinkTable::kDecay), 1e-3);
  EXPECT_NEAR(figures.latency_seconds,
              (LinkTable::kDecay * 0.010 + 0.020) / (1 + LinkTable::kDecay), 1e-12);
  EXPECT_EQ(figures.samples, 2u);
  EXPECT_EQ(figures.probe_samples, 1u);
  EXPECT_EQ(figures.passive_samples(), 1u);
  EXPECT_EQ(figures.updated_unix_ms, kNow + 1000);
  EXPECT_EQ(figures.probed_unix_ms, kNow);  // the newest probe's, untouched by passive ones
  EXPECT_DOUBLE_EQ(figures.probe_throughput_bytes_per_second, 100e6);

  // A failed probe only counts.
  ASSERT_TRUE(table.AddProbe("w-1", Probe("w-2", 0, 0, "connection refused"), kNow + 2000));
  const LinkFigures failed = *table.Lookup("w-1", "w-2");
  EXPECT_EQ(failed.probe_failures, 1u);
  EXPECT_EQ(failed.samples, 2u);
  EXPECT_DOUBLE_EQ(failed.throughput_bytes_per_second, figures.throughput_bytes_per_second);
  EXPECT_FALSE(table.AddProbe("w-1", Probe("w-1", 1e6, 0.001), kNow));  // to itself
  EXPECT_FALSE(table.AddProbe("w-1", Probe("", 1e6, 0.001), kNow));
}

TEST(LinkTableTest, MatrixHasEveryPairOfLiveWorkersMeasuredOrNot) {
  LinkTable table;
  table.AddProbe("w-1", Probe("w-2", 25e6, 0.05), kNow);
  table.AddProbe("w-3", Probe("w-1", 1e6, 0.1), kNow);  // w-3 is not live: not shown
  const v1::LinkMatrix matrix =
      table.Matrix({Worker("w-1", "us"), Worker("w-2", "eu"), Worker("w-4", "")});
  ASSERT_EQ(matrix.links_size(), 6);
  const v1::Link& measured = matrix.links(0);
  EXPECT_EQ(measured.src_worker_id(), "w-1");
  EXPECT_EQ(measured.dst_worker_id(), "w-2");
  EXPECT_EQ(measured.src_region(), "us");
  EXPECT_EQ(measured.dst_region(), "eu");
  EXPECT_DOUBLE_EQ(measured.throughput_bytes_per_second(), 25e6);
  EXPECT_DOUBLE_EQ(measured.latency_seconds(), 0.05);
  EXPECT_EQ(measured.samples(), 1u);
  EXPECT_EQ(measured.probe_samples(), 1u);
  EXPECT_DOUBLE_EQ(measured.probe_throughput_bytes_per_second(), 25e6);
  EXPECT_EQ(measured.probed_unix_ms(), kNow);
  EXPECT_EQ(measured.updated_unix_ms(), kNow);
  for (int i = 1; i < matrix.links_size(); ++i) {
    const v1::Link& link = matrix.links(i);
    EXPECT_NE(link.src_worker_id(), link.dst_worker_id());
    EXPECT_EQ(link.samples(), 0u) << link.src_worker_id() << " -> " << link.dst_worker_id();
    EXPECT_EQ(link.throughput_bytes_per_second(), 0.0);
    EXPECT_EQ(link.latency_seconds(), 0.0);
  }
  EXPECT_EQ(matrix.links(1).src_worker_id(), "w-1");
  EXPECT_EQ(matrix.links(1).dst_worker_id(), "w-4");
  EXPECT_EQ(matrix.links(2).src_worker_id(), "w-2");
  EXPECT_EQ(matrix.links(2).dst_worker_id(), "w-1");
  EXPECT_EQ(table.Matrix({Worker("w-1", "us")}).links_size(), 0);
}

TEST(LinkTableTest, ForgetDropsAWorkersLinksOnlyWhenAsked) {
  LinkTable table;
  table.AddProbe("w-1", Probe("w-2", 25e6, 0.05), kNow);
  table.AddProbe("w-2", Probe("w-3", 25e6, 0.05), kNow);
  table.AddProbe("w-3", Probe("w-1", 25e6, 0.05), kNow);
  EXPECT_EQ(table.size(), 3u);
  table.TakeChanges();
  table.Forget("w-2");
  EXPECT_EQ(table.size(), 1u);
  EXPECT_TRUE(table.Lookup("w-3", "w-1").has_value());
  LinkTable::Changes changes = table.TakeChanges();
  EXPECT_TRUE(changes.links.empty());
  EXPECT_EQ(changes.forgotten_workers, std::vector<std::string>{"w-2"});
  EXPECT_FALSE(table.dirty());
}

TEST(LinkTableTest, SurvivesTheStateStoreExactly) {
  TempDir dir;
  LinkTable table;
  for (int i = 0; i < 40; ++i) {
    table.AddPassive({"w-1", "w-2", 3 * kMiB + 1000ull * i, 0.3 + 0.01 * i, 0.011 + 1e-4 * i},
                     kNow + i);
  }
  table.AddProbe("w-2", Probe("w-1", 123.456e6, 0.0123), kNow + 50);
  table.AddProbe("w-2", Probe("w-1", 0, 0, "timed out"), kNow + 60);
  {
    auto store = OpenSqliteStateStore(dir.path());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    LinkTable::Changes changes = table.TakeChanges();
    EXPECT_EQ(changes.links.size(), 2u);
    ASSERT_TRUE((*store)->PutLinks(changes.links, changes.forgotten_workers).ok());
    EXPECT_FALSE(table.dirty());
  }
  auto store = OpenSqliteStateStore(dir.path());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto state = (*store)->Load();
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  ASSERT_EQ(state->links.size(), 2u);
  LinkTable restored;
  restored.Restore(state->links);
  for (const auto& [src, dst] :
       {std::pair<std::string, std::string>{"w-1", "w-2"}, {"w-2", "w-1"}}) {
    const LinkFigures a = *table.Lookup(src, dst);
    const LinkFigures b = *restored.Lookup(src, dst);
    EXPECT_EQ(a.throughput_bytes_per_second, b.throughput_bytes_per_second) << src;
    EXPECT_EQ(a.latency_seconds, b.latency_seconds) << src;
    EXPECT_EQ(a.samples, b.samples);
    EXPECT_EQ(a.probe_samples, b.probe_samples);
    EXPECT_EQ(a.latency_samples, b.latency_samples);
    EXPECT_EQ(a.probe_throughput_bytes_per_second, b.probe_throughput_bytes_per_second);
    EXPECT_EQ(a.probe_latency_seconds, b.probe_latency_seconds);
    EXPECT_EQ(a.probed_unix_ms, b.probed_unix_ms);
    EXPECT_EQ(a.probe_failures, b.probe_failures);
    EXPECT_EQ(a.updated_unix_ms, b.updated_unix_ms);
  }
  EXPECT_EQ(restored.Lookup("w-2", "w-1")->probe_failures, 1u);
  EXPECT_EQ(restored.Lookup("w-1", "w-2")->samples, 40u);
  // The restored estimators go on as the originals would: the next sample weighs the same.
  const PassiveLinkSample next{"w-1", "w-2", 90 * kMiB, 1.0, 0.05};
  table.AddPassive(next, kNow + 100);
  restored.AddPassive(next, kNow + 100);
  const double original = table.Lookup("w-1", "w-2")->throughput_bytes_per_second;
  EXPECT_NEAR(restored.Lookup("w-1", "w-2")->throughput_bytes_per_second, original,
              original * 1e-12);
  const double latency = table.Lookup("w-1", "w-2")->latency_seconds;
  EXPECT_NEAR(restored.Lookup("w-1", "w-2")->latency_seconds, latency, latency * 1e-12);

  // Forgetting a worker deletes its rows.
  restored.Forget("w-1");
  LinkTable::Changes changes = restored.TakeChanges();
  ASSERT_TRUE((*store)->PutLinks(changes.links, changes.forgotten_workers).ok());
  state = (*store)->Load();
  ASSERT_TRUE(state.ok());
  EXPECT_TRUE(state->links.empty());
}

}  // namespace
}  // namespace geotrain::coordinator
