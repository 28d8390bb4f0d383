#include "cli/control_follow.h"

#include "cli/control_job_state.h"

namespace geotrain::cli {
namespace {

// Errors a broken connection or a restarting coordinator produces; anything else (an unknown job,
// a bad request) would fail the same way again.
bool IsRetriable(const Status& status) {
  return status.code() == StatusCode::kUnavailable ||
         status.code() == StatusCode::kDeadlineExceeded || status.code() == StatusCode::kInternal;
}

// Hands one update to the handler unless it was already handed over before a reconnect (the
// coordinator resumes after the sequence asked for, but need not be exact about it).
void Dispatch(const v1::JobUpdate& update, FollowResult& result, JobUpdateHandler& handler) {
  switch (update.body_case()) {
    case v1::JobUpdate::kJob:
      result.job = update.job();
      handler.OnJob(update.job());
      break;
    case v1::JobUpdate::kEvent:
      if (update.event().sequence() <= result.last_event_sequence) break;
      result.last_event_sequence = update.event().sequence();
      handler.OnEvent(update.event());
      break;
    case v1::JobUpdate::kLog:
      if (update.log().sequence() <= result.last_log_sequence) break;
      result.last_log_sequence = update.log().sequence();
      handler.OnLog(update.log());
      break;
    case v1::JobUpdate::BODY_NOT_SET:
      break;
  }
}

}  // namespace

StatusOr<FollowResult> FollowJob(JobUpdateSource& source, const FollowOptions& options,
                                 JobUpdateHandler& handler, Clock& clock) {
  const std::string& job_id = options.request.job_id();
  FollowResult result;
  result.last_event_sequence = options.request.after_event_sequence();
  result.last_log_sequence = options.request.after_log_sequence();
  Backoff backoff(options.backoff, clock);
  std::optional<int64_t> broken_since_ms;

  while (true) {
    v1::WatchJobRequest request = options.request;
    request.set_after_event_sequence(result.last_event_sequence);
    request.set_after_log_sequence(result.last_log_sequence);
    std::unique_ptr<JobUpdateStream> stream = source.WatchJob(request);
    bool received = false;
    v1::JobUpdate update;
    while (stream->Next(&update)) {
      received = true;
      Dispatch(update, result, handler);
    }
    Status status = stream->Finish();
    if (received) {
      broken_since_ms.reset();
      backoff.Reset();
    }

    if (status.ok()) {
      if (!request.follow()) return result;
      if (result.job.has_value() && IsFinishedJobState(result.job->state())) return result;
      StatusOr<v1::Job> job = source.GetJob(job_id);
      if (job.ok() && IsFinishedJobState(job->state())) {
        result.job = *job;
        handler.OnJob(*job);
        return result;
      }
      status = job.ok() ? Unavailable("the coordinator closed the stream of " + job_id +
                                      " while the job is " + JobStateName(job->state()))
                        : job.status();
    }
    if (!IsRetriable(status)) return status;

    const int64_t now_ms = clock.NowMonotonicMs();
    if (!broken_since_ms.has_value()) {
      broken_since_ms = now_ms;
      handler.OnStreamBroken(status, options.reconnect_ms);
    }
    const int64_t left_ms = options.reconnect_ms - (now_ms - *broken_since_ms);
    if (left_ms <= 0) {
      // Unavailable whatever the last error was: the coordinator could not be followed.
      return Unavailable("following " + job_id + ": no working stream for " +
                         std::to_string(options.reconnect_ms / 1000) +
                         " s (--reconnect-seconds), giving up; last error: " + status.ToString());
    }
    // The last pause ends at the deadline, so that one attempt is made right there.
    backoff.Wait(std::chrono::milliseconds(left_ms));
  }
}

}  // namespace geotrain::cli
