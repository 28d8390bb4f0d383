// The table and JSON views of the coordinator's answers.
#include "cli/control_tables.h"

#include <gtest/gtest.h>

#include "cli/control_json.h"
#include "cli/text_table.h"

namespace geotrain::cli {
namespace {

constexpr int64_t kNowMs = 1709294463000;

v1::Job SampleJob() {
  v1::Job job;
  job.set_id("job-3");
  job.set_name("gpt2-tiny");
  job.set_state(v1::JOB_STATE_RUNNING);
  job.set_num_stages(2);
  job.set_replicas(1);
  job.set_generation(2);
  job.set_restarts(1);
  job.set_max_restarts(3);
  job.set_steps_lost(20);
  job.set_submitted_unix_ms(kNowMs - 300'000);
  v1::JobProgress& p = *job.mutable_progress();
  p.set_step(120);
  p.set_total_steps(200);
  p.set_loss(3.412);
  p.set_first_loss(4.102);
  p.set_raw_bytes_forward(8'000'000);
  p.set_wire_bytes_forward(1'000'000);
  p.set_raw_bytes(8'000'000);
  p.set_wire_bytes(1'000'000);
  p.set_checkpoint_step(100);
  p.set_eta_seconds(3723);
  for (int stage = 0; stage < 2; ++stage) {
    v1::Placement& placement = *job.add_placements();
    placement.set_stage(stage);
    placement.set_worker_id("w-" + std::to_string(stage + 1));
    placement.set_region(stage == 0 ? "us-east1" : "eu-west4");
  }
  return job;
}

TEST(TextTableTest, PadsColumnsAndTrimsTrailingSpace) {
  TextTable table({"ID", "NAME", "X"});
  table.AddRow({"job-10", "a", ""});
  table.AddRow({"job-9", "longer"});
  EXPECT_EQ(table.Render(),
            "ID      NAME    X\n"
            "job-10  a\n"
            "job-9   longer\n");
}

TEST(ControlTablesTest, JobStatusShowsEveryFigure) {
  const std::string text = FormatJobStatus(SampleJob());
  for (const char* expected :
       {"id          job-3\n", "name        gpt2-tiny\n", "state       running\n",
        "message     -\n", "generation  2\n", "restarts    1 of 3\n", "steps lost  20\n",
        "step        120/200\n", "loss        4.102 -> 3.412\n", "eval loss   -\n",
        "checkpoint  step 100\n", "ETA         1:02:03\n", "forward        8.0 MB  1.0 MB  8.0x\n",
        "backward       0 B     0 B     -\n", "total          8.0 MB  1.0 MB  8.0x\n",
        "placements:\n", "  stage  replica  worker  region\n",
        "  1      0        w-2     eu-west4\n"}) {
    EXPECT_NE(text.find(expected), std::string::npos) << "missing '" << expected << "' in\n"
                                                      << text;
  }
}

TEST(ControlTablesTest, JobListHasOneRowPerJob) {
  v1::ListJobsResponse jobs;
  *jobs.add_jobs() = SampleJob();
  v1::Job& queued = *jobs.add_jobs();
  queued.set_id("job-4");
  queued.set_state(v1::JOB_STATE_QUEUED);
  queued.set_submitted_unix_ms(kNowMs - 5'000);
  EXPECT_EQ(FormatJobList(jobs, kNowMs),
            "ID     NAME       STATE    STEP     LOSS   AGE\n"
            "job-3  gpt2-tiny  running  120/200  3.412  5m\n"
            "job-4  -          queued   0/?      -      5s\n");
}

TEST(ControlTablesTest, WorkerList) {
  v1::ListWorkersResponse workers;
  v1::Worker& busy = *workers.add_workers();
  busy.set_id("w-1");
  busy.set_state(v1::WORKER_STATE_BUSY);
  busy.mutable_capabilities()->set_region("us-east1");
  busy.mutable_capabilities()->set_advertise_address("10.0.0.5");
  busy.mutable_capabilities()->set_device_kind("cpu");
  busy.mutable_capabilities()->set_device_memory_bytes(64'000'000'000);
  busy.mutable_capabilities()->set_cpu_count(16);
  busy.set_job_id("job-3");
  busy.set_stage(1);
  busy.set_last_heartbeat_unix_ms(kNowMs - 2'000);
  v1::Worker& dead = *workers.add_workers();
  dead.set_id("w-2");
  dead.set_state(v1::WORKER_STATE_DEAD);
  EXPECT_EQ(FormatWorkerList(workers, kNowMs),
            "ID   STATE  REGION    ADDRESS   DEVICE  MEMORY   CPUS  TASK        HEARTBEAT\n"
            "w-1  busy   us-east1  10.0.0.5  cpu     64.0 GB  16    job-3 s1r0  2s ago\n"
            "w-2  dead   -         -         -       -        -     -           -\n");
}

TEST(ControlTablesTest, ListsFromACoordinatorWhoseStoreFailedSaySoFirst) {
  const std::string failure = "writing job-3: /var/lib/geotrain/coordinator.db: disk is full";
  const std::string line =
      "coordinator: state store failed: " + failure + "; no changes accepted\n";
  v1::ListJobsResponse jobs;
  *jobs.add_jobs() = SampleJob();
  v1::ListWorkersResponse workers;
  workers.add_workers()->set_id("w-1");
  const std::string jobs_table = FormatJobList(jobs, kNowMs);
  const std::string workers_table = FormatWorkerList(workers, kNowMs);
  EXPECT_EQ(jobs_table.find("coordinator:"), std::string::npos) << jobs_table;
  EXPECT_EQ(workers_table.find("coordinator:"), std::string::npos) << workers_table;

  jobs.set_state_store_failure(failure);
  workers.set_state_store_failure(failure);
  EXPECT_EQ(FormatJobList(jobs, kNowMs), line + jobs_table);
  EXPECT_EQ(FormatWorkerList(workers, kNowMs), line + workers_table);
}

TEST(ControlTablesTest, JobStatusShowsAClassifiersScores) {
  v1::Job job = SampleJob();
  EXPECT_EQ(FormatJobStatus(job).find("eval scores"), std::string::npos);
  job.mutable_progress()->mutable_eval_scores()->set_accuracy(0.875);
  job.mutable_progress()->mutable_eval_scores()->set_f1(0.5);
  job.mutable_progress()->mutable_eval_scores()->set_mcc(-0.25);
  EXPECT_NE(FormatJobStatus(job).find("eval scores  accuracy 0.875, F1 0.500, MCC -0.250\n"),
            std::string::npos)
      << FormatJobStatus(job);
}

TEST(ControlTablesTest, QueuedJobSaysWhatItWaitsFor) {
  v1::Job job;
  job.set_id("job-4");
  job.set_state(v1::JOB_STATE_QUEUED);
  job.set_waiting_for("2 idle workers with a CUDA device; 0 of the 3 idle now qualify");
  EXPECT_NE(FormatJobStatus(job).find(
                "waiting for  2 idle workers with a CUDA device; 0 of the 3 idle now qualify\n"),
            std::string::npos)
      << FormatJobStatus(job);
  EXPECT_EQ(FormatJobStatus(SampleJob()).find("waiting for"), std::string::npos);
}

TEST(ControlTablesTest, WorkerListCountsGpus) {
  v1::ListWorkersResponse workers;
  v1::Worker& worker = *workers.add_workers();
  worker.set_id("w-1");
  worker.mutable_capabilities()->set_device_kind("cuda:NVIDIA H100 80GB HBM3");
  worker.mutable_capabilities()->set_cuda_device_count(8);
  EXPECT_NE(FormatWorkerList(workers, kNowMs).find("cuda:NVIDIA H100 80GB HBM3 x8"),
            std::string::npos);
  worker.mutable_capabilities()->set_cuda_device_count(1);
  EXPECT_EQ(FormatWorkerList(workers, kNowMs).find(" x1"), std::string::npos);
}

TEST(ControlTablesTest, LinkMatrixIsBySourceAndDestination) {
  v1::LinkMatrix links;
  const auto add = [&](const char* src, const char* src_region, const char* dst,
                       const char* dst_region, double throughput) {
    v1::Link& link = *links.add_links();
    link.set_src_worker_id(src);
    link.set_src_region(src_region);
    link.set_dst_worker_id(dst);
    link.set_dst_region(dst_region);
    link.set_throughput_bytes_per_second(throughput);
  };
  add("w-1", "us-east1", "w-2", "eu-west4", 12.5e6);
  add("w-2", "eu-west4", "w-1", "us-east1", 0);  // not measured yet
  EXPECT_EQ(FormatLinkMatrix(links),
            "from \\ to       w-1 (us-east1)  w-2 (eu-west4)\n"
            "w-1 (us-east1)  -               12.5 MB/s\n"
            "w-2 (eu-west4)  -               -\n");
  EXPECT_EQ(FormatLinkMatrix(v1::LinkMatrix()), "no links (fewer than two live workers)\n");
}

TEST(ControlTablesTest, LinkMatrixShowsLatencyBesideThroughput) {
  v1::LinkMatrix links;
  const auto add = [&](const char* src, const char* dst, double throughput, double latency) {
    v1::Link& link = *links.add_links();
    link.set_src_worker_id(src);
    link.set_dst_worker_id(dst);
    link.set_throughput_bytes_per_second(throughput);
    link.set_latency_seconds(latency);
  };
  add("w-1", "w-2", 118e6, 0.012);
  add("w-2", "w-1", 0, 0.0034);  // latency from small frames only
  add("w-1", "w-3", 2.1e6, 1.25);
  add("w-3", "w-1", 0, 0);
  add("w-2", "w-3", 0, 0);
  add("w-3", "w-2", 950e3, 0.0002);
  EXPECT_EQ(FormatLinkMatrix(links),
            "from \\ to  w-1      w-2             w-3\n"
            "w-1        -        118 MB/s 12ms   2.1 MB/s 1.2s\n"
            "w-2        - 3.4ms  -               -\n"
            "w-3        -        950 kB/s 0.2ms  -\n");
}

TEST(ControlJsonTest, JobIsOneLineWithProtoNamesAndEveryField) {
  const StatusOr<std::string> json = ToJsonLine(SampleJob());
  ASSERT_TRUE(json.ok()) << json.status().ToString();
  EXPECT_EQ(json->find('\n'), std::string::npos);
  // 64-bit integers are strings in protobuf's JSON mapping; doubles and 32-bit ints are numbers.
  EXPECT_NE(json->find("\"progress\":{\"step\":\"120\",\"total_steps\":\"200\",\"loss\":3.412"),
            std::string::npos)
      << *json;
  EXPECT_NE(json->find("\"state\":\"JOB_STATE_RUNNING\""), std::string::npos) << *json;
  EXPECT_NE(json->find("\"eval_loss\":0"), std::string::npos) << *json;  // zero still written
  EXPECT_NE(json->find("\"message\":\"\""), std::string::npos) << *json;
  EXPECT_NE(json->find("\"generation\":2"), std::string::npos) << *json;
}

}  // namespace
}  // namespace geotrain::cli
