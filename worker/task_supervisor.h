// TaskSupervisor: runs the coordinator's orders on this worker. An Assignment becomes a task
// directory (WORK_DIR/tasks/<job>-g<generation>-s<stage>-r<replica>/assignment.pb, task.log) and
// a child process `geotrain-worker task ...` (TaskRun); a StopOrder stops the job's child
// (SIGTERM, SIGKILL after the grace); when a task ends its assignment.pb (which holds the job's
// frame key) is deleted, the rest of the directory kept; ForgetTask drops a finished task from the
// hello; a ConfigChange is appended, as one line, to the running task's config-changes.jsonl
// (created empty when the task starts), which the child polls before every step. What the tasks do
// (statuses, steps, lines) goes into the Outbox for the session to deliver.
//
// One task at a time: an Assignment while another task runs is refused with a FAILED status
// (not permanent) for the new one; a repeated Assignment for a known task is ignored.
//
// Threads: Handle, ReapEnded and StopAll run on the daemon's main thread (children are forked
// there, and Linux kills a child whose forking thread ends, see task_process.h). Task callbacks
// arrive on each child's monitor thread. One mutex guards the table, the runs and the worker id;
// lock order: this mutex, then the outbox's (and the metrics', which is taken last by anyone).
// Hello may be called from any thread.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/auth/channel_credentials.h"
#include "geotrain/v1/coordinator.pb.h"
#include "worker/outbox.h"
#include "worker/task_key.h"
#include "worker/task_run.h"
#include "worker/task_table.h"
#include "worker/worker_metrics.h"

namespace geotrain::worker {

struct SupervisorOptions {
  std::string coordinator;  // HOST:PORT, passed on to each child (rendezvous)
  // The daemon's --tls-* and --join-token-file, passed on to each child (absolute paths).
  auth::ClientCredentialFiles credential_files;
  std::string advertise;  // the children's --bind (Gloo listens there)
  std::string work_dir;   // tasks/ is created under it
  std::string data_root;  // the children's working directory; relative job paths resolve here
  // Passed on as the children's --data-root and --allow-path: where job paths may point.
  std::vector<std::string> allowed_paths;
  int threads = 0;  // intra-op threads per child (and OMP_NUM_THREADS); 0: LibTorch's
  std::chrono::milliseconds stop_grace{5000};  // SIGTERM -> SIGKILL
  std::string task_binary = "/proc/self/exe";  // the program run as `BINARY task ...`
  uint64_t task_log_cap_bytes = TaskLog::kDefaultCapBytes;
  // Told about task starts, task states and every step report; null: no metrics. Must outlive
  // the supervisor.
  WorkerMetrics* metrics = nullptr;
};

class TaskSupervisor {
 public:
  // `outbox` must outlive the supervisor; `on_task_end` is called (from a monitor thread, no lock
  // held) after a task's final status was pushed, so the main loop can reap it.
  TaskSupervisor(SupervisorOptions options, Outbox* outbox, std::function<void()> on_task_end);
  // Kills what still runs (SIGKILL) and waits for the monitor threads.
  ~TaskSupervisor();
  TaskSupervisor(const TaskSupervisor&) = delete;
  TaskSupervisor& operator=(const TaskSupervisor&) = delete;

  // The id log lines carry; set after each registration.
  void SetWorkerId(const std::string& id);

  // One order from the coordinator.
  void Handle(const geotrain::v1::CoordinatorMessage& message);

  // The hello of a new session: every task not forgotten. The outbox's pending statuses of
  // known tasks are dropped in the same step, since the hello carries each task's newest one
  // (a refused assignment's status stays queued).
  geotrain::v1::SessionHello Hello();

  // Destroys the runs whose children ended (joins their threads).
  void ReapEnded();
  // Shutdown: refuses new assignments from now on and stops every child (SIGTERM, grace,
  // SIGKILL). Returns at once; AnyActive() tells when they all ended.
  void StopAll();
  // A task is STARTING or RUNNING (its final status has not been pushed yet).
  bool AnyActive() const;

 private:
  void Assign(const geotrain::v1::Assignment& assignment);
  void Stop(const geotrain::v1::StopOrder& order);
  void Forget(const geotrain::v1::ForgetTask& forget);
  void ChangeConfig(const geotrain::v1::ConfigChange& change);
  std::string TaskDir(const TaskKey& key) const;
  // Records `status` and queues it for the coordinator. Requires mu_.
  void SetStatusLocked(const geotrain::v1::TaskStatus& status);
  // Deletes the task's assignment.pb: it holds the job's frame key, which must not outlive the
  // task on disk (the child reads it once, at its start). Requires mu_.
  void RemoveAssignmentFileLocked(const TaskKey& key);
  // Hands the table's STARTING and RUNNING counts to the metrics. Requires mu_.
  void PublishTaskCountsLocked();
  // Callbacks of a run; `placements` are its Assignment's (they name the peers in the metrics).
  void OnStep(const TaskKey& key, const geotrain::v1::StepReport& report,
              const google::protobuf::RepeatedPtrField<geotrain::v1::Placement>& placements);
  void OnLog(const geotrain::v1::LogLine& line);
  void OnEnd(const geotrain::v1::TaskStatus& status);

  const SupervisorOptions options_;
  Outbox* const outbox_;
  const std::function<void()> on_task_end_;

  mutable std::mutex mu_;
  std::string worker_id_;
  bool closing_ = false;
  TaskTable table_;
  std::map<TaskKey, std::unique_ptr<TaskRun>> runs_;
};

}  // namespace geotrain::worker
