// FollowJob: reads a job's WatchJob stream to its end, surviving coordinator restarts.
//
// The stream is behind two small interfaces (JobUpdateSource, JobUpdateStream) so that the
// reconnect and resume logic is tested with a scripted source and a ManualClock, which the
// back-off sleeps on; the real source is CoordinatorClient. Single-threaded: FollowJob calls the
// handler on the caller's thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/backoff.h"
#include "common/clock.h"
#include "common/status.h"
#include "geotrain/v1/coordinator.pb.h"

namespace geotrain::cli {

// One WatchJob call's server stream. One reader; Finish is called once, after Next returned false.
class JobUpdateStream {
 public:
  virtual ~JobUpdateStream() = default;
  // Blocks for the next update; false once the stream ended.
  virtual bool Next(v1::JobUpdate* update) = 0;
  // Why the stream ended: OK when the coordinator closed it normally.
  virtual Status Finish() = 0;
};

class JobUpdateSource {
 public:
  virtual ~JobUpdateSource() = default;
  virtual std::unique_ptr<JobUpdateStream> WatchJob(const v1::WatchJobRequest& request) = 0;
  virtual StatusOr<v1::Job> GetJob(const std::string& job_id) = 0;
};

// Receives what FollowJob reads, in order; every event and log line exactly once.
class JobUpdateHandler {
 public:
  virtual ~JobUpdateHandler() = default;
  virtual void OnJob(const v1::Job& job) = 0;
  virtual void OnEvent(const v1::JobEvent& event) = 0;
  virtual void OnLog(const v1::SequencedLogLine& line) = 0;
  // The stream broke (`why`); FollowJob keeps trying to resume for up to `give_up_after_ms`.
  // Called once per break, not per attempt.
  virtual void OnStreamBroken(const Status& why, int64_t give_up_after_ms) = 0;
};

struct FollowOptions {
  // job_id, follow, include_events, include_logs; after_* say where to start.
  v1::WatchJobRequest request;
  // Give up when no stream has delivered anything for this long since it broke
  // (--reconnect-seconds).
  int64_t reconnect_ms = 120'000;
  // Pause before each new attempt, doubling from 500 ms to 5 s. No jitter: a follower only
  // reads, so followers coming back together after a coordinator restart cost it little.
  BackoffOptions backoff{std::chrono::milliseconds(500), std::chrono::milliseconds(5'000), 0.0};
};

struct FollowResult {
  // The newest snapshot of the job; with request.follow, the finished job.
  std::optional<v1::Job> job;
  // The newest sequence numbers handed to the handler (or the request's after_* values).
  int64_t last_event_sequence = 0;
  int64_t last_log_sequence = 0;
};

// Reads the job's updates until its stream ends normally: once without request.follow; with it,
// until the job has finished (a clean end before that, as a coordinator shutting down may cause,
// is checked with GetJob and counts as a break). Breaks with Unavailable, DeadlineExceeded or
// Internal are retried with back-off, resuming after the last event and log line seen; other
// errors are returned as they are, and running out of reconnect_ms as Unavailable.
StatusOr<FollowResult> FollowJob(JobUpdateSource& source, const FollowOptions& options,
                                 JobUpdateHandler& handler, Clock& clock);

}  // namespace geotrain::cli
