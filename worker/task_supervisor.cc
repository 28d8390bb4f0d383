#include "worker/task_supervisor.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>
#include <vector>

#include "runtime/config_change.h"
#include "worker/assignment_file.h"
#include "worker/task_command.h"
#include "worker/worker_flags.h"

namespace geotrain::worker {
namespace fs = std::filesystem;

namespace {

geotrain::v1::TaskStatus Failed(const TaskKey& key, const std::string& message, bool permanent) {
  geotrain::v1::TaskStatus status = key.Status(geotrain::v1::TASK_STATE_FAILED);
  status.set_message(message);
  status.set_permanent(permanent);
  return status;
}

runtime::CodecChange CodecChangeOf(const geotrain::v1::ConfigChange& message) {
  runtime::CodecChange change;
  change.effective_step = message.effective_step();
  change.forward_bits = message.forward().bits();
  change.backward_bits = message.backward().bits();
  change.dp_bits = message.data_parallel().bits();
  change.dp_topk_ratio = message.data_parallel().topk_ratio();
  change.reason = message.reason();
  return change;
}

// Creates (or empties) `path`, the file a new task's changes will be appended to.
Status CreateEmptyFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Unavailable(path + ": cannot create: " + std::strerror(errno));
  ::close(fd);
  return OkStatus();
}

// Appends `line` and its newline with one write() on an O_APPEND descriptor: the child's poller
// sees the line whole or waits for its newline, never a mix of two lines.
Status AppendLine(const std::string& path, std::string line) {
  line.push_back('\n');
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) return Unavailable(path + ": cannot open: " + std::strerror(errno));
  ssize_t written;
  do {
    written = ::write(fd, line.data(), line.size());
  } while (written < 0 && errno == EINTR);
  const int error = errno;
  ::close(fd);
  if (written < 0) return Unavailable(path + ": cannot append: " + std::strerror(error));
  if (static_cast<size_t>(written) != line.size()) {
    return Unavailable(path + ": appended " + std::to_string(written) + " of " +
                       std::to_string(line.size()) + " bytes (disk full?)");
  }
  return OkStatus();
}

}  // namespace

TaskSupervisor::TaskSupervisor(SupervisorOptions options, Outbox* outbox,
                               std::function<void()> on_task_end)
    : options_(std::move(options)), outbox_(outbox), on_task_end_(std::move(on_task_end)) {}

TaskSupervisor::~TaskSupervisor() {
  std::map<TaskKey, std::unique_ptr<TaskRun>> runs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    closing_ = true;
    runs.swap(runs_);
  }
  // Outside the lock: a monitor thread may be waiting for it inside a callback.
  runs.clear();
}

void TaskSupervisor::SetWorkerId(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  worker_id_ = id;
}

void TaskSupervisor::Handle(const geotrain::v1::CoordinatorMessage& message) {
  switch (message.body_case()) {
    case geotrain::v1::CoordinatorMessage::kAssign:
      Assign(message.assign());
      return;
    case geotrain::v1::CoordinatorMessage::kStop:
      Stop(message.stop());
      return;
    case geotrain::v1::CoordinatorMessage::kConfig:
      ChangeConfig(message.config());
      return;
    case geotrain::v1::CoordinatorMessage::kForget:
      Forget(message.forget());
      return;
    case geotrain::v1::CoordinatorMessage::kProbe:
      // The session hands probe orders to its ProbeRunner; tasks have no part in them.
      return;
    case geotrain::v1::CoordinatorMessage::BODY_NOT_SET:
      break;
  }
  spdlog::warn("ignoring a message from the coordinator with no known body (a newer coordinator?)");
}

void TaskSupervisor::Assign(const geotrain::v1::Assignment& assignment) {
  const TaskKey key = TaskKey::Of(assignment);
  if (Status valid = ValidateAssignment(assignment); !valid.ok()) {
    spdlog::error("refusing an invalid assignment: {}", valid.message());
    outbox_->PushStatus(Failed(key, valid.message(), /*permanent=*/true));
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (table_.Find(key) != nullptr) {
    spdlog::info("assignment for {} ignored: this worker already has that task", key.Describe());
    return;
  }
  // Refusals stay out of the table, so the same task may be assigned again once this is over.
  if (closing_) {
    spdlog::warn("refusing assignment {}: the worker is shutting down", key.Describe());
    outbox_->PushStatus(Failed(key, "the worker is shutting down", /*permanent=*/false));
    return;
  }
  if (std::optional<TaskKey> busy = table_.AnyActive()) {
    const std::string why = "the worker is busy with task " + busy->Describe();
    spdlog::warn("refusing assignment {}: {}", key.Describe(), why);
    outbox_->PushStatus(Failed(key, why, /*permanent=*/false));
    return;
  }

  table_.Add(key.Status(geotrain::v1::TASK_STATE_STARTING));
  PublishTaskCountsLocked();
  outbox_->PushStatus(key.Status(geotrain::v1::TASK_STATE_STARTING));
  const fs::path dir = TaskDir(key);
  const std::string assignment_path = (dir / "assignment.pb").string();
  std::error_code ec;
  fs::create_directories(dir, ec);
  Status prepared =
      ec ? Unavailable(dir.string() + ": cannot create the task directory: " + ec.message())
         : WriteAssignmentFile(assignment_path, assignment);
  // Empty, so a directory left by an earlier run of this task replays none of its changes. The
  // child finds it next to its assignment file (task_command.h).
  if (prepared.ok()) prepared = CreateEmptyFile((dir / kConfigChangesFileName).string());
  if (!prepared.ok()) {
    spdlog::error("task {}: {}", key.Describe(), prepared.message());
    SetStatusLocked(Failed(key, prepared.message(), /*permanent=*/false));
    RemoveAssignmentFileLocked(key);
    return;
  }

  ProcessSpec process;
  process.argv = {options_.task_binary, "task",          "--coordinator", options_.coordinator,
                  "--assignment",       assignment_path, "--bind",        options_.advertise};
  for (const std::string& arg : CredentialFlags(options_.credential_files)) {
    process.argv.push_back(arg);
  }
  if (options_.threads > 0) {
    process.argv.push_back("--threads");
    process.argv.push_back(std::to_string(options_.threads));
    process.env.emplace_back("OMP_NUM_THREADS", std::to_string(options_.threads));
  }
  process.cwd = options_.data_root;
  if (!options_.data_root.empty()) {
    process.argv.push_back("--data-root");
    process.argv.push_back(options_.data_root);
  }
  for (const std::string& dir : options_.allowed_paths) {
    process.argv.push_back("--allow-path");
    process.argv.push_back(dir);
  }

  TaskRunCallbacks callbacks;
  callbacks.on_step =
      [this, key, placements = assignment.placements()](const geotrain::v1::StepReport& report) {
        OnStep(key, report, placements);
      };
  callbacks.on_log = [this](const geotrain::v1::LogLine& line) { OnLog(line); };
  callbacks.on_end = [this](const geotrain::v1::TaskStatus& status) { OnEnd(status); };
  StatusOr<std::unique_ptr<TaskRun>> run = TaskRun::Start(
      key, process, (dir / "task.log").string(), std::move(callbacks), options_.task_log_cap_bytes);
  if (!run.ok()) {
    spdlog::error("task {}: {}", key.Describe(), run.status().message());
    SetStatusLocked(Failed(key, run.status().message(), /*permanent=*/false));
    RemoveAssignmentFileLocked(key);
    return;
  }
  spdlog::info("task {} started (pid {}, directory {})", key.Describe(), (*run)->pid(),
               dir.string());
  runs_[key] = std::move(run).value();
  if (options_.metrics != nullptr) options_.metrics->TaskStarted(assignment.resume());
}

void TaskSupervisor::Stop(const geotrain::v1::StopOrder& order) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::vector<TaskKey> keys = table_.ActiveOf(order.job_id(), order.generation());
  if (keys.empty()) {
    spdlog::info("stop order for job {} generation {} ignored: no such task runs here",
                 order.job_id(), order.generation());
    return;
  }
  for (const TaskKey& key : keys) {
    spdlog::info("stopping task {} ({}); SIGKILL after {} ms", key.Describe(),
                 order.reason().empty() ? "no reason given" : order.reason(),
                 options_.stop_grace.count());
    const auto run = runs_.find(key);
    if (run != runs_.end()) run->second->Stop(options_.stop_grace);
  }
}

void TaskSupervisor::Forget(const geotrain::v1::ForgetTask& forget) {
  std::lock_guard<std::mutex> lock(mu_);
  const int forgotten = table_.Forget(forget.job_id(), forget.generation());
  spdlog::debug("forgot {} task(s) of job {} generation {}", forgotten, forget.job_id(),
                forget.generation());
  if (!table_.ActiveOf(forget.job_id(), forget.generation()).empty()) {
    spdlog::warn("told to forget job {} generation {} while its task still runs; it stays listed",
                 forget.job_id(), forget.generation());
  }
}

void TaskSupervisor::ChangeConfig(const geotrain::v1::ConfigChange& message) {
  const runtime::CodecChange change = CodecChangeOf(message);
  const std::string line = runtime::CodecChangeLine(change);
  // The child would refuse a bad line; refusing it here says so where the change arrived.
  if (StatusOr<runtime::CodecChange> valid = runtime::ParseCodecChangeLine(line); !valid.ok()) {
    spdlog::error("job {} generation {}: configuration change {} dropped: {}", message.job_id(),
                  message.generation(), line, valid.status().message());
    return;
  }
  std::string path;
  std::string task;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // A worker runs at most one rank of a job, so the job's active task is the one meant.
    const std::vector<TaskKey> keys = table_.ActiveOf(message.job_id(), message.generation());
    if (keys.empty()) {
      spdlog::warn(
          "job {} generation {}: configuration change for step {} dropped: no such "
          "task runs here",
          message.job_id(), message.generation(), change.effective_step);
      return;
    }
    path = (fs::path(TaskDir(keys.front())) / kConfigChangesFileName).string();
    task = keys.front().Describe();
  }
  if (Status appended = AppendLine(path, line); !appended.ok()) {
    spdlog::error("task {}: configuration change {} not delivered: {}", task, line,
                  appended.message());
    return;
  }
  spdlog::info("task {}: configuration change for step {} passed on: {}", task,
               change.effective_step, line);
}

std::string TaskSupervisor::TaskDir(const TaskKey& key) const {
  return (fs::path(options_.work_dir) / "tasks" / key.DirName()).string();
}

geotrain::v1::SessionHello TaskSupervisor::Hello() {
  std::lock_guard<std::mutex> lock(mu_);
  geotrain::v1::SessionHello hello;
  hello.set_worker_id(worker_id_);
  // A task that ended while the coordinator was unreachable (restarting, say) can still have
  // step reports in the outbox. The coordinator ends a job when its last rank ends and ignores
  // reports after that, so such a task is listed as running and its end follows its reports.
  std::set<TaskKey> ending;
  for (geotrain::v1::TaskStatus& status : table_.HelloTasks()) {
    const TaskKey key = TaskKey::Of(status);
    if (!IsActive(status.state()) &&
        outbox_->HoldsStep([&](const auto& report) { return TaskKey::Of(report) == key; })) {
      ending.insert(key);
      const geotrain::v1::TaskState end = status.state();
      // An earlier hello may have dropped the end from the outbox.
      if (!outbox_->HoldsStatus([&](const auto& pending) {
            return TaskKey::Of(pending) == key && pending.state() == end;
          })) {
        outbox_->PushStatus(status);
      }
      const int64_t last_step = status.last_step();
      status = key.Status(geotrain::v1::TASK_STATE_RUNNING);
      status.set_last_step(last_step);
    }
    *hello.add_tasks() = std::move(status);
  }
  // Refusals never entered the table: those still have to go out as they are.
  outbox_->DropStatuses([&](const geotrain::v1::TaskStatus& status) {
    const TaskKey key = TaskKey::Of(status);
    return table_.Find(key) != nullptr && ending.count(key) == 0;
  });
  return hello;
}

void TaskSupervisor::ReapEnded() {
  std::vector<std::unique_ptr<TaskRun>> ended;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = runs_.begin(); it != runs_.end();) {
      if (it->second->ended()) {
        ended.push_back(std::move(it->second));
        it = runs_.erase(it);
      } else {
        ++it;
      }
    }
  }
  ended.clear();  // joins their threads, outside the lock
}

void TaskSupervisor::StopAll() {
  std::lock_guard<std::mutex> lock(mu_);
  closing_ = true;
  for (auto& [key, run] : runs_) {
    if (!run->ended()) run->Stop(options_.stop_grace);
  }
}

bool TaskSupervisor::AnyActive() const {
  std::lock_guard<std::mutex> lock(mu_);
  return table_.AnyActive().has_value();
}

void TaskSupervisor::SetStatusLocked(const geotrain::v1::TaskStatus& status) {
  table_.Update(status);
  PublishTaskCountsLocked();
  outbox_->PushStatus(status);
}

void TaskSupervisor::PublishTaskCountsLocked() {
  if (options_.metrics == nullptr) return;
  int starting = 0;
  int running = 0;
  // Forgotten tasks are left out of the hello list, but only ended ones can be forgotten.
  for (const geotrain::v1::TaskStatus& status : table_.HelloTasks()) {
    starting += status.state() == geotrain::v1::TASK_STATE_STARTING;
    running += status.state() == geotrain::v1::TASK_STATE_RUNNING;
  }
  options_.metrics->SetTaskCounts(starting, running);
}

void TaskSupervisor::OnStep(
    const TaskKey& key, const geotrain::v1::StepReport& report,
    const google::protobuf::RepeatedPtrField<geotrain::v1::Placement>& placements) {
  // Outside the lock: the metrics need nothing of the supervisor's.
  if (options_.metrics != nullptr) options_.metrics->OnStep(report, placements);
  std::lock_guard<std::mutex> lock(mu_);
  if (const geotrain::v1::TaskStatus* current = table_.Find(key)) {
    geotrain::v1::TaskStatus status = *current;
    status.set_last_step(std::max(status.last_step(), report.step()));
    if (status.state() == geotrain::v1::TASK_STATE_STARTING) {
      status.set_state(geotrain::v1::TASK_STATE_RUNNING);
      spdlog::info("task {} running (first step {})", key.Describe(), report.step());
      SetStatusLocked(status);
    } else {
      table_.Update(status);  // the newest step travels in the step reports themselves
    }
  }
  outbox_->PushStep(report);
}

void TaskSupervisor::OnLog(const geotrain::v1::LogLine& line) {
  std::lock_guard<std::mutex> lock(mu_);
  geotrain::v1::LogLine stamped = line;
  stamped.set_worker_id(worker_id_);
  outbox_->PushLog(std::move(stamped));
}

void TaskSupervisor::OnEnd(const geotrain::v1::TaskStatus& status) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    const TaskKey key = TaskKey::Of(status);
    const auto state = geotrain::v1::TaskState_Name(status.state());
    if (status.state() == geotrain::v1::TASK_STATE_FAILED) {
      spdlog::warn("task {} {} (exit code {}{}): {}", key.Describe(), state, status.exit_code(),
                   status.permanent() ? ", permanent" : "", status.message());
    } else {
      spdlog::info("task {} {} after step {}", key.Describe(), state, status.last_step());
    }
    SetStatusLocked(status);
    RemoveAssignmentFileLocked(key);
  }
  if (on_task_end_) on_task_end_();
}

void TaskSupervisor::RemoveAssignmentFileLocked(const TaskKey& key) {
  const fs::path path = fs::path(TaskDir(key)) / "assignment.pb";
  std::error_code ec;
  if (!fs::remove(path, ec) && ec) {
    spdlog::warn("task {}: cannot delete {} (it holds the job's frame key): {}", key.Describe(),
                 path.string(), ec.message());
  }
}

}  // namespace geotrain::worker
