#include "coordinator/placement.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace geotrain::coordinator
