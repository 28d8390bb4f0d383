// BuildEpochOrder: a seeded, weighted order of sample ids per epoch.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <vector>

#include "models/data/epoch_order.h"
#include "models/data/sample_id.h"

namespace geotrain::models::data {
namespace {

EpochMixture Mixture(std::vector<uint64_t> blocks, std::vector<double> weights, uint64_t samples) {
  EpochMixture mixture;
  mixture.block_counts = std::move(blocks);
  mixture.weights = std::move(weights);
  mixture.samples_per_epoch = samples;
  return mixture;
}

std::vector<uint64_t> Order(const EpochMixture& mixture, uint64_t seed, uint64_t epoch) {
  auto order = BuildEpochOrder(mixture, seed, epoch);
  EXPECT_TRUE(order.ok()) << order.status().ToString();
  return order.ok() ? *order : std::vector<uint64_t>{};
}

TEST(DataEpochOrderTest, SampleIdsPackSourceAndBlock) {
  const uint64_t id = MakeSampleId(3, 12345);
  EXPECT_EQ(SampleIdSource(id), 3u);
  EXPECT_EQ(SampleIdBlock(id), 12345u);
  EXPECT_EQ(MakeSampleId(0, 7), 7u);
}

TEST(DataEpochOrderTest, DeterministicBySeedAndEpoch) {
  const EpochMixture mixture = Mixture({50, 30}, {1, 1}, 80);
  EXPECT_EQ(Order(mixture, 7, 0), Order(mixture, 7, 0));
  EXPECT_EQ(Order(mixture, 7, 3), Order(mixture, 7, 3));
  EXPECT_NE(Order(mixture, 7, 0), Order(mixture, 8, 0));
  EXPECT_NE(Order(mixture, 7, 0), Order(mixture, 7, 1));
}

TEST(DataEpochOrderTest, UnweightedEpochVisitsEveryBlockOnce) {
  const EpochMixture mixture = Mixture({50, 30}, {5, 3}, 80);
  for (uint64_t epoch = 0; epoch < 3; ++epoch) {
    const std::vector<uint64_t> order = Order(mixture, 1, epoch);
    std::set<uint64_t> unique(order.begin(), order.end());
    EXPECT_EQ(unique.size(), 80u);
    for (uint64_t id : unique) {
      EXPECT_LT(SampleIdBlock(id), mixture.block_counts[SampleIdSource(id)]);
    }
  }
}

TEST(DataEpochOrderTest, CountsFollowWeightsExactly) {
  auto counts = SamplesPerSource(Mixture({10, 1000, 7}, {0.5, 0.3, 0.2}, 101));
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(*counts, (std::vector<uint64_t>{51, 30, 20}));  // 50.5, 30.3, 20.2: largest remainder
}

TEST(DataEpochOrderTest, UpweightedSourceRepeatsOnlyAfterAFullPass) {
  // Source 0 has 10 blocks and gets 75 samples per epoch: 7.5 passes.
  const EpochMixture mixture = Mixture({10, 100}, {3, 1}, 100);
  std::vector<uint64_t> stream;
  for (uint64_t epoch = 0; epoch < 4; ++epoch) {
    for (uint64_t id : Order(mixture, 5, epoch)) {
      if (SampleIdSource(id) == 0) stream.push_back(id);
    }
  }
  ASSERT_EQ(stream.size(), 300u);
  // The epoch shuffle mixes the order inside an epoch, so check per-epoch multiplicities: every
  // block appears 7 or 8 times in an epoch of 75 draws.
  for (size_t epoch = 0; epoch < 4; ++epoch) {
    std::map<uint64_t, int> seen;
    for (size_t i = epoch * 75; i < (epoch + 1) * 75; ++i) ++seen[stream[i]];
    ASSERT_EQ(seen.size(), 10u);
    for (const auto& [id, n] : seen) EXPECT_TRUE(n == 7 || n == 8) << id << " " << n;
  }
}

TEST(DataEpochOrderTest, DownweightedSourceCoversAllBlocksOverEpochs) {
  // Source 1 has 40 blocks and gets 10 per epoch: four epochs show each exactly once.
  const EpochMixture mixture = Mixture({30, 40}, {3, 1}, 40);
  std::multiset<uint64_t> seen;
  for (uint64_t epoch = 0; epoch < 4; ++epoch) {
    for (uint64_t id : Order(mixture, 9, epoch)) {
      if (SampleIdSource(id) == 1) seen.insert(id);
    }
  }
  EXPECT_EQ(seen.size(), 40u);
  EXPECT_EQ(std::set<uint64_t>(seen.begin(), seen.end()).size(), 40u);
}

TEST(DataEpochOrderTest, BadMixturesAreRefused) {
  EXPECT_FALSE(BuildEpochOrder(Mixture({}, {}, 1), 0, 0).ok());
  EXPECT_FALSE(BuildEpochOrder(Mixture({1}, {1, 2}, 1), 0, 0).ok());
  EXPECT_FALSE(BuildEpochOrder(Mixture({0}, {1}, 1), 0, 0).ok());
  EXPECT_FALSE(BuildEpochOrder(Mixture({1}, {0}, 1), 0, 0).ok());
  EXPECT_FALSE(BuildEpochOrder(Mixture({1}, {1}, 0), 0, 0).ok());
}

}  // namespace
}  // namespace geotrain::models::data
