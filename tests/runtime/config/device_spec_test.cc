// model.device and model.autocast in the job YAML (good values, every bad value with its error
// text), the seed flag that sets the device, and the rule that picks NCCL or Gloo for a
// stage's data-parallel gradient all-reduce.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/dp_backend.h"
#include "runtime/job_spec.h"
#include "runtime/stage_assignment.h"

namespace geotrain::runtime {
namespace {

// The smallest valid job; `model` adds keys to its model section (line 2).
std::string JobWithModel(const std::string& model) {
  return "name: t\nmodel: {dir: m" + (model.empty() ? "" : ", " + model) +
         "}\ndata: {train: [a.txt]}\n";
}

std::string ErrorOf(const std::string& yaml) {
  StatusOr<JobSpec> spec = ParseJobSpec(yaml);
  EXPECT_FALSE(spec.ok()) << yaml;
  return spec.ok() ? "" : spec.status().message();
}

TEST(DeviceNameTest, ParsesCpuCudaAndIndexedCuda) {
  struct Good {
    const char* name;
    bool cuda;
    int index;
  };
  for (const Good& good : {Good{"cpu", false, 0}, Good{"cuda", true, 0}, Good{"cuda:0", true, 0},
                           Good{"cuda:3", true, 3}, Good{"cuda:1023", true, 1023}}) {
    StatusOr<DeviceName> parsed = ParseDeviceName(good.name);
    ASSERT_TRUE(parsed.ok()) << good.name << ": " << parsed.status().ToString();
    EXPECT_EQ(parsed->cuda, good.cuda) << good.name;
    EXPECT_EQ(parsed->index, good.index) << good.name;
  }
  for (const char* bad : {"", "gpu", "CUDA", "cuda:", "cuda:-1", "cuda:+1", "cuda: 1", "cuda:1x",
                          "cuda:12345", "cuda0", "cpu:0", "mps"}) {
    StatusOr<DeviceName> parsed = ParseDeviceName(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.status().message(),
              "\"" + std::string(bad) + "\" is not cpu, cuda or cuda:N (N a device index)");
  }
}

TEST(DeviceSpecTest, DefaultsAreCpuWithoutAutocast) {
  StatusOr<JobSpec> spec = ParseJobSpec(JobWithModel(""));
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->base.device, "cpu");
  EXPECT_EQ(spec->base.autocast, Autocast::kOff);
  EXPECT_TRUE(spec->base.rank_regions.empty());
}

TEST(DeviceSpecTest, AcceptsEveryGoodValue) {
  struct Good {
    std::string model;
    std::string device;
    Autocast autocast;
  };
  const Good cases[] = {
      {"device: cpu", "cpu", Autocast::kOff},
      {"device: cuda", "cuda", Autocast::kOff},
      {"device: \"cuda:0\"", "cuda:0", Autocast::kOff},
      {"device: \"cuda:7\", dtype: bf16", "cuda:7", Autocast::kOff},
      {"autocast: off", "cpu", Autocast::kOff},
      {"device: cuda, autocast: bf16", "cuda", Autocast::kBf16},
      {"device: \"cuda:1\", autocast: bf16, dtype: f32", "cuda:1", Autocast::kBf16},
  };
  for (const Good& good : cases) {
    StatusOr<JobSpec> spec = ParseJobSpec(JobWithModel(good.model));
    ASSERT_TRUE(spec.ok()) << good.model << ": " << spec.status().ToString();
    EXPECT_EQ(spec->base.device, good.device) << good.model;
    EXPECT_EQ(spec->base.autocast, good.autocast) << good.model;
  }
}

TEST(DeviceSpecTest, EveryBadValueNamesTheKey) {
  const std::pair<std::string, std::string> cases[] = {
      {"device: gpu",
       "model.device: \"gpu\" is not cpu, cuda or cuda:N (N a device index) (line 2)"},
      {"device: \"cuda:\"",
       "model.device: \"cuda:\" is not cpu, cuda or cuda:N (N a device index) (line 2)"},
      {"device: \"cuda:-1\"",
       "model.device: \"cuda:-1\" is not cpu, cuda or cuda:N (N a device index) (line 2)"},
      {"device: 0", "model.device: \"0\" is not cpu, cuda or cuda:N (N a device index) (line 2)"},
      {"device: [cuda]", "model.device (line 2): expected a string, got a list"},
      {"autocast: f16",
       "model.autocast (line 2): f16 is not supported: float16 autocast needs loss scaling, "
       "which is not built (use bf16)"},
      {"autocast: fp16",
       "model.autocast (line 2): fp16 is not supported: float16 autocast needs loss scaling, "
       "which is not built (use bf16)"},
      {"autocast: fp8",
       "model.autocast (line 2): unknown value \"fp8\" (expected one of off, bf16)"},
      {"autocast: true",
       "model.autocast (line 2): unknown value \"true\" (expected one of off, bf16)"},
      {"autocast: {dtype: bf16}", "model.autocast (line 2): expected a name, got a mapping"},
      {"autocast: bf16",
       "model.autocast: bf16 runs on a CUDA device only (device is cpu); CPU autocast is not "
       "supported (line 2)"},
      {"device: cpu, autocast: bf16",
       "model.autocast: bf16 runs on a CUDA device only (device is cpu); CPU autocast is not "
       "supported (line 2)"},
      {"device: cuda, autocast: bf16, dtype: bf16",
       "model.autocast: bf16 keeps float32 parameters (master weights): it needs dtype f32, not "
       "bf16 (line 2)"},
  };
  for (const auto& [model, expected] : cases) {
    EXPECT_EQ(ErrorOf(JobWithModel(model)), expected) << model;
  }
}

TEST(DeviceSpecTest, ABadDeviceIsNotAlsoBlamedOnAutocast) {
  // Whether bf16 fits depends on the device, which is already reported.
  EXPECT_EQ(ErrorOf(JobWithModel("device: tpu, autocast: bf16")),
            "model.device: \"tpu\" is not cpu, cuda or cuda:N (N a device index) (line 2)");
  EXPECT_EQ(ErrorOf(JobWithModel("device: 5, autocast: f16")),
            "2 problems:\n"
            "  model.autocast (line 2): f16 is not supported: float16 autocast needs loss "
            "scaling, which is not built (use bf16)\n"
            "  model.device: \"5\" is not cpu, cuda or cuda:N (N a device index) (line 2)");
}

TEST(DeviceSpecTest, RoundTripsThroughYaml) {
  JobSpec spec;
  spec.name = "gpu";
  spec.base.model_dir = "m";
  spec.base.data.train = {{"a.txt", 1.0}};
  for (const auto& [device, autocast] :
       {std::pair{"cpu", Autocast::kOff}, std::pair{"cuda", Autocast::kBf16},
        std::pair{"cuda:2", Autocast::kOff}, std::pair{"cuda:3", Autocast::kBf16}}) {
    spec.base.device = device;
    spec.base.autocast = autocast;
    const std::string yaml = JobSpecToYaml(spec);
    StatusOr<JobSpec> back = ParseJobSpec(yaml);
    ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << yaml;
    EXPECT_EQ(back->base.device, device) << yaml;
    EXPECT_EQ(back->base.autocast, autocast) << yaml;
  }
}

TEST(DeviceSpecTest, RankRegionsNeedOneEntryPerRank) {
  StageAssignment a;
  a.model_dir = "m";
  a.data.train = {{"a.txt", 1.0}};
  a.num_stages = 2;
  a.dp_size = 2;
  EXPECT_TRUE(a.Validate().ok());
  a.rank_regions = {"us-east", "us-east", "eu-west", ""};
  EXPECT_TRUE(a.Validate().ok()) << a.Validate().ToString();
  a.rank_regions = {"us-east", "us-east", "eu-west"};
  EXPECT_EQ(a.Validate().message(),
            "rank_regions: 3 entries for 4 ranks (one per global rank, or none)");
}

// The assignment of stage `stage` of replica 0 of a job of `stages` x `replicas` on cuda,
// plain all-reduce, every rank in `region`.
StageAssignment CudaJob(int stages, int replicas, int stage, const std::string& region) {
  StageAssignment a;
  a.model_dir = "m";
  a.data.train = {{"a.txt", 1.0}};
  a.num_stages = stages;
  a.dp_size = replicas;
  a.stage = stage;
  a.device = "cuda:0";
  a.compression.data_parallel.mode = DataParallelMode::kAllReduce;
  a.rank_regions.assign(static_cast<size_t>(stages * replicas), region);
  return a;
}

TEST(DataParallelBackendTest, NcclOnlyForCudaAllReduceInOneRegion) {
  std::string why;
  EXPECT_EQ(ChooseDataParallelBackend(CudaJob(2, 3, 1, "us-east"), &why),
            DataParallelBackend::kNccl);
  EXPECT_EQ(why, "the 3 replicas of stage 1 are all in us-east");
  StageAssignment plain_cuda = CudaJob(1, 2, 0, "r");
  plain_cuda.device = "cuda";
  EXPECT_EQ(ChooseDataParallelBackend(plain_cuda), DataParallelBackend::kNccl);
  EXPECT_STREQ(DataParallelBackendName(DataParallelBackend::kNccl), "nccl");
  EXPECT_STREQ(DataParallelBackendName(DataParallelBackend::kGloo), "gloo");
}

TEST(DataParallelBackendTest, GlooOtherwise) {
  struct Case {
    const char* what;
    StageAssignment assignment;
    std::string why;
  };
  std::vector<Case> cases;
  cases.push_back({"cpu", CudaJob(2, 2, 0, "r"), "device is cpu"});
  cases.back().assignment.device = "cpu";
  cases.push_back({"bad device", CudaJob(2, 2, 0, "r"), "device is gpu"});
  cases.back().assignment.device = "gpu";
  cases.push_back({"one replica", CudaJob(2, 1, 0, "r"), "the stage has no replicas"});
  for (const DataParallelMode mode : {DataParallelMode::kPowerSgd, DataParallelMode::kCocktail,
                                      DataParallelMode::kQuantizedMomentum}) {
    cases.push_back({DataParallelModeName(mode), CudaJob(2, 2, 0, "r"),
                     std::string("data_parallel.mode is ") + DataParallelModeName(mode) +
                         " (its codecs run on the host)"});
    cases.back().assignment.compression.data_parallel.mode = mode;
  }
  cases.push_back(
      {"no regions", CudaJob(2, 2, 0, "r"), "the regions of the replicas are not known"});
  cases.back().assignment.rank_regions.clear();
  cases.push_back(
      {"wrong count", CudaJob(2, 2, 0, "r"), "the regions of the replicas are not known"});
  cases.back().assignment.rank_regions.pop_back();
  // Global rank = replica x stages + stage: stage 1's replicas are ranks 1 and 3.
  cases.push_back({"one unknown", CudaJob(2, 2, 1, "r"), "the region of replica 1 is not known"});
  cases.back().assignment.rank_regions[3] = "";
  cases.push_back({"two regions", CudaJob(2, 2, 1, "us-east"),
                   "the replicas span regions us-east and eu-west"});
  cases.back().assignment.rank_regions[3] = "eu-west";
  for (const Case& c : cases) {
    std::string why;
    EXPECT_EQ(ChooseDataParallelBackend(c.assignment, &why), DataParallelBackend::kGloo) << c.what;
    EXPECT_EQ(why, c.why) << c.what;
  }
  // Another stage's ranks in other regions do not matter: only this stage's replicas talk.
  StageAssignment other_stage_elsewhere = CudaJob(2, 2, 1, "us-east");
  other_stage_elsewhere.rank_regions[0] = "eu-west";
  other_stage_elsewhere.rank_regions[2] = "";
  EXPECT_EQ(ChooseDataParallelBackend(other_stage_elsewhere), DataParallelBackend::kNccl);
}

}  // namespace
}  // namespace geotrain::runtime
