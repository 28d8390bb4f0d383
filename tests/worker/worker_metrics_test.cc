// The worker's Prometheus series from hand-made step reports (read back from the text format a
// scrape returns), and the real daemon serving them on --metrics-listen.
#include "worker/worker_metrics.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "tests/testing/files_and_ports.h"
#include "tests/testing/manual_clock.h"
#include "tests/testing/temp_dir.h"
#include "tests/worker/metrics_text.h"
#include "tests/worker/worker_test_util.h"
#include "worker/task_process.h"

namespace geotrain::worker {
namespace {

namespace fs = std::filesystem;
using geotrain::v1::LinkTraffic;
using geotrain::v1::Placement;
using geotrain::v1::StepReport;
using geotrain::v1::TrafficKind;
using google::protobuf::RepeatedPtrField;
using testing::ScrapeText;
using testing::SeriesValue;

constexpr double kNow = 1.7e9;  // the fixed wall clock, Unix seconds

// A 2-stage x 2-replica job; the rank at stage 1, replica 1 is missing from the list.
RepeatedPtrField<Placement> Placements() {
  RepeatedPtrField<Placement> placements;
  const struct {
    int stage, replica;
    const char* worker;
    const char* region;
  } ranks[] = {{0, 0, "worker-1", "us-east1"},
               {1, 0, "worker-2", "eu-west1"},
               {0, 1, "worker-3", "us-east1"}};
  for (const auto& rank : ranks) {
    Placement* placement = placements.Add();
    placement->set_stage(rank.stage);
    placement->set_replica(rank.replica);
    placement->set_worker_id(rank.worker);
    placement->set_region(rank.region);
  }
  return placements;
}

LinkTraffic* AddTraffic(StepReport* report, int peer_stage, int peer_replica, TrafficKind kind,
                        bool sent, uint64_t raw, uint64_t wire, double seconds) {
  LinkTraffic* traffic = report->add_traffic();
  traffic->set_peer_stage(peer_stage);
  traffic->set_peer_replica(peer_replica);
  traffic->set_kind(kind);
  traffic->set_sent(sent);
  traffic->set_raw_bytes(raw);
  traffic->set_wire_bytes(wire);
  traffic->set_seconds(seconds);
  return traffic;
}

// Stage 0, replica 0 (on worker-1): activations to (1, 0), gradients back, data-parallel both
// ways with (0, 1), tied-embedding sync with (1, 0) and the unlisted (1, 1).
StepReport FirstStageStep(int64_t step, double step_seconds, double activation_seconds) {
  StepReport report;
  report.set_job_id("job-1");
  report.set_generation(1);
  report.set_stage(0);
  report.set_replica(0);
  report.set_step(step);
  report.set_step_seconds(step_seconds);
  report.set_tokens(256);
  report.set_forward_relative_error(0.05);
  report.set_backward_relative_error(0.5);  // nonsense for a first stage: it sends no gradients
  geotrain::v1::StepPhases* phases = report.mutable_phases();
  phases->set_forward(0.1);
  phases->set_backward(0.125);
  phases->set_encode(0.01);
  phases->set_data(0.02);
  LinkTraffic* activation = AddTraffic(&report, 1, 0, geotrain::v1::TRAFFIC_KIND_ACTIVATION, true,
                                       400000, 100000, activation_seconds);
  activation->set_bits(4);
  activation->set_latency_seconds(0.02);
  LinkTraffic* gradient =
      AddTraffic(&report, 1, 0, geotrain::v1::TRAFFIC_KIND_GRADIENT, false, 400000, 60000, 0.25);
  gradient->set_latency_seconds(0.015);
  AddTraffic(&report, 0, 1, geotrain::v1::TRAFFIC_KIND_DATA_PARALLEL, true, 200000, 50000, 0.1)
      ->set_bits(8);
  AddTraffic(&report, 0, 1, geotrain::v1::TRAFFIC_KIND_DATA_PARALLEL, false, 200000, 50000, 0.1);
  AddTraffic(&report, 1, 0, geotrain::v1::TRAFFIC_KIND_EMBEDDING, true, 20000, 20000, 0.1)
      ->set_bits(32);
  AddTraffic(&report, 1, 1, geotrain::v1::TRAFFIC_KIND_EMBEDDING, true, 1000, 1000, 0.01)
      ->set_bits(32);
  return report;
}

class WorkerMetricsTest : public ::testing::Test {
 protected:
  std::string Scrape() { return ScrapeText(*metrics_.registry()); }

  geotrain::testing::ManualClock clock_{static_cast<int64_t>(kNow) * 1000};
  WorkerMetrics metrics_{clock_};
};

TEST(DeviceLabelTest, IsCpuOrTheCudaDeviceName) {
  EXPECT_EQ(DeviceLabel("cpu"), "cpu");
  EXPECT_EQ(DeviceLabel("cuda:NVIDIA H100 80GB HBM3"), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(DeviceLabel(""), "unknown");
}

TEST_F(WorkerMetricsTest, StartsDisconnectedWithZeroSeriesAndNoIdentity) {
  const std::string text = Scrape();
  EXPECT_EQ(SeriesValue(text, "geotrain_worker_connected"), 0);
  EXPECT_EQ(SeriesValue(text, "geotrain_worker_tasks", {{"state", "starting"}}), 0);
  EXPECT_EQ(SeriesValue(text, "geotrain_worker_tasks", {{"state", "running"}}), 0);
  EXPECT_EQ(SeriesValue(text, "geotrain_task_starts_total", {{"resumed", "true"}}), 0);
  EXPECT_EQ(SeriesValue(text, "geotrain_task_starts_total", {{"resumed", "false"}}), 0);
  EXPECT_EQ(text.find("geotrain_worker_info{"), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE geotrain_task_starts_total counter"), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE geotrain_worker_connected gauge"), std::string::npos) << text;
}

TEST_F(WorkerMetricsTest, IdentityConnectionAndTasks) {
  metrics_.SetIdentity("worker-1", "us-east1", "cpu");
  metrics_.SetConnected(true);
  metrics_.SetTaskCounts(1, 0);
  metrics_.TaskStarted(/*resumed=*/false);
  metrics_.TaskStarted(/*resumed=*/true);
  metrics_.TaskStarted(/*resumed=*/true);
  std::string text = Scrape();
  EXPECT_EQ(SeriesValue(text, "geotrain_worker_info",
                        {{"worker", "worker-1"}, {"region", "us-east1"}, {"device", "cpu"}}),
            1);
  EXPECT_EQ(SeriesValue(text, "geotrain_worker_connected"), 1);
  EXPECT_EQ(SeriesValue(text, "geotrain_worker_tasks", {{"state", "starting"}}), 1);
  EXPECT_EQ(SeriesValue(text, "geotrain_task_starts_total", {{"resumed", "true"}}), 2);
  EXPECT_EQ(SeriesValue(text, "geotrain_task_starts_total", {{"resumed", "false"}}), 1);

  // A new id from the coordinator replaces the info series; the connection drops.
  metrics_.SetIdentity("worker-9", "us-east1", "cpu");
  metrics_.SetConnected(false);
  metrics_.SetTaskCounts(0, 1);
  text = Scrape();
  EXPECT_FALSE(SeriesValue(text, "geotrain_worker_info",
                           {{"worker", "worker-1"}, {"region", "us-east1"}, {"device", "cpu"}}));
  EXPECT_EQ(SeriesValue(text, "geotrain_worker_info",
                        {{"worker", "worker-9"}, {"region", "us-east1"}, {"device", "cpu"}}),
            1);
  EXPECT_EQ(SeriesValue(text, "geotrain_worker_connected"), 0);
  EXPECT_EQ(SeriesValue(text, "geotrain_worker_tasks", {{"state", "starting"}}), 0);
  EXPECT_EQ(SeriesValue(text, "geotrain_worker_tasks", {{"state", "running"}}), 1);
}

TEST_F(WorkerMetricsTest, StepsPhasesAndTokensAddUpOverSteps) {
  metrics_.SetIdentity("worker-1", "us-east1", "cpu");
  metrics_.OnStep(FirstStageStep(1, 0.3, 0.5), Placements());
  metrics_.OnStep(FirstStageStep(2, 0.2, 0.25), Placements());
  const std::string text = Scrape();
  const testing::SeriesLabels stage0{{"stage", "0"}};
  EXPECT_EQ(SeriesValue(text, "geotrain_steps_total", stage0), 2);
  EXPECT_EQ(SeriesValue(text, "geotrain_tokens_total", stage0), 512);
  EXPECT_EQ(
      SeriesValue(text, "geotrain_phase_seconds_total", {{"stage", "0"}, {"phase", "forward"}}),
      0.2);
  EXPECT_EQ(
      SeriesValue(text, "geotrain_phase_seconds_total", {{"stage", "0"}, {"phase", "backward"}}),
      0.25);
  // Every phase has a series, zero or not.
  for (const char* phase : {"forward", "backward", "encode", "decode", "send", "recv", "sync",
                            "optimizer", "data", "eval", "checkpoint"}) {
    EXPECT_TRUE(
        SeriesValue(text, "geotrain_phase_seconds_total", {{"stage", "0"}, {"phase", phase}}))
        << phase;
  }
  EXPECT_EQ(SeriesValue(text, "geotrain_phase_seconds_total", {{"stage", "0"}, {"phase", "sync"}}),
            0);

  // The histogram: 0.3 s and 0.2 s.
  EXPECT_EQ(SeriesValue(text, "geotrain_step_duration_seconds_count", stage0), 2);
  EXPECT_NEAR(SeriesValue(text, "geotrain_step_duration_seconds_sum", stage0).value_or(0), 0.5,
              1e-12);
  EXPECT_EQ(
      SeriesValue(text, "geotrain_step_duration_seconds_bucket", {{"stage", "0"}, {"le", "0.1"}}),
      0);
  EXPECT_EQ(
      SeriesValue(text, "geotrain_step_duration_seconds_bucket", {{"stage", "0"}, {"le", "0.25"}}),
      1);
  EXPECT_EQ(
      SeriesValue(text, "geotrain_step_duration_seconds_bucket", {{"stage", "0"}, {"le", "60"}}),
      2);
  EXPECT_EQ(
      SeriesValue(text, "geotrain_step_duration_seconds_bucket", {{"stage", "0"}, {"le", "+Inf"}}),
      2);
  EXPECT_NE(text.find("# TYPE geotrain_step_duration_seconds histogram"), std::string::npos);
  EXPECT_NE(text.find("# TYPE geotrain_phase_seconds_total counter"), std::string::npos);

  // A first stage has no loss.
  EXPECT_EQ(text.find("geotrain_loss{"), std::string::npos);
  EXPECT_EQ(text.find("geotrain_eval_loss{"), std::string::npos);
  // Nor a checkpoint yet.
  EXPECT_EQ(text.find("geotrain_checkpoint_step{"), std::string::npos);
}

TEST_F(WorkerMetricsTest, BytesPerLinkNameThePeerWorkerAndRegion) {
  metrics_.SetIdentity("worker-1", "us-east1", "cpu");
  metrics_.OnStep(FirstStageStep(1, 0.3, 0.5), Placements());
  metrics_.OnStep(FirstStageStep(2, 0.2, 0.25), Placements());
  const std::string text = Scrape();
  auto bytes = [&](const char* metric, const char* kind, const char* direction, const char* peer,
                   const char* region) {
    return SeriesValue(text, metric,
                       {{"stage", "0"},
                        {"kind", kind},
                        {"direction", direction},
                        {"worker", "worker-1"},
                        {"peer", peer},
                        {"peer_region", region}});
  };
  EXPECT_EQ(bytes("geotrain_raw_bytes_total", "activation", "sent", "worker-2", "eu-west1"),
            800000);
  EXPECT_EQ(bytes("geotrain_wire_bytes_total", "activation", "sent", "worker-2", "eu-west1"),
            200000);
  EXPECT_EQ(bytes("geotrain_raw_bytes_total", "gradient", "received", "worker-2", "eu-west1"),
            800000);
  EXPECT_EQ(bytes("geotrain_wire_bytes_total", "gradient", "received", "worker-2", "eu-west1"),
            120000);
  EXPECT_EQ(bytes("geotrain_wire_bytes_total", "data_parallel", "sent", "worker-3", "us-east1"),
            100000);
  EXPECT_EQ(bytes("geotrain_wire_bytes_total", "data_parallel", "received", "worker-3", "us-east1"),
            100000);
  EXPECT_EQ(bytes("geotrain_wire_bytes_total", "embedding", "sent", "worker-2", "eu-west1"), 40000);
  // (1, 1) is not in the placements.
  EXPECT_EQ(bytes("geotrain_wire_bytes_total", "embedding", "sent", "unknown", "unknown"), 2000);
  // Nothing was received from (1, 0) as activations.
  EXPECT_FALSE(
      bytes("geotrain_wire_bytes_total", "activation", "received", "worker-2", "eu-west1"));

  // Bits per link, for what this worker sends.
  auto bits = [&](const char* peer, const char* region, const char* kind) {
    return SeriesValue(
        text, "geotrain_link_bits",
        {{"worker", "worker-1"}, {"peer", peer}, {"peer_region", region}, {"kind", kind}});
  };
  EXPECT_EQ(bits("worker-2", "eu-west1", "activation"), 4);
  EXPECT_EQ(bits("worker-3", "us-east1", "data_parallel"), 8);
  EXPECT_EQ(bits("worker-2", "eu-west1", "embedding"), 32);
  EXPECT_FALSE(bits("worker-2", "eu-west1", "gradient"));  // received only

  // The first stage sends activations, never gradients.
  EXPECT_EQ(SeriesValue(text, "geotrain_compression_relative_error",
                        {{"stage", "0"}, {"kind", "activation"}}),
            0.05);
  EXPECT_FALSE(SeriesValue(text, "geotrain_compression_relative_error",
                           {{"stage", "0"}, {"kind", "gradient"}}));

  // Latency: the fastest small frame either way.
  EXPECT_EQ(
      SeriesValue(text, "geotrain_link_latency_seconds",
                  {{"worker", "worker-1"}, {"peer", "worker-2"}, {"peer_region", "eu-west1"}}),
      0.015);
}

TEST_F(WorkerMetricsTest, LinkThroughputIsTheCorrectedMeanOfLargeTransfers) {
  metrics_.SetIdentity("worker-1", "us-east1", "cpu");
  auto throughput = [&](const std::string& text, const char* peer, const char* region,
                        const char* direction) {
    return SeriesValue(text, "geotrain_link_throughput_bytes_per_second",
                       {{"worker", "worker-1"},
                        {"peer", peer},
                        {"peer_region", region},
                        {"direction", direction}});
  };
  // To worker-2, summed over kinds: activations 100000 B in 0.5 s and embeddings 20000 B in
  // 0.1 s: 200000 B/s, returned exactly as the first sample.
  metrics_.OnStep(FirstStageStep(1, 0.3, 0.5), Placements());
  std::string text = Scrape();
  const double first = 120000 / 0.6;
  ASSERT_TRUE(throughput(text, "worker-2", "eu-west1", "sent"));
  EXPECT_NEAR(*throughput(text, "worker-2", "eu-west1", "sent"), first, first * 1e-12);
  // Below 64 KiB: gradients from worker-2 (60000 B), data-parallel either way (50000 B).
  EXPECT_FALSE(throughput(text, "worker-2", "eu-west1", "received"));
  EXPECT_FALSE(throughput(text, "worker-3", "us-east1", "sent"));
  EXPECT_FALSE(throughput(text, "worker-3", "us-east1", "received"));
  EXPECT_FALSE(throughput(text, "unknown", "unknown", "sent"));

  // Then 120000 B in 0.35 s: (0.8 x1 + x2) / 1.8.
  metrics_.OnStep(FirstStageStep(2, 0.2, 0.25), Placements());
  text = Scrape();
  const double second = (0.8 * first + 120000 / 0.35) / 1.8;
  ASSERT_TRUE(throughput(text, "worker-2", "eu-west1", "sent"));
  EXPECT_NEAR(*throughput(text, "worker-2", "eu-west1", "sent"), second, second * 1e-12);
  EXPECT_NE(text.find("# TYPE geotrain_link_throughput_bytes_per_second gauge"), std::string::npos);
}

TEST_F(WorkerMetricsTest, LastStageLossEvalAndCheckpoint) {
  metrics_.SetIdentity("worker-2", "eu-west1", "NVIDIA H100 80GB HBM3");
  StepReport report;
  report.set_stage(1);
  report.set_replica(0);
  report.set_step(50);
  report.set_step_seconds(1.5);
  report.set_loss(3.25);
  report.set_forward_relative_error(0.5);  // a last stage sends no activations
  report.set_backward_relative_error(0.125);
  report.set_checkpointed(true);
  report.mutable_phases()->set_checkpoint(2.5);
  AddTraffic(&report, 0, 0, geotrain::v1::TRAFFIC_KIND_GRADIENT, true, 400000, 100000, 0.5)
      ->set_bits(8);
  AddTraffic(&report, 0, 0, geotrain::v1::TRAFFIC_KIND_ACTIVATION, false, 400000, 100000, 0.5);
  metrics_.OnStep(report, Placements());

  std::string text = Scrape();
  const testing::SeriesLabels stage1{{"stage", "1"}};
  EXPECT_EQ(SeriesValue(text, "geotrain_loss", stage1), 3.25);
  EXPECT_FALSE(SeriesValue(text, "geotrain_eval_loss", stage1));  // none yet
  EXPECT_EQ(SeriesValue(text, "geotrain_checkpoint_duration_seconds", stage1), 2.5);
  EXPECT_EQ(SeriesValue(text, "geotrain_checkpoint_last_timestamp_seconds", stage1), kNow);
  EXPECT_EQ(SeriesValue(text, "geotrain_checkpoint_step", stage1), 50);
  EXPECT_EQ(SeriesValue(text, "geotrain_compression_relative_error",
                        {{"stage", "1"}, {"kind", "gradient"}}),
            0.125);
  EXPECT_FALSE(SeriesValue(text, "geotrain_compression_relative_error",
                           {{"stage", "1"}, {"kind", "activation"}}));
  EXPECT_EQ(SeriesValue(text, "geotrain_wire_bytes_total",
                        {{"stage", "1"},
                         {"kind", "gradient"},
                         {"direction", "sent"},
                         {"worker", "worker-2"},
                         {"peer", "worker-1"},
                         {"peer_region", "us-east1"}}),
            100000);

  // The next step evaluates and writes no checkpoint: the checkpoint series keep their values,
  // the loss moves.
  report.set_step(51);
  report.set_loss(3.0);
  report.set_eval_loss(3.5);
  report.set_checkpointed(false);
  report.mutable_phases()->set_checkpoint(0);
  metrics_.OnStep(report, Placements());
  text = Scrape();
  EXPECT_EQ(SeriesValue(text, "geotrain_loss", stage1), 3.0);
  EXPECT_EQ(SeriesValue(text, "geotrain_eval_loss", stage1), 3.5);
  EXPECT_FALSE(SeriesValue(text, "geotrain_eval_score", {{"stage", "1"}, {"score", "f1"}}));

  // A sequence classifier's evaluation also scores it.
  report.set_step(52);
  report.mutable_eval_scores()->set_accuracy(0.875);
  report.mutable_eval_scores()->set_f1(0.5);
  report.mutable_eval_scores()->set_mcc(-0.25);
  metrics_.OnStep(report, Placements());
  text = Scrape();
  EXPECT_EQ(SeriesValue(text, "geotrain_eval_score", {{"stage", "1"}, {"score", "accuracy"}}),
            0.875);
  EXPECT_EQ(SeriesValue(text, "geotrain_eval_score", {{"stage", "1"}, {"score", "f1"}}), 0.5);
  EXPECT_EQ(SeriesValue(text, "geotrain_eval_score", {{"stage", "1"}, {"score", "mcc"}}), -0.25);
  EXPECT_EQ(SeriesValue(text, "geotrain_checkpoint_step", stage1), 50);
  EXPECT_EQ(SeriesValue(text, "geotrain_checkpoint_duration_seconds", stage1), 2.5);
}

TEST_F(WorkerMetricsTest, PeakHostMemoryOfTheNewestStepThatReportsIt) {
  StepReport report;
  report.set_stage(1);
  report.set_step(1);
  metrics_.OnStep(report, Placements());
  const testing::SeriesLabels stage1{{"stage", "1"}};
  EXPECT_FALSE(SeriesValue(Scrape(), "geotrain_peak_host_memory_bytes", stage1));  // not known

  report.set_step(2);
  report.set_peak_host_memory_bytes(3ull << 30);
  metrics_.OnStep(report, Placements());
  const std::string text = Scrape();
  EXPECT_EQ(SeriesValue(text, "geotrain_peak_host_memory_bytes", stage1), 3.0 * (1ull << 30));
  EXPECT_NE(text.find("# TYPE geotrain_peak_host_memory_bytes gauge"), std::string::npos);
}

TEST_F(WorkerMetricsTest, GarbageFiguresDoNotPoisonTheCounters) {
  metrics_.SetIdentity("worker-1", "us-east1", "cpu");
  StepReport report = FirstStageStep(1, 0.3, 0.5);
  metrics_.OnStep(report, Placements());
  report.set_step_seconds(std::numeric_limits<double>::quiet_NaN());
  report.mutable_phases()->set_forward(-1);
  report.mutable_phases()->set_backward(std::numeric_limits<double>::infinity());
  report.set_tokens(-5);
  // A kind this build does not know (a newer child's) is left out.
  AddTraffic(&report, 1, 0, static_cast<TrafficKind>(42), true, 1 << 20, 1 << 20, 1);
  metrics_.OnStep(report, Placements());
  const std::string text = Scrape();
  EXPECT_EQ(SeriesValue(text, "geotrain_steps_total", {{"stage", "0"}}), 2);
  EXPECT_EQ(SeriesValue(text, "geotrain_step_duration_seconds_count", {{"stage", "0"}}), 1);
  EXPECT_EQ(
      SeriesValue(text, "geotrain_phase_seconds_total", {{"stage", "0"}, {"phase", "forward"}}),
      0.1);
  EXPECT_EQ(
      SeriesValue(text, "geotrain_phase_seconds_total", {{"stage", "0"}, {"phase", "backward"}}),
      0.125);
  EXPECT_EQ(SeriesValue(text, "geotrain_tokens_total", {{"stage", "0"}}), 256);
  EXPECT_EQ(text.find("kind=\"\""), std::string::npos) << text;
}

// --- The daemon ---

std::string WorkerBinary() {
  std::error_code ec;
  const fs::path path = fs::read_symlink("/proc/self/exe", ec).parent_path() / "geotrain-worker";
  return fs::exists(path, ec) ? path.string() : std::string();
}

// GET `path` from 127.0.0.1:port over a plain socket, HTTP/1.0 (the server closes when done);
// the whole response, headers included, or "" when the connection failed.
std::string HttpGet(int port, const std::string& path) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  // A bound against a hung server, not a timing check.
  timeval patience{static_cast<time_t>(testing::kPatience.count()), 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof(patience));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &patience, sizeof(patience));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string response;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0) {
    const std::string request = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
        static_cast<ssize_t>(request.size())) {
      char buffer[4096];
      ssize_t n;
      while ((n = ::recv(fd, buffer, sizeof(buffer), 0)) > 0) response.append(buffer, n);
    }
  }
  ::close(fd);
  return response;
}

class WorkerDaemonMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    binary_ = WorkerBinary();
    if (binary_.empty()) GTEST_SKIP() << "geotrain-worker is not built next to worker_tests";
  }

  // The daemon with a coordinator nobody listens on, and `metrics_listen`.
  std::unique_ptr<TaskProcess> StartDaemon(const std::string& metrics_listen) {
    ProcessSpec spec{{binary_, "--coordinator",
                      "127.0.0.1:" + std::to_string(geotrain::testing::FreeLoopbackPort()),
                      "--advertise", "127.0.0.1", "--region", "test-region", "--work-dir",
                      dir_.File("work"), "--metrics-listen", metrics_listen},
                     {},
                     {}};
    auto process = TaskProcess::Start(spec, output_.OnLine(), output_.OnExit());
    EXPECT_TRUE(process.ok()) << process.status().ToString();
    return process.ok() ? std::move(process).value() : nullptr;
  }

  bool AnyErrorLineHas(const std::string& text) const {
    for (const std::string& line : output_.err()) {
      if (line.find(text) != std::string::npos) return true;
    }
    return false;
  }

  std::string binary_;
  geotrain::testing::TempDir dir_;
  testing::ProcessOutput output_;
};

TEST_F(WorkerDaemonMetricsTest, ServesMetricsOnTheBoundPortBeforeRegistering) {
  auto daemon = StartDaemon("127.0.0.1:0");
  ASSERT_NE(daemon, nullptr);
  const std::string prefix = "metrics on 127.0.0.1:";
  int port = 0;
  ASSERT_TRUE(testing::Eventually([&] {
    for (const std::string& line : output_.out()) {
      if (line.rfind(prefix, 0) == 0) port = std::stoi(line.substr(prefix.size()));
    }
    return port != 0 || daemon->ended();
  }));
  ASSERT_GT(port, 0) << ::testing::PrintToString(output_.err());

  const std::string response = HttpGet(port, "/metrics");
  EXPECT_EQ(response.rfind("HTTP/1.", 0), 0u) << response;
  const size_t body = response.find("\r\n\r\n");
  ASSERT_NE(body, std::string::npos) << response;
  const std::string text = response.substr(body + 4);
  EXPECT_NE(text.find("geotrain_build_info{"), std::string::npos) << text;
  EXPECT_EQ(SeriesValue(text, "geotrain_worker_connected"), 0) << text;
  EXPECT_EQ(SeriesValue(text, "geotrain_worker_tasks", {{"state", "running"}}), 0) << text;

  // Once it tried to register it is in its main loop, where SIGTERM is an orderly shutdown (before
  // its handler is installed a SIGTERM just ends it).
  ASSERT_TRUE(testing::Eventually([&] { return AnyErrorLineHas("(attempt 1)"); }))
      << ::testing::PrintToString(output_.err());
  daemon->Stop(std::chrono::seconds(30));
  daemon->Wait();
  EXPECT_EQ(output_.exit().code(), 0) << ::testing::PrintToString(output_.err());
}

TEST_F(WorkerDaemonMetricsTest, AMalformedAddressIsABadFlag) {
  auto daemon = StartDaemon("9401");
  ASSERT_NE(daemon, nullptr);
  daemon->Wait();
  EXPECT_EQ(output_.exit().code(), 2);
  EXPECT_TRUE(AnyErrorLineHas("--metrics-listen: \"9401\" is not HOST:PORT"))
      << ::testing::PrintToString(output_.err());
}

TEST_F(WorkerDaemonMetricsTest, ABusyPortEndsTheDaemonNamingTheFlag) {
  // Hold a listening socket on a loopback port for the whole test.
  const int holder = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(holder, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  ASSERT_EQ(::bind(holder, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(::listen(holder, 1), 0);
  ASSERT_EQ(::getsockname(holder, reinterpret_cast<sockaddr*>(&address), &length), 0);
  const int port = ntohs(address.sin_port);

  auto daemon = StartDaemon("127.0.0.1:" + std::to_string(port));
  ASSERT_NE(daemon, nullptr);
  daemon->Wait();
  ::close(holder);
  EXPECT_EQ(output_.exit().code(), 1);
  EXPECT_TRUE(AnyErrorLineHas("--metrics-listen: cannot serve metrics on 127.0.0.1:" +
                              std::to_string(port)))
      << ::testing::PrintToString(output_.err());
  EXPECT_TRUE(output_.out().empty()) << ::testing::PrintToString(output_.out());
}

}  // namespace
}  // namespace geotrain::worker
