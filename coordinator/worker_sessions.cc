// CoordinatorCore: worker daemons. Registration, sessions (hello reconciliation, messages,
// disconnects) and deaths. Every function here takes or runs under mu_.
#include <spdlog/spdlog.h>

#include <set>

#include "coordinator/coordinator_core.h"
#include "coordinator/job_state_machine.h"

namespace geotrain::coordinator {

StatusOr<v1::RegisterResponse> CoordinatorCore::Register(const v1::RegisterRequest& request) {
  const v1::WorkerCapabilities& caps = request.capabilities();
  if (caps.data_port_min() > caps.data_port_max()) {
    return InvalidArgument("capabilities.data_port_min: " + std::to_string(caps.data_port_min()) +
                           " is above data_port_max " + std::to_string(caps.data_port_max()));
  }
  if (caps.data_port_max() > 65535) {
    return InvalidArgument("capabilities.data_port_max: " + std::to_string(caps.data_port_max()) +
                           " is not a TCP port");
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (shutting_down()) return Unavailable("the coordinator is shutting down");
  const int64_t now = clock_->NowUnixMs();
  WorkerEntry* worker = request.worker_id().empty() ? nullptr : FindWorker(request.worker_id());
  if (worker != nullptr) {
    *worker->record.mutable_capabilities() = caps;
    worker->last_seen_ms = now;
    worker->record.set_last_heartbeat_unix_ms(now);
    PersistWorker(*worker);
    spdlog::info("worker {} registered again (host {}, region '{}', {})", worker->record.id(),
                 caps.host(), caps.region(), caps.device_kind());
  } else {
    GEOTRAIN_ASSIGN_OR_RETURN(uint64_t number, store_->NextWorkerNumber());
    auto entry = std::make_unique<WorkerEntry>();
    v1::Worker& record = entry->record;
    record.set_id("w-" + std::to_string(number));
    *record.mutable_capabilities() = caps;
    // Not connected until its session opens; it has a heartbeat timeout to do so.
    record.set_state(v1::WORKER_STATE_DISCONNECTED);
    record.set_registered_unix_ms(now);
    record.set_last_heartbeat_unix_ms(now);
    entry->last_seen_ms = now;
    Status status = store_->PutWorker(record);
    if (!status.ok()) return status.WithContext("registering a worker");
    if (!request.worker_id().empty()) {
      spdlog::warn("a worker presented the unknown id '{}' (state of another coordinator?); "
                   "it gets the new id {}",
                   request.worker_id(), record.id());
    }
    spdlog::info("worker {} registered (host {}, region '{}', {}, data plane {})", record.id(),
                 caps.host(), caps.region(), caps.device_kind(), caps.advertise_address());
    worker = entry.get();
    workers_[record.id()] = std::move(entry);
  }
  v1::RegisterResponse response;
  response.set_worker_id(worker->record.id());
  response.set_heartbeat_interval_ms(options_.heartbeat_interval_ms);
  response.set_heartbeat_timeout_ms(options_.heartbeat_timeout_ms);
  return response;
}

StatusOr<uint64_t> CoordinatorCore::OpenSession(const v1::SessionHello& hello,
                                                std::shared_ptr<SessionSink> sink) {
  if (hello.worker_id().empty()) {
    return InvalidArgument("hello.worker_id: empty (call Register first and present its id)");
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (shutting_down()) return Unavailable("the coordinator is shutting down");
  WorkerEntry* worker = FindWorker(hello.worker_id());
  if (worker == nullptr) {
    return NotFound("hello.worker_id: worker '" + hello.worker_id() +
                    "' is not registered with this coordinator (call Register first)");
  }
  if (worker->session != nullptr) {
    spdlog::info("worker {}: a new session replaces session {}", worker->record.id(),
                 worker->session_id);
    worker->session->Close();
  }
  const bool was_dead = worker->record.state() == v1::WORKER_STATE_DEAD;
  const int64_t now = clock_->NowUnixMs();
  worker->session = std::move(sink);
  worker->session_id = next_session_id_++;
  worker->last_seen_ms = now;
  worker->record.set_last_heartbeat_unix_ms(now);
  if (was_dead) worker->record.set_state(v1::WORKER_STATE_DISCONNECTED);

  // The hello is the worker's whole truth: its open tasks are exactly the ones it lists.
  worker->open_tasks.clear();
  std::set<std::pair<std::string, uint32_t>> listed;
  for (const v1::TaskStatus& task : hello.tasks()) {
    if (task.job_id().empty() || task.state() == v1::TASK_STATE_UNSPECIFIED) {
      spdlog::warn("worker {}: hello lists a task without job_id or state; ignored",
                   worker->record.id());
      continue;
    }
    listed.insert({task.job_id(), task.generation()});
    ApplyTaskStatus(*worker, task);
  }
  for (const std::string& job_id : job_order_) {
    JobEntry& entry = *jobs_[job_id];
    if (!HoldsPlacement(entry.job.state())) continue;
    for (size_t r = 0; r < entry.ranks.size(); ++r) {
      const RankTask& rank = entry.ranks[r];
      if (rank.worker_id != worker->record.id() || rank.Ended()) continue;
      if (listed.count({job_id, entry.job.generation()}) != 0) continue;
      const int stage = static_cast<int>(r) % entry.figures.num_stages;
      const int replica = static_cast<int>(r) / entry.figures.num_stages;
      RankLost(entry, r,
               "worker " + worker->record.id() + " reconnected without its task (stage " +
                   std::to_string(stage) + ", replica " + std::to_string(replica) +
                   "): its daemon restarted or never received the assignment");
    }
  }
  RefreshWorkerState(*worker);
  spdlog::info("worker {} connected (session {}, {} tasks listed{})", worker->record.id(),
               worker->session_id, hello.tasks_size(), was_dead ? ", was dead" : "");
  // Its links are measured at once, both ways (its own order, and the other probers' next).
  probe_scheduler_.WorkerJoined(worker->record.id());
  SendDueProbes();
  Wake();
  return worker->session_id;
}

Status CoordinatorCore::HandleWorkerMessage(const std::string& worker_id, uint64_t session_id,
                                            const v1::WorkerMessage& message) {
  std::lock_guard<std::mutex> lock(mu_);
  if (shutting_down()) return Unavailable("the coordinator is shutting down");
  WorkerEntry* worker = FindWorker(worker_id);
  if (worker == nullptr || worker->session_id != session_id || worker->session == nullptr) {
    return FailedPrecondition("session " + std::to_string(session_id) + " of worker " + worker_id +
                              " is no longer current (replaced by a newer session, or the "
                              "worker was declared dead); open a new session");
  }
  const int64_t now = clock_->NowUnixMs();
  worker->last_seen_ms = now;
  worker->record.set_last_heartbeat_unix_ms(now);
  switch (message.body_case()) {
    case v1::WorkerMessage::kHello:
      return FailedPrecondition("a SessionHello is only valid as the first message of a session");
    case v1::WorkerMessage::kHeartbeat:
      break;
    case v1::WorkerMessage::kTask:
      if (message.task().job_id().empty() ||
          message.task().state() == v1::TASK_STATE_UNSPECIFIED) {
        spdlog::warn("worker {}: task status without job_id or state; ignored", worker_id);
        break;
      }
      ApplyTaskStatus(*worker, message.task());
      RefreshWorkerState(*worker);
      Wake();
      break;
    case v1::WorkerMessage::kSteps:
      ApplyStepReports(*worker, message.steps());
      break;
    case v1::WorkerMessage::kLogs:
      ApplyLogLines(*worker, message.logs());
      break;
    case v1::WorkerMessage::kProbes:
      ApplyProbeResults(*worker, message.probes());
      break;
    case v1::WorkerMessage::BODY_NOT_SET:
      // A newer worker's message kind; it still counted as a heartbeat.
      spdlog::debug("worker {}: message of an unknown kind; ignored", worker_id);
      break;
  }
  return OkStatus();
}

void CoordinatorCore::CloseSession(const std::string& worker_id, uint64_t session_id) {
  std::lock_guard<std::mutex> lock(mu_);
  WorkerEntry* worker = FindWorker(worker_id);
  if (worker == nullptr || worker->session_id != session_id || worker->session == nullptr) return;
  worker->session.reset();
  worker->session_id = 0;
  probe_scheduler_.WorkerLeft(worker_id);
  RefreshWorkerState(*worker);
  spdlog::info("worker {} disconnected (session {}); dead unless it reconnects within {} ms",
               worker_id, session_id,
               worker->last_seen_ms + options_.heartbeat_timeout_ms - clock_->NowUnixMs());
}

void CoordinatorCore::DeclareDead(WorkerEntry& worker) {
  const std::string id = worker.record.id();
  spdlog::warn("worker {} declared dead: no message for {} ms", id,
               clock_->NowUnixMs() - worker.last_seen_ms);
  if (worker.session != nullptr) worker.session->Close();
  worker.session.reset();
  worker.session_id = 0;
  probe_scheduler_.WorkerLeft(id);
  worker.open_tasks.clear();
  worker.record.set_state(v1::WORKER_STATE_DEAD);
  RefreshWorkerState(worker);
  PersistWorker(worker);
  for (const std::string& job_id : job_order_) {
    JobEntry& entry = *jobs_[job_id];
    if (!HoldsPlacement(entry.job.state())) continue;
    for (size_t r = 0; r < entry.ranks.size(); ++r) {
      if (entry.ranks[r].worker_id != id || entry.ranks[r].Ended()) continue;
      const int stage = static_cast<int>(r) % entry.figures.num_stages;
      const int replica = static_cast<int>(r) / entry.figures.num_stages;
      RankLost(entry, r,
               "worker " + id + " (stage " + std::to_string(stage) + ", replica " +
                   std::to_string(replica) + ") declared dead: no heartbeat for " +
                   std::to_string(options_.heartbeat_timeout_ms) + " ms");
    }
  }
}

}  // namespace geotrain::coordinator
