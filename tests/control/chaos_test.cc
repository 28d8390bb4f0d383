// Chaos: faults injected into real processes (task children, worker daemons, the coordinator, the
// checkpoint disk) at seeded points of a running job, each case ending as docs/reliability.md
// promises. Every fault prints one line on stdout,
//   chaos: case=sigkill-task seed=1 steps_lost=2 recovery_seconds=7.4 outcome=finished
// steps_lost: the coordinator's count for the job (steps redone after restarts); recovery_seconds:
// from the fault to the first step of the generation that replaced the broken one. The numbers
// are printed, never asserted on beyond their bounds (steps_lost <= checkpoint_every per fault).
//
// The job is examples/gpt2-tiny-2x2.yaml (4 ranks) made short: few steps, a checkpoint every
// kCheckpointEvery steps, no evaluation, and a transport timeout of kTimeoutSeconds so that
// peers of a silent rank give up within seconds.
//
// Every case runs the cluster as deployed (docs/security.md): TLS, worker client certificates,
// the join token and the admin token (ClusterTls in control_cluster.h).
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <cstdio>
#include <iostream>
#include <optional>
#include <random>
#include <set>

#include "tests/control/control_cluster.h"

namespace geotrain::control::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr int kCheckpointEvery = 5;
constexpr int kTimeoutSeconds = 15;

ClusterOptions Deployed() {
  ClusterOptions options;
  options.tls = true;
  return options;
}

std::string ChaosJob(ControlCluster& cluster, int steps, int max_restarts,
                     const std::string& checkpoint_dir = "") {
  std::vector<std::pair<std::string, std::string>> training = {
      {"checkpoint_every", std::to_string(kCheckpointEvery)},
      {"eval_every", "0"},
      {"timeout_seconds", std::to_string(kTimeoutSeconds)},
      {"max_restarts", std::to_string(max_restarts)}};
  if (!checkpoint_dir.empty()) training.push_back({"checkpoint_dir", checkpoint_dir});
  return cluster.WriteTinyJob(steps, training);
}

std::string Submit(ControlCluster& cluster, const std::string& job_file) {
  const CliResult submitted = cluster.Cli({"submit", job_file, "-o", "json"});
  EXPECT_EQ(submitted.exit_code, 0) << submitted.err;
  const nlohmann::json job = nlohmann::json::parse(submitted.out, nullptr, false);
  return job.is_object() ? job.value("id", "") : "";
}

int64_t Progress(const nlohmann::json& job, const char* field) {
  return job.contains("progress") && job["progress"].contains(field)
             ? JsonInt(job["progress"][field])
             : 0;
}

// The worker running `rank` (placement index) of the job now; -1 when unknown.
int WorkerOfRank(ControlCluster& cluster, const nlohmann::json& job, size_t rank) {
  if (!job.contains("placements") || job["placements"].size() <= rank) return -1;
  return cluster.WorkerIndexOf(job["placements"][rank].value("worker_id", ""));
}

// The newest step line worker `index` logged; none yet: nullopt.
std::optional<runtime::StepLine> NewestStepLine(ControlCluster& cluster, int index) {
  std::optional<runtime::StepLine> newest;
  for (runtime::StepLine& line : cluster.StepLines(index)) {
    if (!newest || line.result.step > newest->result.step) newest = std::move(line);
  }
  return newest;
}

// Waits until worker `index` logged a step line of step >= `step`, then sleeps a seeded fraction
// of a step (0 to 1.5 step times), so the fault lands anywhere in the steps that follow:
// computing, sending, or writing a checkpoint.
bool WaitForSeededPoint(ControlCluster& cluster, int index, int64_t step, std::mt19937* random) {
  std::optional<runtime::StepLine> line;
  if (!WaitUntil(
          [&] {
            line = NewestStepLine(cluster, index);
            return line && line->result.step >= step;
          },
          seconds(240))) {
    return false;
  }
  const double step_seconds = line->result.step_seconds;
  std::uniform_real_distribution<double> fraction(0.0, 1.5);
  std::this_thread::sleep_for(
      milliseconds(static_cast<int64_t>(1000 * step_seconds * fraction(*random))));
  return true;
}

// Seconds from `fault` until a generation after `generation` has completed a step; -1 when the
// job ended or `timeout` passed first.
double WaitForRecovery(ControlCluster& cluster, const std::string& id, int64_t generation,
                       Clock::time_point fault, seconds timeout) {
  double recovered = -1;
  WaitUntil(
      [&] {
        const nlohmann::json job = cluster.Job(id);
        const std::string state = job.value("state", "");
        if (state == "JOB_STATE_SUCCEEDED" || state == "JOB_STATE_FAILED") return true;
        if (JsonInt(job.value("generation", nlohmann::json(0))) > generation &&
            state == "JOB_STATE_RUNNING" &&
            Progress(job, "step") > Progress(job, "checkpoint_step")) {
          recovered = std::chrono::duration<double>(Clock::now() - fault).count();
          return true;
        }
        return false;
      },
      timeout);
  return recovered;
}

void PrintChaosLine(const std::string& name, const std::string& detail, int64_t steps_lost,
                    double recovery_seconds, const std::string& outcome) {
  char seconds_text[32];
  std::snprintf(seconds_text, sizeof(seconds_text), "%.1f", recovery_seconds);
  std::cout << "chaos: case=" << name << (detail.empty() ? "" : " " + detail)
            << " steps_lost=" << steps_lost << " recovery_seconds=" << seconds_text
            << " outcome=" << outcome << std::endl;
}

std::string Outcome(const nlohmann::json& job) {
  const std::string state = job.value("state", "");
  if (state == "JOB_STATE_SUCCEEDED") return "finished";
  if (state == "JOB_STATE_FAILED") return "failed";
  return "unfinished(" + state + ")";
}

bool WaitForEnd(ControlCluster& cluster, const std::string& id, seconds timeout) {
  return cluster.WaitForJobState(id, {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED"}, timeout);
}

// Whether `pid` is gone or a zombie.
bool Ended(pid_t pid) {
  const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t close = stat.rfind(')');
  return close == std::string::npos || stat.compare(close + 1, 3, " Z ") == 0;
}

// Two task children killed at seeded points of two steps of one job: each time the job is
// re-placed and resumes from the newest complete checkpoint, and in the end it finishes.
TEST(Chaos, SigkilledTaskChildrenAtSeededPointsAreRecovered) {
  ControlCluster cluster(Deployed());
  cluster.StartCoordinator();
  for (int i = 0; i < 5; ++i) cluster.StartWorker();  // four ranks and a spare
  ASSERT_TRUE(cluster.WaitForIdleWorkers(5)) << cluster.Logs();
  constexpr int kSteps = 20;
  const std::string id = Submit(cluster, ChaosJob(cluster, kSteps, /*max_restarts=*/3));
  ASSERT_FALSE(id.empty());

  const int seeds[] = {1, 2};
  // A fault after steps 6 and 13 of the run: past a checkpoint each time, the second after the
  // first restart has caught up.
  const int64_t after_step[] = {6, 13};
  int64_t lost_before = 0;
  for (int i = 0; i < 2; ++i) {
    std::mt19937 random(seeds[i]);
    const nlohmann::json before = cluster.Job(id);
    const size_t rank = static_cast<size_t>(random() % 4);
    const int victim = WorkerOfRank(cluster, before, rank);
    ASSERT_GE(victim, 0) << before.dump();
    ASSERT_TRUE(WaitForSeededPoint(cluster, victim, after_step[i], &random))
        << cluster.Job(id).dump() << cluster.Logs();
    const std::vector<pid_t> children = cluster.TaskChildren(victim);
    ASSERT_EQ(children.size(), 1u) << "worker " << victim << " runs no task";
    const int64_t generation = JsonInt(cluster.Job(id)["generation"]);
    const Clock::time_point fault = Clock::now();
    ::kill(children[0], SIGKILL);

    const double recovery = WaitForRecovery(cluster, id, generation, fault, seconds(240));
    const nlohmann::json after = cluster.Job(id);
    const int64_t lost = JsonInt(after.value("steps_lost", nlohmann::json(0)));
    PrintChaosLine("sigkill-task", "seed=" + std::to_string(seeds[i]), lost - lost_before, recovery,
                   recovery >= 0 ? "recovered" : Outcome(after));
    ASSERT_GE(recovery, 0) << after.dump() << cluster.Logs();
    EXPECT_LE(lost - lost_before, kCheckpointEvery) << after.dump();
    lost_before = lost;
  }

  ASSERT_TRUE(WaitForEnd(cluster, id, seconds(300))) << cluster.Job(id).dump() << cluster.Logs();
  const nlohmann::json job = cluster.Job(id);
  PrintChaosLine("sigkill-task", "total", JsonInt(job.value("steps_lost", nlohmann::json(0))), 0,
                 Outcome(job));
  EXPECT_EQ(job.value("state", ""), "JOB_STATE_SUCCEEDED") << job.dump() << cluster.Logs();
  EXPECT_EQ(Progress(job, "step"), kSteps);
  EXPECT_EQ(job.value("restarts", 0), 2) << job.dump();
}

// A worker daemon killed at a seeded point: its task dies with it (PDEATHSIG), the coordinator
// notices the lost heartbeat, and the job moves to the spare.
TEST(Chaos, SigkilledWorkerDaemonAtASeededPointIsReplacedBySpare) {
  ControlCluster cluster(Deployed());
  cluster.StartCoordinator();
  for (int i = 0; i < 5; ++i) cluster.StartWorker();
  ASSERT_TRUE(cluster.WaitForIdleWorkers(5)) << cluster.Logs();
  constexpr int kSteps = 15;
  const std::string id = Submit(cluster, ChaosJob(cluster, kSteps, /*max_restarts=*/2));
  ASSERT_FALSE(id.empty());

  std::mt19937 random(4);
  ASSERT_TRUE(WaitUntil([&] { return cluster.Job(id).contains("placements"); }, seconds(60)));
  const nlohmann::json before = cluster.Job(id);
  const size_t rank = static_cast<size_t>(random() % 4);
  const int victim = WorkerOfRank(cluster, before, rank);
  ASSERT_GE(victim, 0) << before.dump();
  const std::string victim_id = before["placements"][rank].value("worker_id", "");
  ASSERT_TRUE(WaitForSeededPoint(cluster, victim, 6, &random)) << cluster.Logs();
  const Clock::time_point fault = Clock::now();
  cluster.worker(victim).Kill(SIGKILL);

  const double recovery =
      WaitForRecovery(cluster, id, JsonInt(before["generation"]), fault, seconds(240));
  ASSERT_TRUE(WaitForEnd(cluster, id, seconds(300))) << cluster.Job(id).dump() << cluster.Logs();
  const nlohmann::json job = cluster.Job(id);
  const int64_t lost = JsonInt(job.value("steps_lost", nlohmann::json(0)));
  PrintChaosLine("sigkill-worker", "seed=4", lost, recovery, Outcome(job));
  EXPECT_EQ(job.value("state", ""), "JOB_STATE_SUCCEEDED") << job.dump() << cluster.Logs();
  EXPECT_GE(recovery, 0);
  EXPECT_LE(lost, kCheckpointEvery);
  for (const auto& p : job["placements"]) EXPECT_NE(p.value("worker_id", ""), victim_id);
}

// A task child stopped (SIGSTOP, never continued) answers nothing: its peers' transport timeouts
// fire, the job recovers, and the stop order reaches the stopped child (SIGTERM with SIGCONT,
// then SIGKILL), so nothing of the old generation is left.
TEST(Chaos, StoppedTaskChildIsDetectedKilledAndTheJobFinishes) {
  ControlCluster cluster(Deployed());
  cluster.StartCoordinator();
  for (int i = 0; i < 5; ++i) cluster.StartWorker();
  ASSERT_TRUE(cluster.WaitForIdleWorkers(5)) << cluster.Logs();
  constexpr int kSteps = 15;
  const std::string id = Submit(cluster, ChaosJob(cluster, kSteps, /*max_restarts=*/2));
  ASSERT_FALSE(id.empty());

  std::mt19937 random(5);
  ASSERT_TRUE(WaitUntil([&] { return cluster.Job(id).contains("placements"); }, seconds(60)));
  const nlohmann::json before = cluster.Job(id);
  const int victim = WorkerOfRank(cluster, before, 1 + random() % 3);
  ASSERT_GE(victim, 0) << before.dump();
  ASSERT_TRUE(WaitForSeededPoint(cluster, victim, 6, &random)) << cluster.Logs();
  const std::vector<pid_t> children = cluster.TaskChildren(victim);
  ASSERT_EQ(children.size(), 1u);
  const pid_t straggler = children[0];
  const Clock::time_point fault = Clock::now();
  ::kill(straggler, SIGSTOP);

  // Detection takes a transport timeout; the stop that follows must end the stopped process.
  const double recovery = WaitForRecovery(cluster, id, JsonInt(before["generation"]), fault,
                                          seconds(4 * kTimeoutSeconds + 60));
  EXPECT_TRUE(WaitUntil([&] { return Ended(straggler); }, seconds(30)))
      << "the stopped task child " << straggler << " still exists" << cluster.Logs();
  ASSERT_TRUE(WaitForEnd(cluster, id, seconds(300))) << cluster.Job(id).dump() << cluster.Logs();
  const nlohmann::json job = cluster.Job(id);
  const int64_t lost = JsonInt(job.value("steps_lost", nlohmann::json(0)));
  PrintChaosLine("sigstop-task", "seed=5", lost, recovery, Outcome(job));
  EXPECT_EQ(job.value("state", ""), "JOB_STATE_SUCCEEDED") << job.dump() << cluster.Logs();
  EXPECT_GE(recovery, 0);
  EXPECT_LE(lost, kCheckpointEvery);
  EXPECT_EQ(Progress(job, "step"), kSteps);
}

// Markers ("*.done") in a checkpoint step directory.
int Markers(const std::string& step_dir) {
  int markers = 0;
  DIR* listing = ::opendir(step_dir.c_str());
  if (listing == nullptr) return 0;
  while (dirent* entry = ::readdir(listing)) {
    const std::string name = entry->d_name;
    markers += name.size() > 5 && name.compare(name.size() - 5, 5, ".done") == 0;
  }
  ::closedir(listing);
  return markers;
}

bool Exists(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

// The coordinator SIGKILLed the moment the ranks start writing a checkpoint (its step directory
// appears): restarted over its state directory, it re-attaches the running job, which finishes,
// and a queued job is still there.
TEST(Chaos, CoordinatorKilledMidCheckpointLosesNoJob) {
  ControlCluster cluster(Deployed());
  cluster.StartCoordinator();
  for (int i = 0; i < 4; ++i) cluster.StartWorker();
  ASSERT_TRUE(cluster.WaitForIdleWorkers(4)) << cluster.Logs();
  constexpr int kSteps = 15;
  const std::string job_file = ChaosJob(cluster, kSteps, /*max_restarts=*/2);
  const std::string id = Submit(cluster, job_file);
  ASSERT_FALSE(id.empty());
  const std::string queued = Submit(cluster, job_file);  // waits: every worker is busy
  ASSERT_FALSE(queued.empty());

  const std::string step_dir = cluster.dir() + "/job/checkpoints/step-00000010";
  ASSERT_TRUE(WaitUntil([&] { return Exists(step_dir); }, seconds(240))) << cluster.Logs();
  const int markers_at_kill = Markers(step_dir);
  const Clock::time_point fault = Clock::now();
  cluster.coordinator().Kill(SIGKILL);
  std::this_thread::sleep_for(seconds(1));  // the ranks finish the checkpoint meanwhile
  cluster.StartCoordinator();
  const double restarted = std::chrono::duration<double>(Clock::now() - fault).count();

  const nlohmann::json jobs = cluster.CliJson({"jobs"});
  std::set<std::string> ids;
  for (const auto& j : jobs.value("jobs", nlohmann::json::array())) ids.insert(j.value("id", ""));
  EXPECT_EQ(ids.count(id), 1u) << jobs.dump();
  EXPECT_EQ(ids.count(queued), 1u) << jobs.dump();
  EXPECT_EQ(cluster.Job(queued).value("state", ""), "JOB_STATE_QUEUED");
  EXPECT_EQ(cluster.Cli({"cancel", queued}).exit_code, 0);

  ASSERT_TRUE(WaitForEnd(cluster, id, seconds(300))) << cluster.Job(id).dump() << cluster.Logs();
  const nlohmann::json job = cluster.Job(id);
  const int64_t lost = JsonInt(job.value("steps_lost", nlohmann::json(0)));
  PrintChaosLine("sigkill-coordinator-mid-checkpoint",
                 "markers_at_kill=" + std::to_string(markers_at_kill), lost, restarted,
                 Outcome(job));
  EXPECT_EQ(job.value("state", ""), "JOB_STATE_SUCCEEDED") << job.dump() << cluster.Logs();
  EXPECT_EQ(Progress(job, "step"), kSteps);
  EXPECT_EQ(job.value("restarts", 0), 0) << job.dump();
  EXPECT_EQ(Markers(step_dir), 4) << "the checkpoint the kill interrupted is complete";
  EXPECT_EQ(cluster.Job(queued).value("state", ""), "JOB_STATE_CANCELLED");
}

// How often `needle` occurs in `log`.
int CountLines(const std::string& log, const std::string& needle) {
  int count = 0;
  for (size_t at = log.find(needle); at != std::string::npos; at = log.find(needle, at + 1)) {
    ++count;
  }
  return count;
}

// The coordinator SIGKILLed at a seeded point of a running job, with TLS on, and restarted over
// its state directory at once: every worker daemon comes back within seconds (a new TLS
// handshake on a channel that had been connected; issue 20), the job goes on without a restart
// and no step is lost.
TEST(Chaos, CoordinatorKilledDuringAJobWithTlsLosesNoStepsAndWorkersComeBack) {
  ControlCluster cluster(Deployed());
  cluster.StartCoordinator();
  constexpr int kWorkers = 4;
  for (int i = 0; i < kWorkers; ++i) cluster.StartWorker();
  ASSERT_TRUE(cluster.WaitForIdleWorkers(kWorkers)) << cluster.Logs();
  constexpr int kSteps = 15;
  const std::string id = Submit(cluster, ChaosJob(cluster, kSteps, /*max_restarts=*/2));
  ASSERT_FALSE(id.empty());

  std::mt19937 random(6);
  ASSERT_TRUE(WaitUntil([&] { return cluster.Job(id).contains("placements"); }, seconds(60)));
  const nlohmann::json before = cluster.Job(id);
  const int watched = WorkerOfRank(cluster, before, random() % 4);
  ASSERT_GE(watched, 0) << before.dump();
  ASSERT_TRUE(WaitForSeededPoint(cluster, watched, 6, &random)) << cluster.Logs();
  const Clock::time_point fault = Clock::now();
  cluster.coordinator().Kill(SIGKILL);
  cluster.StartCoordinator();
  const Clock::time_point restarted = Clock::now();

  // Each daemon's re-registration is one line of the new coordinator's log.
  double recovery = -1;  // from the restart (the new coordinator listening)
  double since_kill = -1;
  WaitUntil(
      [&] {
        if (CountLines(cluster.coordinator().Stderr(), "registered again") < kWorkers) return false;
        recovery = std::chrono::duration<double>(Clock::now() - restarted).count();
        since_kill = std::chrono::duration<double>(Clock::now() - fault).count();
        return true;
      },
      seconds(120));
  ASSERT_TRUE(WaitForEnd(cluster, id, seconds(300))) << cluster.Job(id).dump() << cluster.Logs();
  const nlohmann::json job = cluster.Job(id);
  const int64_t lost = JsonInt(job.value("steps_lost", nlohmann::json(0)));
  char detail[64];
  std::snprintf(detail, sizeof(detail), "seed=6 workers=%d since_kill_seconds=%.1f", kWorkers,
                since_kill);
  PrintChaosLine("sigkill-coordinator-tls", detail, lost, recovery, Outcome(job));
  ASSERT_GE(recovery, 0) << "not every worker registered again within 120 s:\n" << cluster.Logs();
  EXPECT_LT(recovery, 15) << cluster.Logs();
  EXPECT_EQ(job.value("state", ""), "JOB_STATE_SUCCEEDED") << job.dump() << cluster.Logs();
  EXPECT_EQ(lost, 0) << job.dump();
  EXPECT_EQ(job.value("restarts", 0), 0) << job.dump();
  EXPECT_EQ(Progress(job, "step"), kSteps);
}

// A tmpfs the test can fill, unmounted (lazily) when the test ends.
class SmallDisk {
 public:
  explicit SmallDisk(const std::string& size) {
    mounted_ = ::mount("tmpfs", dir_.path().c_str(), "tmpfs", 0, ("size=" + size).c_str()) == 0;
  }
  ~SmallDisk() {
    if (mounted_) ::umount2(dir_.path().c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }
  const std::string& path() const { return dir_.path(); }

 private:
  ::geotrain::testing::TempDir dir_;
  bool mounted_ = false;
};

// Writes `path` until the disk is full.
void FillDisk(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr);
  const std::vector<char> chunk(1 << 20, 'x');
  while (std::fwrite(chunk.data(), 1, chunk.size(), file) == chunk.size()) {
  }
  std::fclose(file);
}

// The checkpoint disk fills up mid-run: the checkpoint due then is not written (its step lines
// say why, naming ENOSPC), nothing half-written counts as complete, the older checkpoint stays,
// training goes on, and once space is back the next checkpoints are written and the job ends.
TEST(Chaos, FullCheckpointDiskKeepsTrainingAndTheOlderCheckpoint) {
  SmallDisk disk("2g");  // before the cluster: unmounted after its processes are gone
  if (!disk.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here (needs root)";
  ControlCluster cluster(Deployed());
  cluster.StartCoordinator();
  cluster.AllowPath(disk.path());  // the checkpoints live outside the source tree
  for (int i = 0; i < 4; ++i) cluster.StartWorker();
  ASSERT_TRUE(cluster.WaitForIdleWorkers(4)) << cluster.Logs();
  constexpr int kSteps = 20;
  const std::string checkpoints = disk.path() + "/checkpoints";
  const std::string id =
      Submit(cluster, ChaosJob(cluster, kSteps, /*max_restarts=*/0, checkpoints));
  ASSERT_FALSE(id.empty());

  const std::string first = checkpoints + "/step-00000005";
  ASSERT_TRUE(WaitUntil([&] { return Markers(first) == 4; }, seconds(240))) << cluster.Logs();
  const std::string filler = disk.path() + "/filler";
  const Clock::time_point fault = Clock::now();
  FillDisk(filler);

  // The ranks report the failed write of step 10 in their step lines.
  std::string error;
  ASSERT_TRUE(WaitUntil(
      [&] {
        for (int i = 0; i < cluster.num_workers(); ++i) {
          for (const runtime::StepLine& line : cluster.StepLines(i)) {
            if (!line.result.checkpoint_error.empty()) error = line.result.checkpoint_error;
          }
        }
        return !error.empty();
      },
      seconds(240)))
      << cluster.Job(id).dump() << cluster.Logs();
  EXPECT_NE(error.find("ENOSPC"), std::string::npos) << error;
  EXPECT_LT(Markers(checkpoints + "/step-00000010"), 4) << "a failed checkpoint counts as complete";
  EXPECT_EQ(Markers(first), 4) << "the older checkpoint is gone";
  EXPECT_EQ(cluster.Job(id).value("state", ""), "JOB_STATE_RUNNING") << cluster.Job(id).dump();
  ::unlink(filler.c_str());
  const double freed = std::chrono::duration<double>(Clock::now() - fault).count();

  ASSERT_TRUE(WaitForEnd(cluster, id, seconds(300))) << cluster.Job(id).dump() << cluster.Logs();
  const nlohmann::json job = cluster.Job(id);
  PrintChaosLine("full-checkpoint-disk", "", JsonInt(job.value("steps_lost", nlohmann::json(0))),
                 freed, Outcome(job));
  EXPECT_EQ(job.value("state", ""), "JOB_STATE_SUCCEEDED") << job.dump() << cluster.Logs();
  EXPECT_EQ(job.value("restarts", 0), 0) << job.dump();
  EXPECT_EQ(Progress(job, "step"), kSteps);
  EXPECT_EQ(Markers(checkpoints + "/step-00000020"), 4);
  EXPECT_EQ(Progress(job, "checkpoint_step"), kSteps);
}

}  // namespace
}  // namespace geotrain::control::testing
