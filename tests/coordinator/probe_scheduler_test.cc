// ProbeScheduler: join probes both ways, periodic probes oldest first, one order per worker at a
// time, no probes for workers without a probe server, answers (or their deadline) free a worker.
#include "coordinator/probe_scheduler.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace geotrain::coordinator {
namespace {

constexpr int64_t kStart = 1'700'000'000'000;
constexpr int64_t kInterval = 300'000;

ProbePeer Peer(const std::string& id) { return {id, "10.0.0." + id.substr(2), 7001}; }

std::vector<ProbePeer> Peers(int n) {
  std::vector<ProbePeer> peers;
  for (int i = 1; i <= n; ++i) peers.push_back(Peer("w-" + std::to_string(i)));
  return peers;
}

// Orders by worker, each as the list of its targets' ids.
std::map<std::string, std::vector<std::string>> Targets(
    const std::vector<std::pair<std::string, v1::ProbeOrder>>& orders) {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& [worker, order] : orders) {
    EXPECT_EQ(out.count(worker), 0u) << worker << " got two orders at once";
    for (const v1::ProbeTarget& target : order.targets()) {
      out[worker].push_back(target.worker_id());
    }
  }
  return out;
}

ProbeSchedulerOptions Options(int64_t interval_ms = kInterval) {
  ProbeSchedulerOptions options;
  options.interval_ms = interval_ms;
  return options;
}

TEST(ProbeSchedulerTest, AJoinProbesBothWaysWithTheOrderFields) {
  ProbeSchedulerOptions options = Options();
  options.max_bytes = 1 << 20;
  options.timeout_ms = 2000;
  options.streams = 2;
  ProbeScheduler scheduler(options);
  // w-1 and w-2 were measured before; w-3 joins.
  scheduler.WorkerJoined("w-1");
  scheduler.WorkerJoined("w-2");
  scheduler.Due(Peers(2), kStart);
  scheduler.ResultsReceived("w-1");
  scheduler.ResultsReceived("w-2");
  EXPECT_TRUE(scheduler.Due(Peers(2), kStart + 1000).empty());

  scheduler.WorkerJoined("w-3");
  const auto orders = scheduler.Due(Peers(3), kStart + 2000);
  const auto targets = Targets(orders);
  ASSERT_EQ(targets.size(), 3u);
  EXPECT_EQ(targets.at("w-3"), (std::vector<std::string>{"w-1", "w-2"}));
  EXPECT_EQ(targets.at("w-1"), std::vector<std::string>{"w-3"});
  EXPECT_EQ(targets.at("w-2"), std::vector<std::string>{"w-3"});
  for (const auto& [worker, order] : orders) {
    EXPECT_EQ(order.max_bytes(), 1u << 20);
    EXPECT_EQ(order.max_milliseconds(), 2000u);
    EXPECT_EQ(order.streams(), 2u);
    for (const v1::ProbeTarget& target : order.targets()) {
      EXPECT_EQ(target.address(), Peer(target.worker_id()).address);
      EXPECT_EQ(target.port(), 7001u);
    }
  }
}

TEST(ProbeSchedulerTest, OneOutstandingOrderPerWorkerUntilItAnswers) {
  ProbeSchedulerOptions options = Options(/*interval_ms=*/0);
  options.max_targets = 2;
  ProbeScheduler scheduler(options);
  for (int i = 1; i <= 4; ++i) scheduler.WorkerJoined("w-" + std::to_string(i));
  auto targets = Targets(scheduler.Due(Peers(4), kStart));
  ASSERT_EQ(targets.size(), 4u);
  EXPECT_EQ(targets.at("w-1"), (std::vector<std::string>{"w-2", "w-3"}));
  EXPECT_TRUE(scheduler.outstanding("w-1"));
  // w-1 still has w-4 to probe, but its order is out.
  EXPECT_TRUE(scheduler.Due(Peers(4), kStart + 100).empty());
  scheduler.ResultsReceived("w-1");
  EXPECT_FALSE(scheduler.outstanding("w-1"));
  targets = Targets(scheduler.Due(Peers(4), kStart + 200));
  ASSERT_EQ(targets.size(), 1u);
  EXPECT_EQ(targets.at("w-1"), std::vector<std::string>{"w-4"});
  // Everything measured, interval 0: nothing more, ever.
  for (int i = 1; i <= 4; ++i) scheduler.ResultsReceived("w-" + std::to_string(i));
  scheduler.Due(Peers(4), kStart + 300);
  for (int i = 1; i <= 4; ++i) scheduler.ResultsReceived("w-" + std::to_string(i));
  EXPECT_TRUE(scheduler.Due(Peers(4), kStart + 10 * kInterval).empty());
}

TEST(ProbeSchedulerTest, ALostAnswerFreesTheWorkerAfterTheOrderDeadline) {
  ProbeScheduler scheduler(Options(0));
  scheduler.WorkerJoined("w-1");
  scheduler.WorkerJoined("w-2");
  ASSERT_EQ(scheduler.Due(Peers(2), kStart).size(), 2u);
  // One target: 2 x 3 s + the slack.
  const int64_t deadline = kStart + 2 * 3000 + ProbeScheduler::kOrderSlackMs;
  scheduler.Due(Peers(2), deadline - 1);
  EXPECT_TRUE(scheduler.outstanding("w-1"));
  scheduler.Due(Peers(2), deadline);
  EXPECT_FALSE(scheduler.outstanding("w-1"));
  // A new session drops the old order at once and measures again.
  scheduler.WorkerJoined("w-2");
  EXPECT_EQ(Targets(scheduler.Due(Peers(2), deadline + 1)).size(), 2u);
}

TEST(ProbeSchedulerTest, PeriodicProbesGoToTheOldestLinksFirst) {
  ProbeSchedulerOptions options = Options();
  options.max_targets = 1;
  ProbeScheduler scheduler(options);
  scheduler.WorkerJoined("w-1");
  scheduler.WorkerJoined("w-2");
  scheduler.WorkerJoined("w-3");
  // Join probes, one target per order: w-1 -> w-2 at t0, w-1 -> w-3 at t0 + 10 s.
  auto answer_all = [&] {
    for (int i = 1; i <= 3; ++i) scheduler.ResultsReceived("w-" + std::to_string(i));
  };
  EXPECT_EQ(Targets(scheduler.Due(Peers(3), kStart)).at("w-1"), std::vector<std::string>{"w-2"});
  answer_all();
  EXPECT_EQ(Targets(scheduler.Due(Peers(3), kStart + 10'000)).at("w-1"),
            std::vector<std::string>{"w-3"});
  answer_all();
  EXPECT_TRUE(scheduler.Due(Peers(3), kStart + 20'000).empty());
  // Before the interval passes nothing is due; then w-1 -> w-2 (older) goes before w-1 -> w-3.
  EXPECT_TRUE(scheduler.Due(Peers(3), kStart + kInterval - 1).empty());
  auto targets = Targets(scheduler.Due(Peers(3), kStart + kInterval + 20'000));
  EXPECT_EQ(targets.at("w-1"), std::vector<std::string>{"w-2"});
  answer_all();
  targets = Targets(scheduler.Due(Peers(3), kStart + kInterval + 20'001));
  EXPECT_EQ(targets.at("w-1"), std::vector<std::string>{"w-3"});
}

TEST(ProbeSchedulerTest, WorkersWithoutAProbeServerAreNeverProbed) {
  ProbeScheduler scheduler(Options());
  // The core passes only workers with a probe server: w-2 has none.
  const std::vector<ProbePeer> peers = {Peer("w-1"), Peer("w-3")};
  scheduler.WorkerJoined("w-1");
  scheduler.WorkerJoined("w-2");
  scheduler.WorkerJoined("w-3");
  const auto orders = scheduler.Due(peers, kStart);
  std::set<std::string> touched;
  for (const auto& [worker, order] : orders) {
    touched.insert(worker);
    for (const v1::ProbeTarget& t : order.targets()) touched.insert(t.worker_id());
  }
  EXPECT_EQ(touched, (std::set<std::string>{"w-1", "w-3"}));
  // Alone, a prober has nobody to probe.
  ProbeScheduler alone(Options());
  alone.WorkerJoined("w-1");
  EXPECT_TRUE(alone.Due({Peer("w-1")}, kStart).empty());
}

TEST(ProbeSchedulerTest, ALeftWorkersPendingLinksAreDropped) {
  ProbeSchedulerOptions options = Options(0);
  options.max_targets = 1;
  ProbeScheduler scheduler(options);
  for (int i = 1; i <= 3; ++i) scheduler.WorkerJoined("w-" + std::to_string(i));
  ASSERT_EQ(scheduler.Due(Peers(3), kStart).size(), 3u);
  // Still pending: w-1 -> w-3, w-2 -> w-3, w-3 -> w-2. Then w-3's session ends.
  scheduler.WorkerLeft("w-3");
  EXPECT_FALSE(scheduler.outstanding("w-3"));
  scheduler.ResultsReceived("w-1");
  scheduler.ResultsReceived("w-2");
  EXPECT_TRUE(scheduler.Due(Peers(2), kStart + 1000).empty());
  // Its links are due again only once it joins again (a new session).
  EXPECT_TRUE(scheduler.Due(Peers(3), kStart + 2000).empty());
  scheduler.WorkerJoined("w-3");
  EXPECT_EQ(Targets(scheduler.Due(Peers(3), kStart + 3000)).size(), 3u);
}

TEST(ProbeSchedulerTest, ValidateNamesTheFlag) {
  ProbeSchedulerOptions options;
  EXPECT_TRUE(options.Validate().ok());
  options.streams = 0;
  EXPECT_NE(options.Validate().message().find("--probe-streams"), std::string::npos);
  options = ProbeSchedulerOptions();
  options.max_bytes = 100;
  EXPECT_NE(options.Validate().message().find("--probe-bytes"), std::string::npos);
  options = ProbeSchedulerOptions();
  options.timeout_ms = 0;
  EXPECT_NE(options.Validate().message().find("--probe-timeout"), std::string::npos);
  options = ProbeSchedulerOptions();
  options.interval_ms = -1000;
  EXPECT_NE(options.Validate().message().find("--probe-interval"), std::string::npos);
}

}  // namespace
}  // namespace geotrain::coordinator
