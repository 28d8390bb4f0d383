// The stage on a CUDA device (binary runtime_gpu_tests, CTest label "gpu"): pipelines on one GPU
// match the CPU run (float32 closely, bf16 autocast within bfloat16's precision), every tensor
// of the rank stays on the device, a checkpoint written from the GPU resumes there, two
// geotrain-run processes share one GPU, and replicas on two GPUs all-reduce over NCCL.
//
// Every test skips where CUDA is not available (a CPU build of LibTorch, or no GPU), so the
// binary builds and passes everywhere; on a GPU machine run it with `ctest -L gpu`.
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <cmath>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "net/device_all_reduce.h"
#include "net/gloo_transport.h"
#include "runtime/stage_runtime.h"
#include "tests/runtime/multiprocess/rank_processes.h"
#include "tests/runtime/runtime_test_job.h"

namespace geotrain::runtime {
namespace {

using testing::RunRanks;
using testing::TinyJob;

#define SKIP_WITHOUT_CUDA(gpus)                                                \
  do {                                                                         \
    if (!torch::cuda::is_available()) GTEST_SKIP() << "CUDA is not available"; \
    if (static_cast<int>(torch::cuda::device_count()) < (gpus)) {              \
      GTEST_SKIP() << "needs " << (gpus) << " GPUs, this machine has "         \
                   << torch::cuda::device_count();                             \
    }                                                                          \
  } while (false)

struct Outcome {
  std::vector<double> losses;                    // the last stage's (replica 0's), per step
  std::map<std::string, at::Tensor> parameters;  // every rank's, on the CPU, by "rank/name"
};

// Trains `job` on every rank (threads, fake links) for its total_steps; `edit` adjusts each
// rank's assignment and links first (its device, an NCCL group).
Outcome Train(const StageAssignment& job,
              const std::function<void(StageAssignment*, StageLinks*)>& edit = nullptr) {
  Outcome outcome;
  std::mutex mu;
  RunRanks(job, /*tied_embeddings=*/true,
           [&](int rank, const StageAssignment& given, StageLinks links) {
             StageAssignment assignment = given;
             if (edit) edit(&assignment, &links);
             auto runtime = StageRuntime::Create(assignment, std::move(links));
             ASSERT_TRUE(runtime.ok()) << runtime.status().ToString();
             ASSERT_TRUE((*runtime)->Resume().ok());
             std::vector<double> losses;
             for (int64_t i = (*runtime)->step(); i < assignment.training.total_steps; ++i) {
               auto step = (*runtime)->Step();
               ASSERT_TRUE(step.ok()) << "rank " << rank << ": " << step.status().ToString();
               losses.push_back(step->loss);
             }
             std::lock_guard<std::mutex> lock(mu);
             if (assignment.is_last_stage() && assignment.dp_rank == 0) outcome.losses = losses;
             for (const auto& p : (*runtime)->parameters()) {
               EXPECT_EQ(p.tensor.device(), (*runtime)->device()) << p.name;
               outcome.parameters[std::to_string(rank) + "/" + p.name] =
                   p.tensor.detach().to(at::kCPU, at::kFloat);
             }
           });
  return outcome;
}

void ExpectClose(const Outcome& got, const Outcome& want, double tolerance) {
  ASSERT_EQ(got.losses.size(), want.losses.size());
  for (size_t i = 0; i < got.losses.size(); ++i) {
    EXPECT_NEAR(got.losses[i], want.losses[i], tolerance * std::fabs(want.losses[i]))
        << "step " << i + 1;
  }
  ASSERT_EQ(got.parameters.size(), want.parameters.size());
  for (const auto& [name, value] : want.parameters) {
    const at::Tensor& other = got.parameters.at(name);
    EXPECT_LE((other - value).norm().item<double>(), tolerance * value.norm().item<double>() + 1e-6)
        << name;
  }
}

TEST(GpuPipelineTest, TwoStagesOnOneGpuMatchTheCpuRun) {
  SKIP_WITHOUT_CUDA(1);
  geotrain::testing::TempDir dir;
  StageAssignment job = TinyJob(dir, 2, 1);
  const Outcome cpu = Train(job);
  job.device = "cuda:0";
  const Outcome gpu = Train(job);
  ExpectClose(gpu, cpu, 1e-4);
  EXPECT_LT(gpu.losses.back(), gpu.losses.front());
}

TEST(GpuPipelineTest, Bf16AutocastMatchesTheCpuRunWithinBf16Precision) {
  SKIP_WITHOUT_CUDA(1);
  geotrain::testing::TempDir dir;
  StageAssignment job = TinyJob(dir, 2, 1);
  job.compression.autoencoder_dim = 8;  // the autoencoder halves under autocast too
  const Outcome cpu = Train(job);
  job.device = "cuda:0";
  job.autocast = Autocast::kBf16;
  const Outcome gpu = Train(job);
  // bfloat16 keeps 8 significant bits (relative error 2^-9 per rounding); a few steps of a
  // small model stay within a few percent of float32.
  ExpectClose(gpu, cpu, 3e-2);
}

TEST(GpuPipelineTest, ReplicasWithCompressionTrainOnTheGpu) {
  SKIP_WITHOUT_CUDA(1);
  geotrain::testing::TempDir dir;
  StageAssignment job = TinyJob(dir, 2, 2);
  job.device = "cuda:0";
  job.compression.forward.codec = compression::CodecId::kFixpoint;
  job.compression.forward.bits = 8;
  job.compression.backward.codec = compression::CodecId::kFixpoint;
  job.compression.backward.bits = 8;
  job.compression.data_parallel.mode = DataParallelMode::kCocktail;
  job.compression.data_parallel.codec.codec = compression::CodecId::kCocktail;
  const Outcome gpu = Train(job);
  ASSERT_EQ(gpu.losses.size(), 4u);
  for (double loss : gpu.losses) EXPECT_TRUE(std::isfinite(loss));
  EXPECT_LT(gpu.losses.back(), gpu.losses.front());
}

TEST(GpuCheckpointTest, ACheckpointWrittenOnTheGpuResumesThere) {
  SKIP_WITHOUT_CUDA(1);
  geotrain::testing::TempDir dir;
  StageAssignment job = TinyJob(dir, 2, 1);
  job.device = "cuda:0";
  const Outcome straight = Train(job);
  job.training.checkpoint_dir = dir.File("checkpoints");
  job.training.checkpoint_every = 2;
  job.training.total_steps = 2;
  RunRanks(job, true, [&](int, const StageAssignment& assignment, StageLinks links) {
    auto runtime = StageRuntime::Create(assignment, std::move(links));
    ASSERT_TRUE(runtime.ok()) << runtime.status().ToString();
    const Status status = (*runtime)->Run(nullptr);
    ASSERT_TRUE(status.ok()) << status.ToString();
  });
  job.training.total_steps = 4;
  const Outcome resumed = Train(job);
  ASSERT_EQ(resumed.losses.size(), 2u);
  // GPU kernels with atomics (embedding backward) need not be bit-reproducible.
  EXPECT_NEAR(resumed.losses[0], straight.losses[2], 1e-5 * straight.losses[2]);
  EXPECT_NEAR(resumed.losses[1], straight.losses[3], 1e-5 * straight.losses[3]);
}

// Two geotrain-run processes, the stages of a 2 x 1 job, share GPU 0 with bf16 autocast; their
// last stage's losses are the CPU run's within bfloat16's precision.
TEST(GpuProcessesTest, TwoProcessesShareOneGpuAndMatchTheCpuRun) {
  SKIP_WITHOUT_CUDA(1);
  geotrain::testing::TempDir dir;
  const StageAssignment job = TinyJob(dir, 2, 1);
  const auto run = [&](const std::string& name, const std::string& model_keys) {
    const std::string yaml = dir.Write(
        name + ".yaml", "name: " + name + "\nmodel: {dir: \"" + job.model_dir + "\"" + model_keys +
                            "}\ndata: {train: [\"" + job.data.train.at(0).path +
                            "\"]}\npipeline: {stages: 2}\ndata_parallel: {replicas: 1}\n");
    std::vector<testing::Args> ranks;
    for (int rank = 0; rank < 2; ++rank) {
      testing::Args args = {"--world-size", "2",
                            "--rank",       std::to_string(rank),
                            "--dist-url",   "file://" + dir.File(name + ".rdzv"),
                            "--config",     yaml};
      const testing::Args flags = testing::TinyJobFlags(job);
      args.insert(args.end(), flags.begin(), flags.end());
      ranks.push_back(std::move(args));
    }
    testing::RankProcesses processes(dir.File(name), ranks);
    EXPECT_TRUE(processes.WaitAll(std::chrono::seconds(300))) << processes.Summary();
    for (int rank = 0; rank < 2; ++rank) {
      EXPECT_EQ(processes.exit_code(rank), 0) << processes.Summary();
    }
    std::vector<double> losses;
    for (const nlohmann::json& line : testing::StepLines(processes.Stdout(1), 1)) {
      losses.push_back(line.at("loss").get<double>());
    }
    return losses;
  };
  const std::vector<double> cpu = run("cpu", "");
  const std::vector<double> gpu = run("gpu", ", device: \"cuda:0\", autocast: bf16");
  ASSERT_EQ(cpu.size(), 6u);
  ASSERT_EQ(gpu.size(), cpu.size());
  for (size_t i = 0; i < cpu.size(); ++i) {
    EXPECT_NEAR(gpu[i], cpu[i], 3e-2 * cpu[i]) << "step " << i + 1;
  }
}

// Two replicas of one stage on GPUs 0 and 1, both "in one region": their gradient all-reduce
// runs over NCCL (CreateNcclAllReduce through a FileStore, as ConnectGlooStageLinks makes it)
// and matches the Gloo all-reduce of the same job.
TEST(GpuNcclTest, ReplicasOnTwoGpusAllReduceOverNccl) {
  SKIP_WITHOUT_CUDA(2);
  ASSERT_TRUE(net::NcclBuilt());
  geotrain::testing::TempDir dir;
  StageAssignment job = TinyJob(dir, 1, 2);
  const auto on_own_gpu = [](StageAssignment* a, StageLinks*) {
    a->device = "cuda:" + std::to_string(a->dp_rank);
  };
  const Outcome gloo = Train(job, on_own_gpu);
  auto store = net::CreateFileStore(dir.File("nccl-store"), 2);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  job.rank_regions = {"local", "local"};
  const Outcome nccl = Train(job, [&](StageAssignment* a, StageLinks* links) {
    on_own_gpu(a, links);
    net::NcclAllReduceOptions options;
    options.rank = a->dp_rank;
    options.size = 2;
    options.device_index = a->dp_rank;
    options.group_name = "test/dp/s0";
    auto group = net::CreateNcclAllReduce(options, *store);
    ASSERT_TRUE(group.ok()) << group.status().ToString();
    links->data_parallel_device = std::move(group).value();
  });
  ExpectClose(nccl, gloo, 1e-5);
}

}  // namespace
}  // namespace geotrain::runtime
