#include "worker/task_run.h"

#include <spdlog/spdlog.h>

#include "common/clock.h"
#include "worker/step_line.h"

namespace geotrain::worker {

StatusOr<std::unique_ptr<TaskRun>> TaskRun::Start(const TaskKey& key, const ProcessSpec& process,
                                                  const std::string& log_path,
                                                  TaskRunCallbacks callbacks,
                                                  uint64_t log_cap_bytes) {
  GEOTRAIN_ASSIGN_OR_RETURN(std::unique_ptr<TaskLog> log, TaskLog::Open(log_path, log_cap_bytes));
  std::unique_ptr<TaskRun> run(new TaskRun(key, std::move(log), std::move(callbacks)));
  TaskRun* self = run.get();
  GEOTRAIN_ASSIGN_OR_RETURN(
      run->process_,
      TaskProcess::Start(
          process,
          [self](OutputStream stream, const std::string& line) { self->OnLine(stream, line); },
          [self](const ProcessExit& exit) { self->OnExit(exit); }));
  return run;
}

void TaskRun::OnLine(OutputStream stream, const std::string& line) {
  log_->Append(line);
  if (stream == OutputStream::kStdout) {
    StatusOr<geotrain::v1::StepReport> report = ParseStepLine(line);
    if (report.ok()) {
      report->set_job_id(key_.job_id);
      report->set_generation(key_.generation);
      report->set_stage(key_.stage);
      report->set_replica(key_.replica);
      last_step_ = std::max(last_step_, report->step());
      if (callbacks_.on_step) callbacks_.on_step(*report);
      return;
    }
    // A broken step line is still worth seeing: it goes on as a log line.
    if (report.status().code() == StatusCode::kInvalidArgument) {
      spdlog::warn("task {}: {}", key_.Describe(), report.status().message());
    }
  } else {
    errors_.Add(line);
  }
  geotrain::v1::LogLine log;
  log.set_job_id(key_.job_id);
  log.set_generation(key_.generation);
  log.set_stage(key_.stage);
  log.set_replica(key_.replica);
  log.set_unix_ms(RealClock().NowUnixMs());
  log.set_text(line);
  if (callbacks_.on_log) callbacks_.on_log(log);
}

void TaskRun::OnExit(const ProcessExit& exit) {
  const geotrain::v1::TaskStatus status = EndStatus(key_, exit, errors_.Last(), last_step_);
  if (callbacks_.on_end) callbacks_.on_end(status);
}

}  // namespace geotrain::worker
