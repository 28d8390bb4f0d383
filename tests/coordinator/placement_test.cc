#include "coordinator/placement.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/job_shape.h"

namespace geotrain::coordinator {
namespace {

TEST(PlacementTest, WorkerIdsSortNumerically) {
  EXPECT_TRUE(WorkerIdLess("w-2", "w-10"));
  EXPECT_FALSE(WorkerIdLess("w-10", "w-2"));
  EXPECT_TRUE(WorkerIdLess("w-10", "w-11"));
  EXPECT_FALSE(WorkerIdLess("w-3", "w-3"));
}

TEST(PlacementTest, RanksTakeWorkersInRegionThenIdOrder) {
  std::vector<PlacementCandidate> idle = {
      {"w-10", "us"}, {"w-2", "us"}, {"w-7", "eu"}, {"w-1", "us"}, {"w-9", "eu"}};
  auto placements = PlaceInOrder(idle, /*num_stages=*/2, /*replicas=*/2);
  ASSERT_TRUE(placements.has_value());
  ASSERT_EQ(placements->size(), 4u);
  // Sorted: eu/w-7, eu/w-9, us/w-1, us/w-2, us/w-10; rank r = replica * 2 + stage.
  const std::vector<std::tuple<int, int, std::string, std::string>> expected = {
      {0, 0, "w-7", "eu"}, {1, 0, "w-9", "eu"}, {0, 1, "w-1", "us"}, {1, 1, "w-2", "us"}};
  for (size_t r = 0; r < expected.size(); ++r) {
    const v1::Placement& p = (*placements)[r];
    EXPECT_EQ(p.stage(), std::get<0>(expected[r])) << r;
    EXPECT_EQ(p.replica(), std::get<1>(expected[r])) << r;
    EXPECT_EQ(p.worker_id(), std::get<2>(expected[r])) << r;
    EXPECT_EQ(p.region(), std::get<3>(expected[r])) << r;
  }
}

TEST(PlacementTest, TooFewWorkersPlaceNothing) {
  std::vector<PlacementCandidate> idle = {{"w-1", "us"}, {"w-2", "us"}, {"w-3", "us"}};
  EXPECT_FALSE(PlaceInOrder(idle, 2, 2).has_value());
  EXPECT_FALSE(PlaceInOrder({}, 1, 1).has_value());
  EXPECT_TRUE(PlaceInOrder(idle, 3, 1).has_value());
}

std::vector<std::string> IdsOf(const std::vector<PlacementCandidate>& candidates) {
  std::vector<std::string> ids;
  for (const PlacementCandidate& c : candidates) ids.push_back(c.worker_id);
  return ids;
}

TEST(PlacementTest, CudaJobsGetOnlyWorkersWithTheirDeviceAtCudaSpeed) {
  const std::vector<PlacementCandidate> idle = {
      {"w-1", "us", 8, 0}, {"w-2", "us", 8, 1}, {"w-3", "eu", 4, 2}, {"w-4", "eu", 16, 0}};
  const auto one = CandidatesFor(idle, /*cuda_devices=*/1, /*ranks=*/1);
  EXPECT_EQ(IdsOf(one), (std::vector<std::string>{"w-2", "w-3"}));
  for (const PlacementCandidate& c : one) EXPECT_EQ(c.speed, kCudaWorkerSpeed) << c.worker_id;
  // model.device cuda:1 needs a second GPU.
  EXPECT_EQ(IdsOf(CandidatesFor(idle, 2, 1)), (std::vector<std::string>{"w-3"}));
  EXPECT_TRUE(CandidatesFor(idle, 3, 1).empty());
}

TEST(PlacementTest, CpuJobsStayOffGpuWorkersWhileEnoughOthersAreIdle) {
  const std::vector<PlacementCandidate> idle = {
      {"w-1", "us", 8, 0}, {"w-2", "us", 8, 1}, {"w-3", "eu", 4, 0}};
  const auto two = CandidatesFor(idle, 0, /*ranks=*/2);
  EXPECT_EQ(IdsOf(two), (std::vector<std::string>{"w-1", "w-3"}));
  EXPECT_EQ(two[0].speed, 8);  // its CPUs: the job never touches a GPU
  // Three ranks need the GPU worker too; it runs its rank on its CPUs.
  const auto three = CandidatesFor(idle, 0, 3);
  EXPECT_EQ(IdsOf(three), (std::vector<std::string>{"w-1", "w-2", "w-3"}));
  EXPECT_EQ(three[1].speed, 8);
}

TEST(PlacementTest, WaitingForSaysWhatIsMissing) {
  EXPECT_EQ(WaitingForWorkers(4, 0, 2, 2), "4 idle workers; 2 are idle now");
  EXPECT_EQ(WaitingForWorkers(1, 0, 0, 0), "1 idle worker; 0 are idle now");
  EXPECT_EQ(WaitingForWorkers(4, 1, 1, 3),
            "4 idle workers with a CUDA device; 1 of the 3 idle now qualifies");
  EXPECT_EQ(WaitingForWorkers(2, 2, 0, 1),
            "2 idle workers with 2 CUDA devices (model.device cuda:1); 0 of the 1 idle now "
            "qualify");
}

// The runtime rings each stage group in replica order (net/collectives.h: rank r sends to r+1),
// so the replica numbers in the placements are the planned ring order.
TEST(PlacementTest, PlannedReplicaNumbersRingAroundSlowRegionPairs) {
  // Four regions of two workers; a-b and c-d are slow, every other pair of regions is fine.
  // In-order (regions sorted a, b, c, d, one replica each) rings a-b-c-d-a over both slow pairs.
  std::vector<PlacementCandidate> idle;
  for (const char* region : {"a", "b", "c", "d"}) {
    for (int i = 0; i < 2; ++i) {
      idle.push_back({std::string("w-") + region + std::to_string(i), region});
    }
  }
  auto region_of = [](const std::string& id) { return id.substr(2, 1); };
  const LinkLookup lookup = [&](const std::string& src,
                                const std::string& dst) -> std::optional<planner::LinkCost> {
    const std::string a = region_of(src), b = region_of(dst);
    if (a == b) return planner::LinkCost{1.25e9, 1e-4};
    const bool slow = (a == "a" && b == "b") || (a == "b" && b == "a") || (a == "c" && b == "d") ||
                      (a == "d" && b == "c");
    return slow ? planner::LinkCost{1e6, 0.05} : planner::LinkCost{1e8, 0.02};
  };
  planner::JobShape shape;
  shape.num_stages = 2;
  shape.replicas = 4;
  shape.micro_batches = 4;
  shape.forward_seconds = {0.01, 0.01};
  shape.backward_seconds = {0.02, 0.02};
  shape.activation_bytes = {5e7};  // pipelines stay inside regions
  shape.gradient_bytes = {5e7};
  shape.sync_bytes = {1e7, 1e7};
  planner::PlannerOptions options;
  options.time_budget_seconds = 5;  // the kick limit ends the search
  const std::optional<PlannedPlacement> plan = PlacePlanned(idle, shape, lookup, options);
  ASSERT_TRUE(plan.has_value());
  ASSERT_TRUE(plan->planned) << plan->start;
  std::vector<std::string> replica_region(4);
  for (const v1::Placement& p : plan->placements) {
    if (p.stage() == 0) replica_region[static_cast<size_t>(p.replica())] = p.region();
  }
  for (size_t r = 0; r < 4; ++r) {
    std::string pair = replica_region[r] + replica_region[(r + 1) % 4];
    std::sort(pair.begin(), pair.end());
    EXPECT_NE(pair, "ab") << r;
    EXPECT_NE(pair, "cd") << r;
  }
}

}  // namespace
}  // namespace geotrain::coordinator
