// TaskRun: one run of an Assignment's child process, with its output turned into the messages
// the coordinator wants: every stdout line that is a step line (step_line.h) becomes a
// StepReport, every other line of stdout or stderr a LogLine, and the child's end the task's
// final TaskStatus (task_end.h). Every line is also appended to the task's task.log.
//
// No gRPC and no locks of its own: callbacks run on the TaskProcess's monitor thread, one at a
// time, lines in order, on_end last and exactly once. Callers fill in what a run does not know
// (the worker id of a LogLine). Ownership: the caller owns the TaskRun and must not destroy it
// from inside a callback.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "common/status.h"
#include "geotrain/v1/job.pb.h"
#include "worker/task_end.h"
#include "worker/task_key.h"
#include "worker/task_log.h"
#include "worker/task_process.h"

namespace geotrain::worker {

struct TaskRunCallbacks {
  // A step the child completed (job, generation, stage and replica filled in).
  std::function<void(const geotrain::v1::StepReport&)> on_step;
  // Any other line, stamped with the time it arrived; worker_id left empty.
  std::function<void(const geotrain::v1::LogLine&)> on_log;
  // The final status: SUCCEEDED, FAILED or STOPPED.
  std::function<void(const geotrain::v1::TaskStatus&)> on_end;
};

class TaskRun {
 public:
  // Opens `log_path` and starts the child described by `process`.
  static StatusOr<std::unique_ptr<TaskRun>> Start(
      const TaskKey& key, const ProcessSpec& process, const std::string& log_path,
      TaskRunCallbacks callbacks, uint64_t log_cap_bytes = TaskLog::kDefaultCapBytes);

  const TaskKey& key() const { return key_; }
  pid_t pid() const { return process_->pid(); }
  // See TaskProcess::Stop.
  void Stop(std::chrono::milliseconds grace) { process_->Stop(grace); }
  bool ended() const { return process_->ended(); }
  void Wait() { process_->Wait(); }

 private:
  TaskRun(TaskKey key, std::unique_ptr<TaskLog> log, TaskRunCallbacks callbacks)
      : key_(std::move(key)), log_(std::move(log)), callbacks_(std::move(callbacks)) {}

  void OnLine(OutputStream stream, const std::string& line);
  void OnExit(const ProcessExit& exit);

  const TaskKey key_;
  std::unique_ptr<TaskLog> log_;
  TaskRunCallbacks callbacks_;
  // Monitor-thread state.
  StderrErrors errors_;
  int64_t last_step_ = 0;
  // Last: destroyed first, so the monitor thread has stopped before the members it uses go.
  std::unique_ptr<TaskProcess> process_;
};

}  // namespace geotrain::worker
