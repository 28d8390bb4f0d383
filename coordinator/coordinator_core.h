// CoordinatorCore: the control plane's state and decisions, without gRPC. The gRPC service
// (coordinator_service.h) translates RPCs into calls here; tests drive it directly with a
// ManualClock and recording SessionSinks.
//
// What it keeps: workers (registration, sessions, liveness, their open tasks), jobs (the state
// machine of job_state_machine.h, placements, per-rank task states of the current generation,
// progress from step reports), the link table (link_table.h: passive samples from step reports,
// probe results from the probes ProbeScheduler orders), and it writes every change that matters
// through the StateStore before the call returns (progress at most every
// progress_persist_interval_ms per job, links at most every link_persist_interval_ms).
//
// Failure policy (docs/architecture.md): a StateStore write that fails puts the core into a
// lasting error state (StateStoreFailure; state_writes.cc). A call is acknowledged only after its
// writes succeeded: the call whose write failed, and from then on every call that would change
// state (Register, OpenSession, worker messages other than heartbeats, SubmitJob, CancelJob),
// answers UNAVAILABLE naming the failed write; nothing more is written and Tick decides nothing;
// the queries keep answering. Only a restart clears it, so the database holds exactly what was
// acknowledged.
//
// Threading: every public method may be called from any thread; one mutex guards all state.
// Messages to workers go through SessionSink::Send, which only queues, so no call blocks on the
// network while holding the mutex. Tick() is the time-driven part (deaths, stop timeouts,
// placement), run by SchedulerThread in the daemon.
//
// Time (common/clock.h): every deadline and throttle (heartbeat timeout, stop timeout, progress
// and link persistence, probe intervals) runs on the clock's monotonic time, so that a step of
// the wall clock declares no worker dead; Unix time only goes into records, events and steps.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "coordinator/adaptive_controller.h"
#include "coordinator/caller_identity.h"
#include "coordinator/job_shape.h"
#include "coordinator/link_table.h"
#include "coordinator/placement.h"
#include "coordinator/probe_scheduler.h"
#include "coordinator/rendezvous_scopes.h"
#include "coordinator/session_sink.h"
#include "coordinator/state_store.h"
#include "coordinator/step_aggregator.h"
#include "geotrain/v1/coordinator.pb.h"

namespace geotrain::coordinator {

struct CoordinatorOptions {
  // Told to workers at registration: how often to send a heartbeat.
  uint32_t heartbeat_interval_ms = 1000;
  // A worker with no message for this long is declared dead (its jobs recover without it).
  uint32_t heartbeat_timeout_ms = 10000;
  // How long a recovering job waits for its other ranks to report their tasks ended before it
  // drops the placement and may be placed again.
  int64_t stop_timeout_ms = 30000;
  // After a coordinator start, how long the workers it knows get to reconnect before they are
  // declared dead (at least heartbeat_timeout_ms). Workers retry at most every 5 s, so a grace
  // shorter than that would re-place running jobs that were only waiting for their turn.
  int64_t reattach_grace_ms = 15000;
  // Progress from step reports reaches the store at most this often per job; state changes,
  // events and placements are written at once.
  int64_t progress_persist_interval_ms = 250;
  // Link estimates change with every step report; they reach the store at most this often (and
  // at Shutdown): a crash loses a few seconds of samples, which the next steps replace.
  int64_t link_persist_interval_ms = 5000;
  // Active link probes: when, how big, how many at once (probe_scheduler.h).
  ProbeSchedulerOptions probes;
};

// What the metrics page shows of the jobs, read under one lock (ListJobWindow).
struct JobWindow {
  // Every unfinished job and the most recently finished ones, in submission order.
  std::vector<v1::Job> jobs;
  // Every job the coordinator keeps, finished ones included, by state.
  std::map<v1::JobState, int64_t> count_by_state;
};

class CoordinatorCore {
 public:
  // Loads the stored state: workers start DISCONNECTED with a fresh heartbeat deadline, jobs keep
  // their states and are re-attached through the workers' SessionHellos. `store`, `scopes` and
  // `clock` are not owned and must outlive the core.
  static StatusOr<std::unique_ptr<CoordinatorCore>> Create(const CoordinatorOptions& options,
                                                           StateStore* store,
                                                           RendezvousScopes* scopes, Clock* clock);
  ~CoordinatorCore();

  // Called (under the core's mutex, so it must only signal) whenever a job might now be
  // placeable or a recovery might be over. Set once, before the first RPC.
  void SetWakeHook(std::function<void()> hook);

  // --- Worker daemons ---
  //
  // Identity (docs/security.md): a worker record is bound to the identity of the caller that
  // registered it (persisted in v1::Worker.identity). A caller presenting a worker id bound to
  // another identity, or one with identity presenting an id registered without (and vice versa,
  // on Session), is refused with PERMISSION_DENIED, logged with both names. A record registered
  // without identity (before per-worker certificates) is bound to the first identity that
  // registers it again. Without identities at all (loopback development) nothing changes.
  StatusOr<v1::RegisterResponse> Register(const v1::RegisterRequest& request,
                                          const CallerIdentity& caller = {});
  // Attaches a session and reconciles the tasks the worker lists. Returns the session's id for
  // the calls below. A certified caller cannot take a live session over: while the worker's
  // current session is open and its last message is younger than two heartbeat intervals, a
  // second one is refused (FAILED_PRECONDITION, logged); once the old stream has closed, or has
  // been silent for two intervals (a worker whose connection broke), the new session replaces
  // it, so a real worker comes back within a few seconds. Uncertified callers (development)
  // replace the old session at once, as before.
  StatusOr<uint64_t> OpenSession(const v1::SessionHello& hello, std::shared_ptr<SessionSink> sink,
                                 const CallerIdentity& caller = {});
  // Any message after the hello. An error means the session must end (it was replaced or the
  // worker declared dead, or the message breaks the protocol).
  Status HandleWorkerMessage(const std::string& worker_id, uint64_t session_id,
                             const v1::WorkerMessage& message);
  // The stream of `session_id` ended; the worker is DISCONNECTED unless a newer session exists.
  void CloseSession(const std::string& worker_id, uint64_t session_id);

  // --- The Rendezvous service ---
  // OK when `caller` may touch the rendezvous scope (job_id, generation): the job holds its
  // placement in that generation and one of the caller identity's workers holds a rank of it
  // that has not ended. Otherwise PERMISSION_DENIED naming the scope (logged). Callers without
  // identity (development, shared certificates) may touch any scope, as before.
  Status AuthorizeRendezvous(const CallerIdentity& caller, const std::string& job_id,
                             uint32_t generation) const;

  // --- The CLI ---
  StatusOr<v1::Job> SubmitJob(const v1::SubmitJobRequest& request);
  StatusOr<v1::Job> GetJob(const std::string& job_id) const;
  StatusOr<v1::JobSteps> GetJobSteps(const v1::GetJobStepsRequest& request) const;
  std::vector<v1::Job> ListJobs(bool include_finished) const;
  StatusOr<v1::Job> CancelJob(const std::string& job_id);
  std::vector<v1::Worker> ListWorkers(bool include_dead) const;
  // Empty while every StateStore write succeeded; else what failed and why ("writing job-3:
  // ...: database or disk is full"), kept until the coordinator is restarted.
  std::string StateStoreFailure() const;
  // Every directed pair of non-dead workers with the link table's estimates (zeros where a link
  // was never measured).
  v1::LinkMatrix GetLinks() const;

  // --- The metrics page ---
  // The unfinished jobs and the `finished_limit` most recently finished (by finish time, then
  // submission), with the counts by state. Unlike ListJobs(true) it copies no record outside
  // that window, so a scrape costs the same after thousands of finished jobs.
  JobWindow ListJobWindow(size_t finished_limit) const;
  // Every link the table has figures for, dead workers' included, by (src, dst).
  std::vector<LinkFigures> ListLinkFigures() const;

  // --- Watching (WatchJob) ---
  // Increases on every job event, log line, state or progress change.
  uint64_t change_version() const;
  // Returns the version once it differs from `seen`, after `timeout`, or at Shutdown().
  uint64_t WaitForChange(uint64_t seen, std::chrono::milliseconds timeout) const;
  bool shutting_down() const { return shutting_down_.load(); }

  // Declares silent workers dead, ends recoveries whose ranks stopped (or whose stop timeout
  // passed), places waiting jobs in FIFO order, sends due link probes and writes throttled
  // progress and link estimates.
  void Tick();

  // Closes every session, writes pending progress and links and refuses worker calls from then
  // on.
  void Shutdown();

 private:
  // One rank of a job's current generation.
  struct RankTask {
    std::string worker_id;
    v1::TaskState state = v1::TASK_STATE_UNSPECIFIED;  // unspecified: assigned, nothing heard
    bool reported_step = false;
    // Its worker died or reconnected without it: it runs nowhere we can reach.
    bool lost = false;
    bool Ended() const;
    bool Started() const;
  };
  struct JobEntry {
    v1::Job job;
    StepFigures figures;
    StepAggregator steps;
    // Ranks of job.generation, by rank (replica * num_stages + stage); empty while queued, and
    // once a recovery dropped the placement.
    std::vector<RankTask> ranks;
    int64_t stop_deadline_ms = 0;  // monotonic; recovering, while ranks is not empty
    int64_t last_event_sequence = 0;
    int64_t last_log_sequence = 0;
    bool progress_dirty = false;
    int64_t progress_persisted_ms = 0;  // monotonic
    // What placement knows of its steps, and with compression.adaptive its controller
    // (job_tuning.cc).
    StepShapeMeter shape_meter;
    std::optional<AdaptiveController> adaptive;
    // The CUDA devices each of its workers needs (job_shape.h CudaDevicesNeeded).
    int cuda_devices_needed = 0;
    // Each rank's compute in its newest step, by rank: the slowest paces the pipeline, so it is
    // the time every transfer of the step can hide behind.
    std::vector<double> rank_compute_seconds;
    // The job's data-plane key (frame_key.h), sent in every Assignment; never in `job`.
    std::string frame_key;
    JobEntry(v1::Job j, StepFigures f)
        : job(std::move(j)), figures(f), steps(f, job.generation()) {}
  };
  struct WorkerEntry {
    v1::Worker record;
    std::shared_ptr<SessionSink> session;  // null while DISCONNECTED or DEAD
    uint64_t session_id = 0;
    // Monotonic: the last message (or registration, or coordinator start); the heartbeat timeout
    // runs from here.
    int64_t last_seen_ms = 0;
    // Monotonic: the last message on the current session (its hello included); a Register does
    // not count. Whether a second session is refused (OpenSession) runs from here.
    int64_t session_seen_ms = 0;
    // Tasks the worker runs that have not ended, by (job id, generation): BUSY while any.
    std::map<std::pair<std::string, uint32_t>, std::pair<int, int>> open_tasks;
  };

  CoordinatorCore(const CoordinatorOptions& options, StateStore* store, RendezvousScopes* scopes,
                  Clock* clock);
  Status LoadLocked(StoredState state);

  // Everything below requires mu_.
  JobEntry* FindJob(const std::string& job_id);
  WorkerEntry* FindWorker(const std::string& worker_id);
  void Wake();
  void BumpVersion();
  // Sets Job.waiting_for, waking the watchers (`geotrain submit --wait`) when it changed.
  void SetWaitingFor(JobEntry& entry, const std::string& text);

  // state_writes.cc. Every StateStore write goes through Write: after the first that fails
  // nothing is written any more and Write answers store_failure_ at once.
  Status Write(const std::string& what, const std::function<Status()>& write);
  bool store_failed() const { return !store_failure_.ok(); }
  // OK, or why no change is accepted: the coordinator is shutting down or its store failed.
  Status AcceptingChanges() const;
  // Each returns whether its write happened (false: the core is in its error state now).
  bool PersistJob(JobEntry& entry, std::vector<v1::JobEvent> events);
  bool PersistWorker(const WorkerEntry& worker);
  bool PersistLinks();

  // Both return false, and leave the job record as it was, when the event was not written.
  bool AppendEvent(JobEntry& entry, const std::string& text);
  bool Transition(JobEntry& entry, v1::JobState to, const std::string& why);
  void RefreshWorkerState(WorkerEntry& worker);
  void SendStop(const std::string& worker_id, const std::string& job_id, uint32_t generation,
                const std::string& reason);
  void SendForget(const std::string& worker_id, const std::string& job_id, uint32_t generation);

  bool TryPlace(JobEntry& entry, std::vector<PlacementCandidate>* idle);

  // job_tuning.cc: placement planning and adaptive compression.
  void InitTuning(JobEntry& entry);
  std::optional<PlannedPlacement> PlanPlacement(const JobEntry& entry,
                                                const std::vector<PlacementCandidate>& idle) const;
  void ObserveForTuning(JobEntry& entry, const WorkerEntry& worker, const v1::StepReport& report);
  void AdaptCompression(JobEntry& entry, int64_t complete_step);
  void SendCodecChanges(JobEntry& entry, const std::vector<RankChange>& changes);
  void CheckStarted(JobEntry& entry);
  void StartRecovery(JobEntry& entry, const std::string& why);
  // False when the transition did not happen (nothing was sent then).
  bool FinishJob(JobEntry& entry, v1::JobState to, const std::string& why);
  void FinishStops(JobEntry& entry, bool timed_out);
  void RankLost(JobEntry& entry, size_t rank, const std::string& why);
  // The worker was heard from: its heartbeat deadline moves on (monotonic time) and its record
  // shows when (Unix time).
  void MarkSeen(WorkerEntry& worker);
  void DeclareDead(WorkerEntry& worker);

  void ApplyTaskStatus(WorkerEntry& worker, const v1::TaskStatus& task);
  void ApplyStepReports(WorkerEntry& worker, const v1::StepReports& reports);
  // INVALID_ARGUMENT naming the field of a report no worker may send (worker_sessions.cc).
  Status CheckStepReports(const v1::StepReports& reports);
  void ApplyLogLines(WorkerEntry& worker, const v1::LogLines& lines);
  void ApplyProbeResults(WorkerEntry& worker, const v1::ProbeResults& results);

  // Links (link_measurements.cc, under mu_). The planner and the adaptive controller read the
  // table through links().
  const LinkTable& links() const { return links_; }
  // Feeds the traffic of an accepted step report of `entry`'s current generation.
  void AddPassiveSamples(const JobEntry& entry, const std::string& worker_id,
                         const v1::StepReport& report);
  // Orders the probes ProbeScheduler finds due among the connected workers with a probe server.
  void SendDueProbes();

  const CoordinatorOptions options_;
  StateStore* const store_;
  RendezvousScopes* const scopes_;
  Clock* const clock_;

  mutable std::mutex mu_;
  std::function<void()> wake_hook_;
  std::map<std::string, std::unique_ptr<WorkerEntry>> workers_;
  std::map<std::string, std::unique_ptr<JobEntry>> jobs_;
  std::vector<std::string> job_order_;  // submission order: the scheduler's FIFO
  uint64_t next_session_id_ = 1;
  LinkTable links_;
  ProbeScheduler probe_scheduler_;
  int64_t links_persisted_ms_ = 0;  // monotonic
  // OK until a StateStore write fails; then the UNAVAILABLE that every refused call answers, and
  // the failed write with its error (StateStoreFailure). Never cleared.
  Status store_failure_;
  std::string store_failure_reason_;

  // Watchers wait here without holding mu_ (lock order: mu_, then watch_mu_).
  mutable std::mutex watch_mu_;
  mutable std::condition_variable watch_cv_;
  uint64_t version_ = 0;
  std::atomic<bool> shutting_down_{false};
};

}  // namespace geotrain::coordinator
