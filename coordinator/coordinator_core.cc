// CoordinatorCore: construction and loading, shared helpers, the CLI's queries, Tick.
// Workers and sessions are in worker_sessions.cc, the job lifecycle (placement, task status,
// recovery, steps, logs) in job_lifecycle.cc, the links in link_measurements.cc, the writes to
// the StateStore and the error state a failed one leaves in state_writes.cc.
#include "coordinator/coordinator_core.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/utf8.h"
#include "coordinator/frame_key.h"
#include "coordinator/job_figures.h"
#include "coordinator/job_state_machine.h"
#include "runtime/job_spec.h"

namespace geotrain::coordinator {
namespace {

// As LoadJobSpecFile: a job file is small; anything larger is a mistake (or an attack).
constexpr size_t kMaxSpecBytes = size_t{1} << 20;
// SubmitJobRequest.source names a file in messages and events.
constexpr size_t kMaxSourceBytes = 4096;

// The planner multiplies these (hidden^2 x layers), so each is bounded far above real models
// (hidden 16384, 128 layers, 256k vocabulary) yet low enough that no product overflows.
Status CheckModelShape(const v1::ModelShape& shape) {
  const std::pair<const char*, std::pair<int64_t, int64_t>> fields[] = {
      {"hidden_size", {shape.hidden_size(), int64_t{1} << 20}},
      {"layers", {shape.layers(), int64_t{1} << 16}},
      {"vocab_size", {shape.vocab_size(), int64_t{1} << 24}}};
  for (const auto& [name, value_and_limit] : fields) {
    const auto [value, limit] = value_and_limit;
    if (value < 0 || value > limit) {
      return InvalidArgument(std::string("model_shape.") + name + ": " + std::to_string(value) +
                             " is outside [0, " + std::to_string(limit) + "]");
    }
  }
  return OkStatus();
}

const char* WorkerStateName(v1::WorkerState state) {
  switch (state) {
    case v1::WORKER_STATE_IDLE:
      return "idle";
    case v1::WORKER_STATE_BUSY:
      return "busy";
    case v1::WORKER_STATE_DISCONNECTED:
      return "disconnected";
    case v1::WORKER_STATE_DEAD:
      return "dead";
    default:
      return "unspecified";
  }
}

// Figures for a stored job: its spec was valid when submitted; should a newer parser refuse it,
// the job still runs and only the spec-derived progress figures (tokens per second) stay 0.
StepFigures StoredJobFigures(const v1::Job& job) {
  StatusOr<runtime::JobSpec> spec = runtime::ParseJobSpec(job.spec_yaml());
  if (spec.ok()) return StepFiguresOf(*spec);
  spdlog::warn("{}: its stored spec no longer parses ({}); tokens per second will show 0", job.id(),
               spec.status().ToString());
  StepFigures figures;
  figures.num_stages = std::max(1, job.num_stages());
  figures.replicas = std::max(1, job.replicas());
  figures.total_steps = job.progress().total_steps();
  return figures;
}

}  // namespace

bool CoordinatorCore::RankTask::Ended() const {
  return lost || state == v1::TASK_STATE_SUCCEEDED || state == v1::TASK_STATE_FAILED ||
         state == v1::TASK_STATE_STOPPED;
}

bool CoordinatorCore::RankTask::Started() const {
  return reported_step || state == v1::TASK_STATE_RUNNING || state == v1::TASK_STATE_SUCCEEDED;
}

CoordinatorCore::CoordinatorCore(const CoordinatorOptions& options, StateStore* store,
                                 RendezvousScopes* scopes, Clock* clock)
    : options_(options),
      store_(store),
      scopes_(scopes),
      clock_(clock),
      probe_scheduler_(options.probes) {}

CoordinatorCore::~CoordinatorCore() = default;

StatusOr<std::unique_ptr<CoordinatorCore>> CoordinatorCore::Create(
    const CoordinatorOptions& options, StateStore* store, RendezvousScopes* scopes, Clock* clock) {
  if (options.heartbeat_interval_ms == 0) {
    return InvalidArgument("heartbeat_interval_ms: must be positive");
  }
  if (options.heartbeat_timeout_ms <= options.heartbeat_interval_ms) {
    return InvalidArgument("heartbeat_timeout_ms: " + std::to_string(options.heartbeat_timeout_ms) +
                           " must exceed heartbeat_interval_ms (" +
                           std::to_string(options.heartbeat_interval_ms) + ")");
  }
  if (options.stop_timeout_ms <= 0) return InvalidArgument("stop_timeout_ms: must be positive");
  if (options.link_persist_interval_ms < 0) {
    return InvalidArgument("link_persist_interval_ms: must not be negative");
  }
  GEOTRAIN_RETURN_IF_ERROR(options.probes.Validate());
  GEOTRAIN_ASSIGN_OR_RETURN(StoredState state, store->Load());
  std::unique_ptr<CoordinatorCore> core(new CoordinatorCore(options, store, scopes, clock));
  {
    std::lock_guard<std::mutex> lock(core->mu_);
    GEOTRAIN_RETURN_IF_ERROR(core->LoadLocked(std::move(state)));
  }
  return core;
}

Status CoordinatorCore::LoadLocked(StoredState state) {
  const int64_t now = clock_->NowMonotonicMs();
  for (v1::Job& job : state.jobs) {
    const std::string id = job.id();
    StepFigures figures = StoredJobFigures(job);
    auto entry = std::make_unique<JobEntry>(std::move(job), figures);
    InitTuning(*entry);
    entry->last_event_sequence = state.last_event_sequence[id];
    entry->last_log_sequence = state.last_log_sequence[id];
    if (IsTerminalJobState(entry->job.state())) {
      // An ended job needs no key; one left by an older coordinator (or a delete that failed)
      // goes now.
      if (state.frame_keys.count(id) != 0) {
        GEOTRAIN_RETURN_IF_ERROR(Write("deleting the frame key of the ended " + id,
                                       [&] { return store_->DeleteFrameKey(id); }));
      }
    } else if (auto key = state.frame_keys.find(id);
               key != state.frame_keys.end() && key->second.size() == kFrameKeyBytes) {
      entry->frame_key = key->second;
    } else {
      // Stored before jobs had keys (or the key was damaged): a new key is as good, since every
      // placement sends it to all of its ranks anew.
      GEOTRAIN_ASSIGN_OR_RETURN(entry->frame_key, NewFrameKey());
      GEOTRAIN_RETURN_IF_ERROR(Write("storing the new frame key of " + id,
                                     [&] { return store_->PutFrameKey(id, entry->frame_key); }));
      spdlog::info("{}: stored without a data-plane frame key; generated one", id);
    }
    entry->progress_persisted_ms = now;
    if (HoldsPlacement(entry->job.state())) {
      const size_t num_ranks =
          static_cast<size_t>(figures.num_stages) * static_cast<size_t>(figures.replicas);
      entry->ranks.resize(num_ranks);
      for (const v1::Placement& p : entry->job.placements()) {
        const size_t rank = static_cast<size_t>(p.replica()) * figures.num_stages + p.stage();
        if (rank < num_ranks) entry->ranks[rank].worker_id = p.worker_id();
      }
      // Whether the ranks stopped before the restart is unknown: wait for them (or the timeout)
      // again; their SessionHellos tell.
      entry->stop_deadline_ms = now + options_.stop_timeout_ms;
    }
    job_order_.push_back(id);
    jobs_[id] = std::move(entry);
  }
  for (v1::Worker& record : state.workers) {
    auto worker = std::make_unique<WorkerEntry>();
    worker->record = std::move(record);
    // Seen "in the future": its death deadline is the later of the heartbeat timeout and the
    // re-attach grace.
    worker->last_seen_ms =
        now + std::max<int64_t>(0, options_.reattach_grace_ms - options_.heartbeat_timeout_ms);
    const std::string id = worker->record.id();
    workers_[id] = std::move(worker);
  }
  // Tasks the coordinator believes running, until the workers' hellos say otherwise.
  for (auto& [id, entry] : jobs_) {
    for (size_t r = 0; r < entry->ranks.size(); ++r) {
      WorkerEntry* worker = FindWorker(entry->ranks[r].worker_id);
      if (worker == nullptr || worker->record.state() == v1::WORKER_STATE_DEAD) {
        entry->ranks[r].lost = true;
        continue;
      }
      worker->open_tasks[{id, entry->job.generation()}] = {
          static_cast<int>(r) % entry->figures.num_stages,
          static_cast<int>(r) / entry->figures.num_stages};
    }
  }
  for (auto& [id, worker] : workers_) {
    if (worker->record.state() != v1::WORKER_STATE_DEAD) {
      worker->record.set_state(v1::WORKER_STATE_DISCONNECTED);
    }
    RefreshWorkerState(*worker);
    PersistWorker(*worker);
  }
  // A placement naming a dead or unknown worker cannot be re-attached. (Deaths recover their
  // jobs at once, so this is what a crash between two writes can leave.)
  for (const std::string& id : job_order_) {
    JobEntry& entry = *jobs_[id];
    for (size_t r = 0; r < entry.ranks.size(); ++r) {
      const v1::JobState state = entry.job.state();
      if (entry.ranks[r].lost &&
          (state == v1::JOB_STATE_PLACING || state == v1::JOB_STATE_RUNNING)) {
        RankLost(entry, r,
                 "worker '" + entry.ranks[r].worker_id + "' of the placement is dead or unknown");
        break;
      }
    }
  }
  links_.Restore(state.links);
  links_persisted_ms_ = now;
  // A core that could not record its own start would refuse every call: better not to start.
  GEOTRAIN_RETURN_IF_ERROR(store_failure_);
  spdlog::info("loaded {} workers, {} jobs and {} link estimates from the state store",
               workers_.size(), jobs_.size(), links_.size());
  return OkStatus();
}

void CoordinatorCore::SetWakeHook(std::function<void()> hook) {
  std::lock_guard<std::mutex> lock(mu_);
  wake_hook_ = std::move(hook);
}

CoordinatorCore::JobEntry* CoordinatorCore::FindJob(const std::string& job_id) {
  auto it = jobs_.find(job_id);
  return it == jobs_.end() ? nullptr : it->second.get();
}

CoordinatorCore::WorkerEntry* CoordinatorCore::FindWorker(const std::string& worker_id) {
  auto it = workers_.find(worker_id);
  return it == workers_.end() ? nullptr : it->second.get();
}

void CoordinatorCore::Wake() {
  if (wake_hook_) wake_hook_();
}

void CoordinatorCore::BumpVersion() {
  std::lock_guard<std::mutex> lock(watch_mu_);
  ++version_;
  watch_cv_.notify_all();
}

void CoordinatorCore::SetWaitingFor(JobEntry& entry, const std::string& text) {
  if (entry.job.waiting_for() == text) return;
  entry.job.set_waiting_for(text);
  BumpVersion();
}

uint64_t CoordinatorCore::change_version() const {
  std::lock_guard<std::mutex> lock(watch_mu_);
  return version_;
}

uint64_t CoordinatorCore::WaitForChange(uint64_t seen, std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(watch_mu_);
  watch_cv_.wait_for(lock, timeout, [&] { return version_ != seen || shutting_down_.load(); });
  return version_;
}

bool CoordinatorCore::AppendEvent(JobEntry& entry, const std::string& text) {
  v1::JobEvent event;
  event.set_job_id(entry.job.id());
  event.set_sequence(entry.last_event_sequence + 1);
  event.set_unix_ms(clock_->NowUnixMs());
  event.set_state(entry.job.state());
  event.set_text(text);
  if (!PersistJob(entry, {std::move(event)})) return false;
  ++entry.last_event_sequence;
  BumpVersion();
  return true;
}

bool CoordinatorCore::Transition(JobEntry& entry, v1::JobState to, const std::string& why) {
  v1::Job& job = entry.job;
  const v1::JobState from = job.state();
  if (!IsAllowedTransition(from, to)) {
    spdlog::error("{}: refusing the transition {} -> {} ({}): not in the state machine", job.id(),
                  JobStateName(from), JobStateName(to), why);
    return false;
  }
  const int64_t now = clock_->NowUnixMs();
  const v1::Job before = job;
  job.set_state(to);
  const bool explains =
      to == v1::JOB_STATE_FAILED || to == v1::JOB_STATE_CANCELLED || to == v1::JOB_STATE_RECOVERING;
  job.set_message(explains ? why : "");
  job.clear_waiting_for();  // the next placement attempt says it again
  if (to == v1::JOB_STATE_RUNNING && job.started_unix_ms() == 0) job.set_started_unix_ms(now);
  if (IsTerminalJobState(to)) job.set_finished_unix_ms(now);
  if (!AppendEvent(entry, why)) {
    // Not on record, so not done: the job stays as it was, and the call that asked for the
    // transition answers UNAVAILABLE (state_writes.cc).
    job = before;
    return false;
  }
  spdlog::info("{}: {} -> {}: {}", job.id(), JobStateName(from), JobStateName(to), why);
  return true;
}

void CoordinatorCore::RefreshWorkerState(WorkerEntry& worker) {
  v1::Worker& record = worker.record;
  const v1::WorkerState before = record.state();
  v1::WorkerState after;
  if (worker.session == nullptr) {
    after = before == v1::WORKER_STATE_DEAD ? v1::WORKER_STATE_DEAD : v1::WORKER_STATE_DISCONNECTED;
  } else {
    after = worker.open_tasks.empty() ? v1::WORKER_STATE_IDLE : v1::WORKER_STATE_BUSY;
  }
  std::string job_id;
  int stage = 0;
  int replica = 0;
  if (!worker.open_tasks.empty()) {
    const auto& [key, rank] = *worker.open_tasks.begin();
    job_id = key.first;
    stage = rank.first;
    replica = rank.second;
  }
  if (after == before && job_id == record.job_id() && stage == record.stage() &&
      replica == record.replica()) {
    return;
  }
  record.set_state(after);
  record.set_job_id(job_id);
  record.set_stage(stage);
  record.set_replica(replica);
  if (after != before) {
    spdlog::debug("worker {}: {} -> {}", record.id(), WorkerStateName(before),
                  WorkerStateName(after));
  }
  PersistWorker(worker);
}

void CoordinatorCore::SendStop(const std::string& worker_id, const std::string& job_id,
                               uint32_t generation, const std::string& reason) {
  WorkerEntry* worker = FindWorker(worker_id);
  if (worker == nullptr || worker->session == nullptr) return;
  v1::CoordinatorMessage message;
  v1::StopOrder* stop = message.mutable_stop();
  stop->set_job_id(job_id);
  stop->set_generation(generation);
  stop->set_reason(reason);
  worker->session->Send(message);
}

void CoordinatorCore::SendForget(const std::string& worker_id, const std::string& job_id,
                                 uint32_t generation) {
  WorkerEntry* worker = FindWorker(worker_id);
  if (worker == nullptr || worker->session == nullptr) return;
  v1::CoordinatorMessage message;
  v1::ForgetTask* forget = message.mutable_forget();
  forget->set_job_id(job_id);
  forget->set_generation(generation);
  worker->session->Send(message);
}

// --- The CLI -----------------------------------------------------------------------------------

StatusOr<v1::Job> CoordinatorCore::SubmitJob(const v1::SubmitJobRequest& request) {
  if (request.spec_yaml().empty()) {
    return InvalidArgument("spec_yaml: empty (expected a job YAML, see docs/job-spec.md)");
  }
  if (request.spec_yaml().size() > kMaxSpecBytes) {
    return InvalidArgument("spec_yaml: " + std::to_string(request.spec_yaml().size()) +
                           " bytes exceed the limit of " + std::to_string(kMaxSpecBytes));
  }
  if (request.source().size() > kMaxSourceBytes) {
    return InvalidArgument("source: " + std::to_string(request.source().size()) +
                           " bytes exceed the limit of " + std::to_string(kMaxSourceBytes));
  }
  // Both are `bytes` on the wire (coordinator.proto): the spec's encoding is checked by
  // ParseJobSpec, naming the byte; the source goes into events, which must be UTF-8.
  if (const std::string invalid = DescribeInvalidUtf8(request.source()); !invalid.empty()) {
    return InvalidArgument("source: " + invalid);
  }
  GEOTRAIN_RETURN_IF_ERROR(CheckModelShape(request.model_shape()));
  StatusOr<runtime::JobSpec> spec = runtime::ParseJobSpec(request.spec_yaml());
  if (!spec.ok()) {
    Status status(StatusCode::kInvalidArgument, spec.status().message());
    return request.source().empty() ? status : status.WithContext(request.source());
  }
  const StepFigures figures = StepFiguresOf(*spec);

  std::lock_guard<std::mutex> lock(mu_);
  GEOTRAIN_RETURN_IF_ERROR(AcceptingChanges());
  uint64_t number = 0;
  GEOTRAIN_RETURN_IF_ERROR(Write("taking the next job number", [&]() -> Status {
    GEOTRAIN_ASSIGN_OR_RETURN(number, store_->NextJobNumber());
    return OkStatus();
  }));
  v1::Job job;
  job.set_id("job-" + std::to_string(number));
  GEOTRAIN_ASSIGN_OR_RETURN(std::string frame_key, NewFrameKey());
  // Stored before the job: a job on record always has its key.
  GEOTRAIN_RETURN_IF_ERROR(Write("storing the frame key of the new " + job.id(),
                                 [&] { return store_->PutFrameKey(job.id(), frame_key); }));
  job.set_name(spec->name);
  job.set_state(v1::JOB_STATE_QUEUED);
  job.set_spec_yaml(runtime::JobSpecToYaml(*spec));
  job.set_num_stages(spec->num_stages);
  job.set_replicas(spec->dp_size);
  job.set_max_restarts(MaxRestartsOf(*spec));
  job.set_submitted_unix_ms(clock_->NowUnixMs());
  job.mutable_progress()->set_total_steps(figures.total_steps);

  *job.mutable_model_shape() = request.model_shape();
  auto entry = std::make_unique<JobEntry>(job, figures);
  entry->frame_key = std::move(frame_key);
  InitTuning(*entry);
  job = entry->job;  // with the adaptive settings it starts from
  v1::JobEvent event;
  event.set_job_id(job.id());
  event.set_sequence(++entry->last_event_sequence);
  event.set_unix_ms(job.submitted_unix_ms());
  event.set_state(v1::JOB_STATE_QUEUED);
  event.set_text("submitted" + (request.source().empty() ? "" : " from " + request.source()) +
                 ": " + std::to_string(spec->num_stages) + " stages x " +
                 std::to_string(spec->dp_size) + " replicas");
  GEOTRAIN_RETURN_IF_ERROR(
      Write("storing the new " + job.id(), [&] { return store_->PutJob(job, {event}); }));
  entry->progress_persisted_ms = clock_->NowMonotonicMs();
  spdlog::info("{} submitted: '{}', {} stages x {} replicas", job.id(), job.name(),
               job.num_stages(), job.replicas());
  job_order_.push_back(job.id());
  jobs_[job.id()] = std::move(entry);
  BumpVersion();
  Wake();
  return job;
}

StatusOr<v1::Job> CoordinatorCore::GetJob(const std::string& job_id) const {
  if (job_id.empty()) return InvalidArgument("job_id: empty");
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return NotFound("job_id: no job '" + job_id + "'");
  return it->second->job;
}

StatusOr<v1::JobSteps> CoordinatorCore::GetJobSteps(const v1::GetJobStepsRequest& request) const {
  GEOTRAIN_RETURN_IF_ERROR(GetJob(request.job_id()).status());
  GEOTRAIN_ASSIGN_OR_RETURN(std::vector<v1::JobStep> steps,
                            store_->StepsAfter(request.job_id(), request.after_step()));
  v1::JobSteps response;
  for (v1::JobStep& step : steps) *response.add_steps() = std::move(step);
  return response;
}

std::vector<v1::Job> CoordinatorCore::ListJobs(bool include_finished) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<v1::Job> jobs;
  for (const std::string& id : job_order_) {
    const v1::Job& job = jobs_.at(id)->job;
    if (include_finished || !IsTerminalJobState(job.state())) jobs.push_back(job);
  }
  return jobs;
}

JobWindow CoordinatorCore::ListJobWindow(size_t finished_limit) const {
  std::lock_guard<std::mutex> lock(mu_);
  JobWindow window;
  std::vector<const v1::Job*> ordered;  // submission order
  ordered.reserve(job_order_.size());
  std::vector<size_t> shown;     // positions in `ordered`
  std::vector<size_t> finished;  // positions in `ordered`
  for (const std::string& id : job_order_) {
    const v1::Job& job = jobs_.at(id)->job;
    ++window.count_by_state[job.state()];
    (IsTerminalJobState(job.state()) ? finished : shown).push_back(ordered.size());
    ordered.push_back(&job);
  }
  if (finished.size() > finished_limit) {
    // Newest finish first; of two jobs finished in the same millisecond, the later submitted.
    auto newer = [&](size_t a, size_t b) {
      const int64_t fa = ordered[a]->finished_unix_ms();
      const int64_t fb = ordered[b]->finished_unix_ms();
      return fa != fb ? fa > fb : a > b;
    };
    std::nth_element(finished.begin(), finished.begin() + finished_limit, finished.end(), newer);
    finished.resize(finished_limit);
  }
  shown.insert(shown.end(), finished.begin(), finished.end());
  std::sort(shown.begin(), shown.end());
  window.jobs.reserve(shown.size());
  for (size_t position : shown) window.jobs.push_back(*ordered[position]);
  return window;
}

StatusOr<v1::Job> CoordinatorCore::CancelJob(const std::string& job_id) {
  if (job_id.empty()) return InvalidArgument("job_id: empty");
  std::lock_guard<std::mutex> lock(mu_);
  GEOTRAIN_RETURN_IF_ERROR(store_failure_);
  JobEntry* entry = FindJob(job_id);
  if (entry == nullptr) return NotFound("job_id: no job '" + job_id + "'");
  if (IsTerminalJobState(entry->job.state())) {
    return FailedPrecondition(job_id + " already " + JobStateName(entry->job.state()) +
                              "; only queued, placing, running or recovering jobs can be "
                              "cancelled");
  }
  FinishJob(*entry, v1::JOB_STATE_CANCELLED, "cancelled on request");
  GEOTRAIN_RETURN_IF_ERROR(store_failure_);
  return entry->job;
}

std::vector<v1::Worker> CoordinatorCore::ListWorkers(bool include_dead) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<v1::Worker> workers;
  for (const auto& [id, worker] : workers_) {
    if (include_dead || worker->record.state() != v1::WORKER_STATE_DEAD) {
      workers.push_back(worker->record);
    }
  }
  std::sort(workers.begin(), workers.end(),
            [](const v1::Worker& a, const v1::Worker& b) { return WorkerIdLess(a.id(), b.id()); });
  return workers;
}

// --- Time-driven work --------------------------------------------------------------------------

void CoordinatorCore::Tick() {
  std::lock_guard<std::mutex> lock(mu_);
  // After a failed write nothing is decided any more: each decision would need a write.
  if (shutting_down() || store_failed()) return;
  const int64_t now = clock_->NowMonotonicMs();

  for (auto& [id, worker] : workers_) {
    if (worker->record.state() == v1::WORKER_STATE_DEAD) continue;
    if (now - worker->last_seen_ms > static_cast<int64_t>(options_.heartbeat_timeout_ms)) {
      DeclareDead(*worker);
      if (store_failed()) return;
    }
  }

  for (const std::string& id : job_order_) {
    JobEntry& entry = *jobs_[id];
    if (entry.job.state() != v1::JOB_STATE_RECOVERING || entry.ranks.empty()) continue;
    const bool all_ended = std::all_of(entry.ranks.begin(), entry.ranks.end(),
                                       [](const RankTask& rank) { return rank.Ended(); });
    if (all_ended || now >= entry.stop_deadline_ms) FinishStops(entry, !all_ended);
    if (store_failed()) return;
  }

  // FIFO: the oldest waiting job goes first and nothing overtakes it, so a large job is never
  // starved by a stream of small ones. A recovering job still stopping its ranks waits in line.
  std::vector<PlacementCandidate> idle;
  for (const auto& [id, worker] : workers_) {
    const v1::WorkerCapabilities& caps = worker->record.capabilities();
    if (worker->record.state() == v1::WORKER_STATE_IDLE) {
      idle.push_back({id, caps.region(), WorkerSpeed(caps, false), CudaDevicesOf(caps)});
    }
  }
  std::string blocking;  // the job the ones behind it wait for
  for (const std::string& id : job_order_) {
    JobEntry& entry = *jobs_[id];
    const v1::JobState state = entry.job.state();
    const bool unplaced =
        state == v1::JOB_STATE_QUEUED || (state == v1::JOB_STATE_RECOVERING && entry.ranks.empty());
    if (unplaced && !blocking.empty()) {
      SetWaitingFor(entry, blocking + ", submitted earlier (jobs are placed in order)");
    } else if (unplaced) {
      if (!TryPlace(entry, &idle)) blocking = id;
      if (store_failed()) return;
    } else if (state == v1::JOB_STATE_RECOVERING && blocking.empty()) {
      blocking = id;
    }
  }

  for (auto& [id, entry] : jobs_) {
    if (entry->progress_dirty &&
        now - entry->progress_persisted_ms >= options_.progress_persist_interval_ms) {
      if (!PersistJob(*entry, {})) return;
    }
  }

  SendDueProbes();
  if (links_.dirty() && now - links_persisted_ms_ >= options_.link_persist_interval_ms) {
    PersistLinks();
  }
}

void CoordinatorCore::Shutdown() {
  std::lock_guard<std::mutex> lock(mu_);
  if (shutting_down_.exchange(true)) return;
  for (auto& [id, worker] : workers_) {
    if (worker->session == nullptr) continue;
    worker->session->Close();
    worker->session.reset();
    worker->session_id = 0;
    RefreshWorkerState(*worker);
  }
  for (auto& [id, entry] : jobs_) {
    if (entry->progress_dirty) PersistJob(*entry, {});
  }
  PersistLinks();
  BumpVersion();
}

}  // namespace geotrain::coordinator
