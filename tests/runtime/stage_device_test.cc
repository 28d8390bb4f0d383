// Where a stage computes, on a machine without a GPU: a CUDA device is refused with an error
// naming model.device, the autocast scope sets and restores the thread's state, host staging
// passes CPU tensors through, and the device data-parallel path (NCCL's place, here an
// in-process fake DeviceAllReduce) trains exactly as the Gloo all-reduce does.
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/autocast_scope.h"
#include "runtime/data_parallel_sync.h"
#include "runtime/host_staging.h"
#include "runtime/rank_runner.h"
#include "runtime/stage_device.h"
#include "runtime/stage_runtime.h"
#include "tests/runtime/runtime_test_job.h"

namespace geotrain::runtime {
namespace {

using testing::RunRanks;
using testing::TinyJob;

TEST(StageDeviceTest, CpuIsTheDefault) {
  geotrain::testing::TempDir dir;
  const StageAssignment job = TinyJob(dir, 1, 1);
  StatusOr<at::Device> device = StageDevice(job);
  ASSERT_TRUE(device.ok()) << device.status().ToString();
  EXPECT_TRUE(device->is_cpu());
  EXPECT_FALSE(AutocastDtype(job).has_value());
  std::vector<StageLinks> links = CreateFakeJobLinks(1, 1, true, true);
  auto runtime = StageRuntime::Create(job, std::move(links[0]));
  ASSERT_TRUE(runtime.ok()) << runtime.status().ToString();
  EXPECT_TRUE((*runtime)->device().is_cpu());
  for (const auto& p : (*runtime)->parameters()) EXPECT_TRUE(p.tensor.is_cpu()) << p.name;
}

TEST(StageDeviceTest, CudaIsRefusedWhereThereIsNone) {
  if (torch::cuda::is_available()) GTEST_SKIP() << "this machine has CUDA";
  geotrain::testing::TempDir dir;
  for (const char* device : {"cuda", "cuda:0", "cuda:3"}) {
    StageAssignment job = TinyJob(dir, 1, 1);
    job.device = device;
    std::vector<StageLinks> links = CreateFakeJobLinks(1, 1, true, true);
    auto runtime = StageRuntime::Create(job, std::move(links[0]));
    ASSERT_FALSE(runtime.ok()) << device;
    EXPECT_EQ(runtime.status().code(), StatusCode::kFailedPrecondition);
    const std::string expected =
        "model.device: " + std::string(device) + " asked for, but CUDA is not available";
    EXPECT_EQ(runtime.status().message().rfind(expected, 0), 0u) << runtime.status().message();
  }
}

TEST(StageDeviceTest, RunRankRefusesCudaBeforeAnythingElse) {
  if (torch::cuda::is_available()) GTEST_SKIP() << "this machine has CUDA";
  // No model, no store for a job of four ranks: the device is what it reports, so a rank
  // placed on a machine without a GPU never joins the rendezvous its peers wait in.
  RankRunOptions options;
  options.assignment.model_dir = "/nonexistent/model";
  options.assignment.data.train = {{"/nonexistent/train.txt", 1.0}};
  options.assignment.num_stages = 2;
  options.assignment.dp_size = 2;
  options.assignment.stage = 1;
  options.assignment.device = "cuda:1";
  const Status status = RunRank(options, nullptr);
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition) << status.ToString();
  EXPECT_EQ(status.message().rfind("rank 1 (stage 1, replica 0): model.device: cuda:1", 0), 0u)
      << status.message();
}

TEST(CudaAutocastScopeTest, SetsAndRestoresTheThreadsState) {
  const bool enabled_before = CudaAutocastEnabled();
  const at::ScalarType dtype_before = CudaAutocastDtype();
  ASSERT_FALSE(enabled_before);
  {
    const CudaAutocastScope outer(at::kBFloat16);
    EXPECT_TRUE(CudaAutocastEnabled());
    EXPECT_EQ(CudaAutocastDtype(), at::kBFloat16);
    {
      const CudaAutocastScope nothing(std::nullopt);
      EXPECT_TRUE(CudaAutocastEnabled());
      const CudaAutocastScope inner(at::kHalf);
      EXPECT_EQ(CudaAutocastDtype(), at::kHalf);
    }
    EXPECT_TRUE(CudaAutocastEnabled());
    EXPECT_EQ(CudaAutocastDtype(), at::kBFloat16);
    // CUDA autocast leaves CPU ops alone: a CPU stage would compute as without it.
    const at::Tensor a = at::ones({2, 2});
    EXPECT_EQ(at::matmul(a, a).scalar_type(), at::kFloat);
  }
  EXPECT_EQ(CudaAutocastEnabled(), enabled_before);
  EXPECT_EQ(CudaAutocastDtype(), dtype_before);
  {
    const CudaAutocastScope off(std::nullopt);
    EXPECT_FALSE(CudaAutocastEnabled());
  }
}

TEST(HostStagingTest, CpuTensorsPassThrough) {
  const at::Tensor t = at::arange(6, at::kFloat).view({2, 3});
  DeviceToHostStaging to_host;
  EXPECT_TRUE(to_host.ToHost(t).is_same(t));
  HostToDeviceStaging to_cpu(at::kCPU);
  EXPECT_TRUE(to_cpu.ToDevice(t).is_same(t));
}

// DeviceAllReduce for N ranks as threads of one process, on CPU tensors: what NCCL does, for the
// runtime's device data-parallel path on a machine without GPUs. Sums in arrival order (exact
// for two ranks, whose sum commutes).
class FakeDeviceGroup {
 public:
  explicit FakeDeviceGroup(int size) : size_(size) {}

  class Member final : public net::DeviceAllReduce {
   public:
    Member(FakeDeviceGroup* group, int rank) : group_(group), rank_(rank) {}
    int rank() const override { return rank_; }
    int size() const override { return group_->size_; }
    Status AllReduceSum(const at::Tensor& values, net::Timeout) override {
      return group_->Sum(values);
    }

   private:
    FakeDeviceGroup* group_;
    int rank_;
  };

  std::unique_ptr<net::DeviceAllReduce> Join(int rank) {
    return std::make_unique<Member>(this, rank);
  }
  int calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }

 private:
  Status Sum(const at::Tensor& values) {
    if (values.scalar_type() != at::kFloat || !values.is_contiguous()) {
      return InvalidArgument("fake device group: not a contiguous float32 tensor");
    }
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait(lock, [&] { return leaving_ == 0; });  // the last round has been read
    sum_ = arrived_ == 0 ? values.clone() : sum_.add_(values);
    ++calls_;
    const uint64_t round = round_;
    if (++arrived_ == size_) {
      arrived_ = 0;
      leaving_ = size_;
      ++round_;
      changed_.notify_all();
    } else {
      changed_.wait(lock, [&] { return round_ != round; });
    }
    values.copy_(sum_);
    if (--leaving_ == 0) changed_.notify_all();
    return OkStatus();
  }

  const int size_;
  std::mutex mu_;
  std::condition_variable changed_;
  int arrived_ = 0;
  int leaving_ = 0;
  uint64_t round_ = 0;
  int calls_ = 0;
  at::Tensor sum_;
};

// The parameters and dp traffic of every rank after `steps` steps of `job`, its gradients
// averaged over `device_group` (when given) instead of the data-parallel transport.
struct Trained {
  std::vector<std::map<std::string, at::Tensor>> parameters;
  std::vector<uint64_t> dp_raw_bytes;
};
Trained TrainReplicas(const StageAssignment& job, FakeDeviceGroup* device_group) {
  Trained trained;
  trained.parameters.resize(static_cast<size_t>(job.world_size()));
  trained.dp_raw_bytes.resize(static_cast<size_t>(job.world_size()));
  RunRanks(job, /*tied_embeddings=*/true,
           [&](int rank, const StageAssignment& assignment, StageLinks links) {
             if (device_group) links.data_parallel_device = device_group->Join(assignment.dp_rank);
             auto runtime = StageRuntime::Create(assignment, std::move(links));
             ASSERT_TRUE(runtime.ok()) << runtime.status().ToString();
             for (int64_t i = 0; i < job.training.total_steps; ++i) {
               auto step = (*runtime)->Step();
               ASSERT_TRUE(step.ok()) << step.status().ToString();
               trained.dp_raw_bytes[rank] += step->raw_bytes.dp;
             }
             for (const auto& p : (*runtime)->parameters()) {
               trained.parameters[rank][p.name] = p.tensor.detach().clone();
             }
           });
  return trained;
}

TEST(DeviceDataParallelTest, AllReduceOverTheDeviceGroupMatchesGlooBitForBit) {
  geotrain::testing::TempDir dir;
  StageAssignment job = TinyJob(dir, 1, 2);
  job.training.total_steps = 2;
  const Trained gloo = TrainReplicas(job, nullptr);
  FakeDeviceGroup group(2);
  const Trained device = TrainReplicas(job, &group);
  EXPECT_GT(group.calls(), 0);
  for (size_t rank = 0; rank < gloo.parameters.size(); ++rank) {
    ASSERT_EQ(gloo.parameters[rank].size(), device.parameters[rank].size());
    for (const auto& [name, value] : gloo.parameters[rank]) {
      EXPECT_TRUE(at::equal(value, device.parameters[rank].at(name)))
          << "rank " << rank << " " << name;
    }
    // The same ring bytes are reported, though none crossed the Gloo links.
    EXPECT_EQ(device.dp_raw_bytes[rank], gloo.dp_raw_bytes[rank]) << "rank " << rank;
    EXPECT_GT(device.dp_raw_bytes[rank], 0u);
  }
}

TEST(DeviceDataParallelTest, OnlyTheAllReduceModeTakesADeviceGroup) {
  geotrain::testing::TempDir dir;
  StageAssignment job = TinyJob(dir, 1, 2);
  job.compression.data_parallel.mode = DataParallelMode::kPowerSgd;
  std::vector<StageLinks> links = CreateFakeJobLinks(1, 2, true, true);
  FakeDeviceGroup group(2);
  links[0].data_parallel_device = group.Join(0);
  auto runtime = StageRuntime::Create(job, std::move(links[0]));
  ASSERT_FALSE(runtime.ok());
  EXPECT_NE(runtime.status().message().find(
                "powersgd sync: context.device_group: only the allreduce mode sums on the device"),
            std::string::npos)
      << runtime.status().message();
}

}  // namespace
}  // namespace geotrain::runtime
