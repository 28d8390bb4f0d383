// The coordinator's metrics page: the families a core in many states produces, serialized the way
// Prometheus reads them, and the real geotrain-coordinator serving them on --metrics-listen.
#include "coordinator/coordinator_metrics.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <prometheus/text_serializer.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include "coordinator/kv_store.h"
#include "coordinator/kv_store_scopes.h"
#include "tests/coordinator/coordinator_test_support.h"
#include "tests/testing/manual_clock.h"

namespace geotrain::coordinator {
namespace {

using geotrain::testing::ManualClock;
using testing::RecordingSession;
using testing::TempDir;
using testing::TinyJobYaml;

constexpr int64_t kStart = 1'700'000'000'000;

// A serialized page: each sample's "name{labels}" -> value, each family's name -> type.
struct Page {
  std::string text;
  std::map<std::string, double> samples;
  std::map<std::string, std::string> types;

  bool Has(const std::string& series) const { return samples.count(series) > 0; }
  double At(const std::string& series) const {
    const auto it = samples.find(series);
    EXPECT_NE(it, samples.end()) << "no series " << series << " in\n" << text;
    return it == samples.end() ? -1 : it->second;
  }
  // How many samples of `name` carry `label` (`job_id="job-3"`: the closing quote keeps job-13
  // out).
  int Count(const std::string& name, const std::string& label = "") const {
    int count = 0;
    for (const auto& [series, value] : samples) {
      if (series.rfind(name + "{", 0) == 0 && series.find(label) != std::string::npos) ++count;
    }
    return count;
  }
};

Page Parse(const std::string& text) {
  Page page;
  page.text = text;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("# TYPE ", 0) == 0) {
      std::istringstream words(line.substr(7));
      std::string name, type;
      words >> name >> type;
      page.types[name] = type;
    } else if (!line.empty() && line[0] != '#') {
      const size_t space = line.rfind(' ');
      page.samples[line.substr(0, space)] = std::stod(line.substr(space + 1));
    }
  }
  return page;
}

class CoordinatorMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = OpenSqliteStateStore(dir_.path());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(*store);
    scopes_ = KvStoreScopes(&kv_);
    CoordinatorOptions options;
    options.heartbeat_interval_ms = 1000;
    options.heartbeat_timeout_ms = 10000;
    options.reattach_grace_ms = 10000;
    auto core = CoordinatorCore::Create(options, store_.get(), scopes_.get(), &clock_);
    ASSERT_TRUE(core.ok()) << core.status().ToString();
    core_ = std::move(*core);
    metrics_ = std::make_unique<CoordinatorMetrics>(core_.get());
  }

  Page Scrape() { return Parse(prometheus::TextSerializer().Serialize(metrics_->Collect())); }

  std::string Register() {
    v1::RegisterRequest request;
    request.mutable_capabilities()->set_region("us");
    auto response = core_->Register(request);
    EXPECT_TRUE(response.ok()) << response.status().ToString();
    return response->worker_id();
  }

  void Connect(const std::string& worker_id) {
    v1::SessionHello hello;
    hello.set_worker_id(worker_id);
    auto session = std::make_shared<RecordingSession>();
    auto id = core_->OpenSession(hello, session);
    ASSERT_TRUE(id.ok()) << id.status().ToString();
    sessions_[worker_id] = session;
    session_ids_[worker_id] = *id;
  }

  void Send(const std::string& worker_id, const v1::WorkerMessage& message) {
    Status status = core_->HandleWorkerMessage(worker_id, session_ids_[worker_id], message);
    ASSERT_TRUE(status.ok()) << status.ToString();
  }

  void Heartbeat(const std::string& worker_id) {
    v1::WorkerMessage message;
    message.mutable_heartbeat()->set_unix_ms(clock_.NowUnixMs());
    Send(worker_id, message);
  }

  std::string Submit(int replicas) {
    v1::SubmitJobRequest request;
    request.set_spec_yaml(TinyJobYaml(/*stages=*/1, replicas));
    auto job = core_->SubmitJob(request);
    EXPECT_TRUE(job.ok()) << job.status().ToString();
    return job->id();
  }

  v1::JobState StateOf(const std::string& job_id) {
    auto job = core_->GetJob(job_id);
    EXPECT_TRUE(job.ok()) << job.status().ToString();
    return job.ok() ? job->state() : v1::JOB_STATE_UNSPECIFIED;
  }

  // Ticks and returns the assignments `workers` received, by worker.
  std::map<std::string, v1::Assignment> Place(const std::vector<std::string>& workers) {
    core_->Tick();
    std::map<std::string, v1::Assignment> assigned;
    for (const std::string& id : workers) {
      if (sessions_.count(id) == 0) continue;
      for (const v1::CoordinatorMessage& m : sessions_[id]->Take()) {
        if (m.has_assign()) assigned[id] = m.assign();
      }
    }
    return assigned;
  }

  void ReportTask(const std::string& worker_id, const v1::Assignment& a, v1::TaskState state,
                  bool permanent = false) {
    v1::WorkerMessage message;
    v1::TaskStatus* task = message.mutable_task();
    task->set_job_id(a.job_id());
    task->set_generation(a.generation());
    task->set_stage(a.stage());
    task->set_replica(a.replica());
    task->set_state(state);
    task->set_permanent(permanent);
    if (state == v1::TASK_STATE_FAILED) task->set_exit_code(permanent ? 2 : 1);
    Send(worker_id, message);
  }

  // One step of one rank that sent (k+1) * 100 raw and (k+1) * 10 wire bytes of kind k
  // (activation, gradient, data_parallel, embedding).
  void ReportStep(const std::string& worker_id, const v1::Assignment& a, int64_t step,
                  bool checkpointed, std::optional<double> eval_loss = std::nullopt) {
    v1::WorkerMessage message;
    v1::StepReport* report = message.mutable_steps()->add_reports();
    report->set_job_id(a.job_id());
    report->set_generation(a.generation());
    report->set_stage(a.stage());
    report->set_replica(a.replica());
    report->set_step(step);
    report->set_step_seconds(0.5);
    report->set_loss(10.0 - static_cast<double>(step));
    if (eval_loss.has_value()) report->set_eval_loss(*eval_loss);
    report->set_checkpointed(checkpointed);
    report->set_raw_bytes_forward(100);
    report->set_wire_bytes_forward(10);
    report->set_raw_bytes_backward(200);
    report->set_wire_bytes_backward(20);
    report->set_raw_bytes_dp(300);
    report->set_wire_bytes_dp(30);
    report->set_raw_bytes_embedding(400);
    report->set_wire_bytes_embedding(40);
    Send(worker_id, message);
  }

  TempDir dir_;
  ManualClock clock_{kStart};
  KvStore kv_;
  std::unique_ptr<RendezvousScopes> scopes_;
  std::unique_ptr<StateStore> store_;
  std::unique_ptr<CoordinatorCore> core_;
  std::unique_ptr<CoordinatorMetrics> metrics_;
  std::map<std::string, std::shared_ptr<RecordingSession>> sessions_;
  std::map<std::string, uint64_t> session_ids_;
};

TEST_F(CoordinatorMetricsTest, EmptyCoordinatorShowsZeroForEveryState) {
  const Page page = Scrape();
  for (const char* state : {"idle", "busy", "disconnected", "dead"}) {
    EXPECT_EQ(page.At(std::string("geotrain_coordinator_workers{state=\"") + state + "\"}"), 0)
        << state;
  }
  for (const char* state :
       {"queued", "placing", "running", "recovering", "succeeded", "failed", "cancelled"}) {
    EXPECT_EQ(page.At(std::string("geotrain_coordinator_jobs{state=\"") + state + "\"}"), 0)
        << state;
  }
  EXPECT_EQ(page.samples.size(), 11u) << page.text;
  EXPECT_EQ(page.types.at("geotrain_coordinator_workers"), "gauge");
  EXPECT_EQ(page.types.at("geotrain_coordinator_jobs"), "gauge");
}

TEST_F(CoordinatorMetricsTest, LinkTableSeriesPerMeasuredLink) {
  const std::string a = Register();  // region "us"
  const std::string b = Register();
  Connect(a);
  Connect(b);
  v1::WorkerMessage message;
  v1::ProbeResult* ok = message.mutable_probes()->add_results();
  ok->set_dst_worker_id(b);
  ok->set_throughput_bytes_per_second(2.5e7);
  ok->set_latency_seconds(0.03);
  Send(a, message);
  v1::WorkerMessage failed;
  v1::ProbeResult* error = failed.mutable_probes()->add_results();
  error->set_dst_worker_id(a);
  error->set_error("timed out");
  Send(b, failed);

  const Page page = Scrape();
  const std::string ends =
      "{src_worker=\"" + a + "\",dst_worker=\"" + b + "\",src_region=\"us\",dst_region=\"us\"";
  EXPECT_EQ(page.At("geotrain_coordinator_link_throughput_bytes_per_second" + ends + "}"), 2.5e7);
  EXPECT_EQ(page.At("geotrain_coordinator_link_latency_seconds" + ends + "}"), 0.03);
  EXPECT_EQ(page.At("geotrain_coordinator_link_samples_total" + ends + ",source=\"probe\"}"), 1);
  EXPECT_EQ(page.At("geotrain_coordinator_link_samples_total" + ends + ",source=\"passive\"}"), 0);
  EXPECT_EQ(page.At("geotrain_coordinator_link_probe_failures_total{src_worker=\"" + b +
                    "\",dst_worker=\"" + a + "\"}"),
            1);
  // The failed link has no estimate, so no throughput series; nothing else exists.
  EXPECT_EQ(page.Count("geotrain_coordinator_link_throughput_bytes_per_second"), 1);
  // Both known links have a failure counter, the successful one at 0.
  EXPECT_EQ(page.At("geotrain_coordinator_link_probe_failures_total{src_worker=\"" + a +
                    "\",dst_worker=\"" + b + "\"}"),
            0);
  EXPECT_EQ(page.Count("geotrain_coordinator_link_probe_failures_total"), 2);
  EXPECT_EQ(page.types.at("geotrain_coordinator_link_samples_total"), "counter");
  EXPECT_EQ(page.types.at("geotrain_coordinator_link_latency_seconds"), "gauge");
}

TEST_F(CoordinatorMetricsTest, WorkersAndJobsInEveryState) {
  std::vector<std::string> workers;
  for (int i = 0; i < 5; ++i) workers.push_back(Register());
  for (int i = 0; i < 4; ++i) Connect(workers[i]);  // w-5 never connects: it will die

  // job-1 .. job-11: cancelled while queued, one every 10 ms.
  for (int i = 0; i < 11; ++i) {
    const std::string id = Submit(1);
    ASSERT_TRUE(core_->CancelJob(id).ok());
    clock_.AdvanceMs(10);
  }
  // job-12 succeeds and job-13 fails (permanently) on w-1.
  const std::string succeeded = Submit(1);
  v1::Assignment a = Place(workers)["w-1"];
  ReportTask("w-1", a, v1::TASK_STATE_RUNNING);
  clock_.AdvanceMs(10);
  ReportTask("w-1", a, v1::TASK_STATE_SUCCEEDED);
  const std::string failed = Submit(1);
  a = Place(workers)["w-1"];
  clock_.AdvanceMs(10);
  ReportTask("w-1", a, v1::TASK_STATE_FAILED, /*permanent=*/true);
  ASSERT_EQ(StateOf(succeeded), v1::JOB_STATE_SUCCEEDED);
  ASSERT_EQ(StateOf(failed), v1::JOB_STATE_FAILED);

  // w-5 misses its heartbeat deadline; the others keep talking.
  clock_.AdvanceMs(6000);
  for (int i = 0; i < 4; ++i) Heartbeat(workers[i]);
  clock_.AdvanceMs(6000);
  core_->Tick();

  // job-14 (1 x 2) runs on w-1 and w-2: three steps, a checkpoint at 2, an evaluation at 3.
  const std::string running = Submit(2);
  std::map<std::string, v1::Assignment> ranks = Place(workers);
  ASSERT_EQ(ranks.size(), 2u);
  for (const auto& [worker, rank] : ranks) ReportTask(worker, rank, v1::TASK_STATE_RUNNING);
  for (int64_t step = 1; step <= 3; ++step) {
    for (const auto& [worker, rank] : ranks) {
      ReportStep(worker, rank, step, step == 2,
                 step == 3 ? std::optional<double>(6.5) : std::nullopt);
    }
  }
  // job-15 is placed on w-3, which never reports its task.
  const std::string placing = Submit(1);
  ASSERT_EQ(Place(workers).count("w-3"), 1u);
  // job-16 runs one step on w-4 and fails: recovering (one restart, one step lost); w-4's
  // session then breaks.
  const std::string recovering = Submit(1);
  a = Place(workers)["w-4"];
  ReportTask("w-4", a, v1::TASK_STATE_RUNNING);
  ReportStep("w-4", a, 1, /*checkpointed=*/false);
  ReportTask("w-4", a, v1::TASK_STATE_FAILED);
  core_->CloseSession("w-4", session_ids_["w-4"]);
  // job-17 waits: no Tick after its submission.
  const std::string queued = Submit(1);
  ASSERT_EQ(StateOf(running), v1::JOB_STATE_RUNNING);
  ASSERT_EQ(StateOf(placing), v1::JOB_STATE_PLACING);
  ASSERT_EQ(StateOf(recovering), v1::JOB_STATE_RECOVERING);
  ASSERT_EQ(StateOf(queued), v1::JOB_STATE_QUEUED);

  const Page page = Scrape();
  EXPECT_EQ(page.At("geotrain_coordinator_workers{state=\"idle\"}"), 0);
  EXPECT_EQ(page.At("geotrain_coordinator_workers{state=\"busy\"}"), 3);
  EXPECT_EQ(page.At("geotrain_coordinator_workers{state=\"disconnected\"}"), 1);
  EXPECT_EQ(page.At("geotrain_coordinator_workers{state=\"dead\"}"), 1);
  // Counts cover every job, also those whose own series left the window.
  EXPECT_EQ(page.At("geotrain_coordinator_jobs{state=\"queued\"}"), 1);
  EXPECT_EQ(page.At("geotrain_coordinator_jobs{state=\"placing\"}"), 1);
  EXPECT_EQ(page.At("geotrain_coordinator_jobs{state=\"running\"}"), 1);
  EXPECT_EQ(page.At("geotrain_coordinator_jobs{state=\"recovering\"}"), 1);
  EXPECT_EQ(page.At("geotrain_coordinator_jobs{state=\"succeeded\"}"), 1);
  EXPECT_EQ(page.At("geotrain_coordinator_jobs{state=\"failed\"}"), 1);
  EXPECT_EQ(page.At("geotrain_coordinator_jobs{state=\"cancelled\"}"), 11);

  // The window: the 4 unfinished jobs and the 10 newest finished (job-4 .. job-13).
  EXPECT_EQ(page.Count("geotrain_job_info"), 14) << page.text;
  for (const char* gone : {"job-1", "job-2", "job-3"}) {
    EXPECT_EQ(page.text.find(std::string("job_id=\"") + gone + "\""), std::string::npos) << gone;
  }
  EXPECT_EQ(page.At("geotrain_job_info{job_id=\"job-4\",name=\"tiny\",state=\"cancelled\"}"), 1);
  EXPECT_EQ(page.At("geotrain_job_info{job_id=\"job-12\",name=\"tiny\",state=\"succeeded\"}"), 1);
  EXPECT_EQ(page.At("geotrain_job_info{job_id=\"job-13\",name=\"tiny\",state=\"failed\"}"), 1);
  EXPECT_EQ(page.At("geotrain_job_info{job_id=\"job-14\",name=\"tiny\",state=\"running\"}"), 1);
  EXPECT_EQ(page.At("geotrain_job_info{job_id=\"job-15\",name=\"tiny\",state=\"placing\"}"), 1);
  EXPECT_EQ(page.At("geotrain_job_info{job_id=\"job-16\",name=\"tiny\",state=\"recovering\"}"), 1);
  EXPECT_EQ(page.At("geotrain_job_info{job_id=\"job-17\",name=\"tiny\",state=\"queued\"}"), 1);

  // The running job's figures.
  EXPECT_EQ(page.At("geotrain_job_step{job_id=\"job-14\"}"), 3);
  EXPECT_EQ(page.At("geotrain_job_total_steps{job_id=\"job-14\"}"), 20);
  EXPECT_EQ(page.At("geotrain_job_loss{job_id=\"job-14\"}"), 7);
  EXPECT_EQ(page.At("geotrain_job_eval_loss{job_id=\"job-14\"}"), 6.5);
  EXPECT_EQ(page.At("geotrain_job_checkpoint_step{job_id=\"job-14\"}"), 2);
  EXPECT_EQ(page.At("geotrain_job_step_seconds{job_id=\"job-14\"}"), 0.5);
  // 2 samples x 4 micro-batches x 16 tokens x 2 replicas per 0.5 s.
  EXPECT_EQ(page.At("geotrain_job_tokens_per_second{job_id=\"job-14\"}"), 512);
  // 2 ranks x 100 wire bytes per 0.5 s step.
  EXPECT_EQ(page.At("geotrain_job_wire_bytes_per_second{job_id=\"job-14\"}"), 400);
  // 3 steps x 2 ranks of each kind.
  const std::map<std::string, double> raw = {
      {"activation", 600}, {"gradient", 1200}, {"data_parallel", 1800}, {"embedding", 2400}};
  for (const auto& [kind, bytes] : raw) {
    const std::string labels = "{job_id=\"job-14\",kind=\"" + kind + "\"}";
    EXPECT_EQ(page.At("geotrain_job_raw_bytes_total" + labels), bytes) << kind;
    EXPECT_EQ(page.At("geotrain_job_wire_bytes_total" + labels), bytes / 10) << kind;
  }
  EXPECT_EQ(page.Count("geotrain_job_raw_bytes_total"), 14 * 4);
  EXPECT_EQ(page.At("geotrain_job_restarts_total{job_id=\"job-14\"}"), 0);
  EXPECT_EQ(page.At("geotrain_job_steps_lost_total{job_id=\"job-14\"}"), 0);

  // The recovering job: back to step 0, its one step lost.
  EXPECT_EQ(page.At("geotrain_job_restarts_total{job_id=\"job-16\"}"), 1);
  EXPECT_EQ(page.At("geotrain_job_steps_lost_total{job_id=\"job-16\"}"), 1);
  EXPECT_EQ(page.At("geotrain_job_step{job_id=\"job-16\"}"), 0);

  // No loss before a complete step, no evaluation loss before an evaluation.
  EXPECT_FALSE(page.Has("geotrain_job_loss{job_id=\"job-17\"}"));
  EXPECT_FALSE(page.Has("geotrain_job_loss{job_id=\"job-16\"}"));
  EXPECT_EQ(page.Count("geotrain_job_loss"), 1);
  EXPECT_EQ(page.Count("geotrain_job_eval_loss"), 1);
  EXPECT_EQ(page.At("geotrain_job_step{job_id=\"job-17\"}"), 0);
  EXPECT_EQ(page.At("geotrain_job_checkpoint_step{job_id=\"job-17\"}"), 0);

  // Types as the catalogue says: totals are counters, the rest gauges.
  for (const char* counter : {"geotrain_job_raw_bytes_total", "geotrain_job_wire_bytes_total",
                              "geotrain_job_restarts_total", "geotrain_job_steps_lost_total"}) {
    EXPECT_EQ(page.types.at(counter), "counter") << counter;
  }
  for (const char* gauge : {"geotrain_job_info", "geotrain_job_step", "geotrain_job_total_steps",
                            "geotrain_job_loss", "geotrain_job_eval_loss",
                            "geotrain_job_tokens_per_second", "geotrain_job_wire_bytes_per_second",
                            "geotrain_job_step_seconds", "geotrain_job_checkpoint_step"}) {
    EXPECT_EQ(page.types.at(gauge), "gauge") << gauge;
  }
  EXPECT_NE(page.text.find("# HELP geotrain_job_step Steps every rank completed"),
            std::string::npos);

  // A job that finishes pushes the oldest finished one (job-4) out of the window; the queued
  // job's series now say cancelled.
  ASSERT_TRUE(core_->CancelJob(queued).ok());
  const Page after = Scrape();
  EXPECT_EQ(after.Count("geotrain_job_info"), 3 + 10);
  EXPECT_EQ(after.Count("geotrain_job_step", "job_id=\"job-4\""), 0);
  EXPECT_EQ(after.Count("geotrain_job_raw_bytes_total", "job_id=\"job-4\""), 0);
  EXPECT_EQ(after.At("geotrain_job_info{job_id=\"job-17\",name=\"tiny\",state=\"cancelled\"}"), 1);
  EXPECT_FALSE(after.Has("geotrain_job_info{job_id=\"job-17\",name=\"tiny\",state=\"queued\"}"));
  EXPECT_EQ(after.At("geotrain_coordinator_jobs{state=\"queued\"}"), 0);
  EXPECT_EQ(after.At("geotrain_coordinator_jobs{state=\"cancelled\"}"), 12);
}

TEST(CoordinatorJobMetricsTest, AClassifiersScoresAreOneSeriesEach) {
  JobWindow window;
  v1::Job& classifier = window.jobs.emplace_back();
  classifier.set_id("job-1");
  classifier.mutable_progress()->set_eval_step(10);
  v1::EvalScores* scores = classifier.mutable_progress()->mutable_eval_scores();
  scores->set_accuracy(0.875);
  scores->set_f1(0.5);
  scores->set_mcc(-0.25);
  v1::Job& language_model = window.jobs.emplace_back();
  language_model.set_id("job-2");
  language_model.mutable_progress()->set_eval_step(10);
  const Page page =
      Parse(prometheus::TextSerializer().Serialize(CoordinatorMetricFamilies({}, window)));
  EXPECT_EQ(page.At("geotrain_job_eval_score{job_id=\"job-1\",score=\"accuracy\"}"), 0.875);
  EXPECT_EQ(page.At("geotrain_job_eval_score{job_id=\"job-1\",score=\"f1\"}"), 0.5);
  EXPECT_EQ(page.At("geotrain_job_eval_score{job_id=\"job-1\",score=\"mcc\"}"), -0.25);
  EXPECT_EQ(page.Count("geotrain_job_eval_score", "job_id=\"job-2\""), 0);
  EXPECT_EQ(page.types.at("geotrain_job_eval_score"), "gauge");
}

TEST_F(CoordinatorMetricsTest, JobWindowKeepsSubmissionOrderAndTheNewestFinished) {
  // Finished out of submission order: job-3 first, then job-1, then job-2.
  for (int i = 0; i < 4; ++i) Submit(1);
  for (const char* id : {"job-3", "job-1", "job-2"}) {
    ASSERT_TRUE(core_->CancelJob(id).ok());
    clock_.AdvanceMs(1);
  }
  const JobWindow window = core_->ListJobWindow(/*finished_limit=*/2);
  std::vector<std::string> ids;
  for (const v1::Job& job : window.jobs) ids.push_back(job.id());
  EXPECT_EQ(ids, (std::vector<std::string>{"job-1", "job-2", "job-4"}));
  EXPECT_EQ(window.count_by_state.at(v1::JOB_STATE_CANCELLED), 3);
  EXPECT_EQ(window.count_by_state.at(v1::JOB_STATE_QUEUED), 1);
  EXPECT_EQ(core_->ListJobWindow(0).jobs.size(), 1u);
}

// --- The daemon ----------------------------------------------------------------------------

// geotrain-coordinator, built next to this test binary (bin/).
std::string CoordinatorBinary() {
  std::error_code ec;
  return (std::filesystem::read_symlink("/proc/self/exe", ec).parent_path() /
          "geotrain-coordinator")
      .string();
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Polls `done` every 20 ms; false once `limit` passed (only a broken daemon comes near it).
template <typename Done>
bool WaitUntil(Done done, std::chrono::seconds limit = std::chrono::seconds(30)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// The daemon as a child process with its stdout and stderr in files of `dir`; killed and reaped
// on destruction, and with the test (PR_SET_PDEATHSIG) should the test itself die.
class Daemon {
 public:
  Daemon(const TempDir& dir, std::vector<std::string> args)
      : out_(dir.path() + "/coordinator.stdout"), err_(dir.path() + "/coordinator.stderr") {
    std::string binary = CoordinatorBinary();
    std::vector<std::string> strings = {"--state-dir", dir.path() + "/state", "--listen",
                                        "127.0.0.1:0"};
    strings.insert(strings.end(), args.begin(), args.end());
    std::vector<char*> argv = {binary.data()};
    for (std::string& s : strings) argv.push_back(s.data());
    argv.push_back(nullptr);
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ != 0) return;
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    const int out = ::open(out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open(err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0 || err < 0 || ::dup2(out, 1) < 0 || ::dup2(err, 2) < 0) ::_exit(127);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ~Daemon() {
    if (!Exited()) ::kill(pid_, SIGKILL);
    Wait();
  }
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  bool Exited() {
    if (!reaped_ && ::waitpid(pid_, &status_, WNOHANG) == pid_) reaped_ = true;
    return reaped_;
  }
  // The exit code once it exited (-1: killed by a signal, or still running after the limit).
  int Wait() {
    WaitUntil([&] { return Exited(); });
    return reaped_ && WIFEXITED(status_) ? WEXITSTATUS(status_) : -1;
  }
  int Terminate() {
    ::kill(pid_, SIGTERM);
    return Wait();
  }
  std::string Stdout() const { return ReadFile(out_); }
  std::string Stderr() const { return ReadFile(err_); }

  // The address after "PREFIX " on stdout, once the daemon printed it; "" if it exited first.
  std::string Printed(const std::string& prefix) {
    std::string address;
    WaitUntil([&] {
      const std::string out = Stdout();
      const size_t at = out.find(prefix + " ");
      const size_t end = at == std::string::npos ? at : out.find('\n', at);
      if (end != std::string::npos) {
        address = out.substr(at + prefix.size() + 1, end - at - prefix.size() - 1);
        return true;
      }
      return Exited();
    });
    return address;
  }

 private:
  std::string out_;
  std::string err_;
  pid_t pid_ = -1;
  int status_ = 0;
  bool reaped_ = false;
};

int PortOf(const std::string& address) { return std::stoi(address.substr(address.rfind(':') + 1)); }

// `GET path` over a plain socket to 127.0.0.1:port; the whole response, "" on failure.
std::string HttpGet(int port, const std::string& path) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval limit{30, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
  std::string response;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0) {
    const std::string request =
        "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
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

TEST(CoordinatorDaemonMetricsTest, ServesMetricsOnTheBoundPort) {
  ASSERT_TRUE(std::filesystem::exists(CoordinatorBinary()))
      << CoordinatorBinary() << " is not built (ninja geotrain-coordinator)";
  TempDir dir;
  Daemon daemon(dir, {"--metrics-listen", "127.0.0.1:0"});
  const std::string grpc = daemon.Printed("listening on");
  const std::string metrics = daemon.Printed("metrics on");
  ASSERT_FALSE(metrics.empty()) << daemon.Stdout() << daemon.Stderr();
  EXPECT_EQ(metrics.rfind("127.0.0.1:", 0), 0u) << metrics;
  EXPECT_NE(PortOf(metrics), 0);
  EXPECT_NE(metrics, grpc);
  // The gRPC address comes first: scripts that wait for it keep working.
  EXPECT_LT(daemon.Stdout().find("listening on"), daemon.Stdout().find("metrics on"));
  EXPECT_NE(daemon.Stderr().find("metrics on " + metrics), std::string::npos);

  const std::string response = HttpGet(PortOf(metrics), "/metrics");
  EXPECT_EQ(response.rfind("HTTP/1.1 200", 0), 0u) << response;
  EXPECT_NE(response.find("# TYPE geotrain_build_info gauge"), std::string::npos) << response;
  const size_t build_info = response.find("\ngeotrain_build_info{");
  ASSERT_NE(build_info, std::string::npos) << response;
  const size_t end = response.find('\n', build_info + 1);
  const std::string line = response.substr(build_info + 1, end - build_info - 1);
  EXPECT_NE(line.find("version=\"0.1.0\""), std::string::npos) << line;
  EXPECT_NE(line.find("revision=\""), std::string::npos) << line;
  EXPECT_EQ(line.substr(line.size() - 3), "} 1") << line;
  EXPECT_NE(response.find("geotrain_coordinator_workers{state=\"idle\"} 0"), std::string::npos)
      << response;
  EXPECT_NE(response.find("geotrain_coordinator_jobs{state=\"queued\"} 0"), std::string::npos)
      << response;
  EXPECT_EQ(daemon.Terminate(), 0) << daemon.Stderr();
}

TEST(CoordinatorDaemonMetricsTest, EmptyAddressTurnsMetricsOff) {
  ASSERT_TRUE(std::filesystem::exists(CoordinatorBinary()));
  TempDir dir;
  Daemon daemon(dir, {"--metrics-listen", ""});
  ASSERT_FALSE(daemon.Printed("listening on").empty()) << daemon.Stderr();
  EXPECT_EQ(daemon.Terminate(), 0) << daemon.Stderr();
  EXPECT_EQ(daemon.Stdout().find("metrics on"), std::string::npos) << daemon.Stdout();
  EXPECT_NE(daemon.Stderr().find("metrics off"), std::string::npos) << daemon.Stderr();
}

TEST(CoordinatorDaemonMetricsTest, BusyPortExitsOneNamingTheFlag) {
  ASSERT_TRUE(std::filesystem::exists(CoordinatorBinary()));
  // A port someone else listens on.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length), 0);
  const std::string busy = "127.0.0.1:" + std::to_string(ntohs(address.sin_port));

  TempDir dir;
  Daemon daemon(dir, {"--metrics-listen", busy});
  EXPECT_EQ(daemon.Wait(), 1) << daemon.Stderr();
  ::close(fd);
  const std::string err = daemon.Stderr();
  EXPECT_NE(err.find("--metrics-listen"), std::string::npos) << err;
  EXPECT_NE(err.find(busy), std::string::npos) << err;
  EXPECT_EQ(daemon.Stdout(), "");
}

TEST(CoordinatorDaemonMetricsTest, MalformedAddressIsABadFlag) {
  ASSERT_TRUE(std::filesystem::exists(CoordinatorBinary()));
  for (const std::string value :
       {"9400", "127.0.0.1:", ":9400", "127.0.0.1:http", "127.0.0.1:65536"}) {
    TempDir dir;
    Daemon daemon(dir, {"--metrics-listen", value});
    EXPECT_EQ(daemon.Wait(), 2) << value << ": " << daemon.Stderr();
    const std::string err = daemon.Stderr();
    EXPECT_NE(err.find("--metrics-listen: \"" + value + "\" is not HOST:PORT"), std::string::npos)
        << err;
    EXPECT_EQ(daemon.Stdout(), "");
  }
}

TEST(CoordinatorDaemonMetricsTest, BadProbeFlagsAreBadFlags) {
  ASSERT_TRUE(std::filesystem::exists(CoordinatorBinary()));
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--probe-streams", "0"}, "--probe-streams: 0 is outside [1, 64]"},
      {{"--probe-bytes", "1000"}, "--probe-bytes: 1000 is outside"},
      {{"--probe-timeout", "5"}, "--probe-timeout: 5 ms is outside"},
      {{"--probe-interval", "-1"}, "--probe-interval: -1 is outside"},
  };
  for (const auto& [flags, expected] : cases) {
    TempDir dir;
    Daemon daemon(dir, flags);
    EXPECT_EQ(daemon.Wait(), 2) << flags[0] << ": " << daemon.Stderr();
    EXPECT_NE(daemon.Stderr().find(expected), std::string::npos) << daemon.Stderr();
    EXPECT_EQ(daemon.Stdout(), "");
  }
}

}  // namespace
}  // namespace geotrain::coordinator
