// StageAssignmentOf and the GPU path: model.device / model.autocast come with the job YAML, and
// each rank's region comes from the placements the coordinator sends (rank_regions), which is
// what lets a stage's replicas in one region all-reduce over NCCL.
#include <gtest/gtest.h>

#include "runtime/dp_backend.h"
#include "worker/task_assignment.h"

namespace geotrain::worker {
namespace {

constexpr char kGpuSpec[] = R"(name: gpu-two-by-two
model: {dir: /models/gpt2-tiny, device: "cuda:0", autocast: bf16}
pipeline: {stages: 2}
data_parallel: {replicas: 2, mode: allreduce}
data: {train: ["train.txt"]}
)";

geotrain::v1::Assignment GpuAssignment() {
  geotrain::v1::Assignment assignment;
  assignment.set_job_id("job-7");
  assignment.set_generation(1);
  assignment.set_stage(1);
  assignment.set_replica(0);
  assignment.set_spec_yaml(kGpuSpec);
  return assignment;
}

void Place(geotrain::v1::Assignment* assignment, int stage, int replica,
           const std::string& region) {
  geotrain::v1::Placement* placement = assignment->add_placements();
  placement->set_stage(stage);
  placement->set_replica(replica);
  placement->set_worker_id("w" + std::to_string(replica * 2 + stage));
  placement->set_region(region);
}

TEST(TaskAssignmentDeviceTest, DeviceAndAutocastFollowTheJobSpec) {
  auto stage = StageAssignmentOf(GpuAssignment());
  ASSERT_TRUE(stage.ok()) << stage.status().ToString();
  EXPECT_EQ(stage->device, "cuda:0");
  EXPECT_EQ(stage->autocast, runtime::Autocast::kBf16);
  EXPECT_TRUE(stage->rank_regions.empty());  // no placements: regions unknown, Gloo
  EXPECT_EQ(runtime::ChooseDataParallelBackend(*stage), runtime::DataParallelBackend::kGloo);
}

TEST(TaskAssignmentDeviceTest, RegionsComeFromThePlacementsByGlobalRank) {
  geotrain::v1::Assignment assignment = GpuAssignment();
  Place(&assignment, 0, 0, "eu-west");
  Place(&assignment, 1, 0, "us-east");
  Place(&assignment, 0, 1, "eu-west");
  Place(&assignment, 1, 1, "us-east");
  Place(&assignment, 5, 9, "nowhere");  // out of range: ignored
  auto stage = StageAssignmentOf(assignment);
  ASSERT_TRUE(stage.ok()) << stage.status().ToString();
  EXPECT_EQ(stage->rank_regions,
            (std::vector<std::string>{"eu-west", "us-east", "eu-west", "us-east"}));
  // Stage 1's replicas (global ranks 1 and 3) share us-east.
  EXPECT_EQ(runtime::ChooseDataParallelBackend(*stage), runtime::DataParallelBackend::kNccl);

  geotrain::v1::Assignment split = GpuAssignment();
  Place(&split, 1, 0, "us-east");
  Place(&split, 1, 1, "eu-west");
  stage = StageAssignmentOf(split);
  ASSERT_TRUE(stage.ok()) << stage.status().ToString();
  EXPECT_EQ(stage->rank_regions, (std::vector<std::string>{"", "us-east", "", "eu-west"}));
  EXPECT_EQ(runtime::ChooseDataParallelBackend(*stage), runtime::DataParallelBackend::kGloo);
}

}  // namespace
}  // namespace geotrain::worker
