// SumOverPipeline: over 1, 2 and 4 stages every stage ends with the same total, of one number and
// of a vector; stages that disagree on the vector's length get a clear error.
#include "runtime/pipeline_reduce.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "runtime/stage_links.h"

namespace geotrain::runtime {
namespace {

constexpr net::Timeout kTimeout = std::chrono::seconds(10);

// Runs body(stage, links) for the stages of one replica, each in its own thread.
void ForEachStage(int stages, const std::function<void(int, StageLinks&)>& body) {
  std::vector<StageLinks> links = CreateFakeJobLinks(stages, 1, false, false);
  std::vector<std::thread> threads;
  for (int s = 0; s < stages; ++s) threads.emplace_back([&, s] { body(s, links[s]); });
  for (std::thread& t : threads) t.join();
}

TEST(PipelineReduceTest, EveryStageGetsTheTotal) {
  for (int stages : {1, 2, 4}) {
    std::vector<double> scalar(stages);
    std::vector<std::vector<float>> vectors(stages);
    ForEachStage(stages, [&](int s, StageLinks& links) {
      auto total = SumOverPipeline(s + 1.0, links.upstream.get(), links.downstream.get(), kTimeout);
      ASSERT_TRUE(total.ok()) << total.status().ToString();
      scalar[s] = *total;
      vectors[s] = {0.1f * (s + 1), -1.0f * s, 1e-3f};
      ASSERT_TRUE(SumOverPipeline(Span<float>(vectors[s].data(), vectors[s].size()),
                                  links.upstream.get(), links.downstream.get(), kTimeout)
                      .ok());
    });
    float first = 0, second = 0, third = 0;
    for (int s = 0; s < stages; ++s) {
      first = first + 0.1f * (s + 1);
      second = second + -1.0f * s;
      third = third + 1e-3f;
    }
    for (int s = 0; s < stages; ++s) {
      EXPECT_EQ(scalar[s], stages * (stages + 1) / 2.0) << stages << " stages, stage " << s;
      EXPECT_EQ(vectors[s], (std::vector<float>{first, second, third}))
          << stages << " stages, stage " << s;
    }
  }
}

TEST(PipelineReduceTest, DisagreeingLengthsAreNamed) {
  std::vector<Status> statuses(2);
  ForEachStage(2, [&](int s, StageLinks& links) {
    std::vector<float> values(s == 0 ? 3 : 4, 1.0f);
    statuses[s] = SumOverPipeline(Span<float>(values.data(), values.size()), links.upstream.get(),
                                  links.downstream.get(), std::chrono::seconds(2));
  });
  EXPECT_NE(statuses[1].message().find("expected 4 float values, got 12 bytes"), std::string::npos)
      << statuses[1].ToString();
  EXPECT_FALSE(statuses[0].ok());
}

}  // namespace
}  // namespace geotrain::runtime
