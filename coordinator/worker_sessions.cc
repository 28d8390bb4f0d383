// CoordinatorCore: worker daemons. Registration, sessions (hello reconciliation, messages,
// disconnects) and deaths. Every function here takes or runs under mu_.
#include <spdlog/spdlog.h>

#include <set>

#include "coordinator/coordinator_core.h"
#include "coordinator/job_state_machine.h"

namespace geotrain::coordinator {
namespace {

// Limits on what a worker may claim or report: far beyond real values, tight enough that a
// hostile or broken worker cannot make the coordinator store megabytes per field or count steps
// into overflow. Strings: host names are at most 253 bytes, region and device names far less.
constexpr size_t kMaxIdentifierBytes = 256;
constexpr uint32_t kMaxCpuCount = 1 << 20;
constexpr uint32_t kMaxCudaDevices = 1024;
constexpr uint64_t kMaxDeviceMemoryBytes = uint64_t{1} << 50;  // 1 PiB
constexpr int64_t kMaxStep = int64_t{1} << 40;

Status CheckCapabilities(const v1::WorkerCapabilities& caps) {
  const std::pair<const char*, const std::string*> strings[] = {
      {"host", &caps.host()},
      {"advertise_address", &caps.advertise_address()},
      {"region", &caps.region()},
      {"device_kind", &caps.device_kind()},
      {"version", &caps.version()}};
  for (const auto& [name, value] : strings) {
    if (value->size() > kMaxIdentifierBytes) {
      return InvalidArgument(std::string("capabilities.") + name + ": " +
                             std::to_string(value->size()) + " bytes exceed the limit of " +
                             std::to_string(kMaxIdentifierBytes));
    }
  }
  if (caps.cpu_count() > kMaxCpuCount) {
    return InvalidArgument("capabilities.cpu_count: " + std::to_string(caps.cpu_count()) +
                           " exceeds the limit of " + std::to_string(kMaxCpuCount));
  }
  if (caps.device_memory_bytes() > kMaxDeviceMemoryBytes) {
    return InvalidArgument(
        "capabilities.device_memory_bytes: " + std::to_string(caps.device_memory_bytes()) +
        " exceeds the limit of " + std::to_string(kMaxDeviceMemoryBytes) +
        " (a negative number sent as unsigned?)");
  }
  if (caps.cuda_device_count() > kMaxCudaDevices) {
    return InvalidArgument(
        "capabilities.cuda_device_count: " + std::to_string(caps.cuda_device_count()) +
        " exceeds the limit of " + std::to_string(kMaxCudaDevices));
  }
  if (caps.probe_port() > 65535) {
    return InvalidArgument("capabilities.probe_port: " + std::to_string(caps.probe_port()) +
                           " is not a TCP port");
  }
  return OkStatus();
}

// What a worker tells beyond being alive. Once the store failed these are refused: the session
// ends with UNAVAILABLE, and the tasks' states reach the restarted coordinator in the worker's
// next hello. A heartbeat changes nothing that is written, so an idle worker keeps its session.
bool ChangesState(const v1::WorkerMessage& message) {
  switch (message.body_case()) {
    case v1::WorkerMessage::kTask:
    case v1::WorkerMessage::kSteps:
    case v1::WorkerMessage::kLogs:
    case v1::WorkerMessage::kProbes:
      return true;
    default:
      return false;
  }
}

// PERMISSION_DENIED (logged, with both names) when `caller` may not act as `record`'s worker.
Status CheckBinding(const v1::Worker& record, const CallerIdentity& caller, const char* call) {
  if (record.identity() == caller.name) return OkStatus();
  const std::string bound_to = record.identity().empty()
                                   ? std::string("no identity (registered without one)")
                                   : "worker identity '" + record.identity() + "'";
  spdlog::warn("refused {} of worker {}: it is bound to {}, the caller has {}", call, record.id(),
               bound_to, caller.Describe());
  return PermissionDenied(std::string(call) + ": worker " + record.id() +
                          " is bound to another identity than the caller's (" + caller.Describe() +
                          ")");
}

}  // namespace

StatusOr<v1::RegisterResponse> CoordinatorCore::Register(const v1::RegisterRequest& request,
                                                         const CallerIdentity& caller) {
  const v1::WorkerCapabilities& caps = request.capabilities();
  if (request.worker_id().size() > kMaxIdentifierBytes) {
    return InvalidArgument("worker_id: " + std::to_string(request.worker_id().size()) +
                           " bytes exceed the limit of " + std::to_string(kMaxIdentifierBytes));
  }
  GEOTRAIN_RETURN_IF_ERROR(CheckCapabilities(caps));
  if (caps.data_port_min() > caps.data_port_max()) {
    return InvalidArgument("capabilities.data_port_min: " + std::to_string(caps.data_port_min()) +
                           " is above data_port_max " + std::to_string(caps.data_port_max()));
  }
  if (caps.data_port_max() > 65535) {
    return InvalidArgument("capabilities.data_port_max: " + std::to_string(caps.data_port_max()) +
                           " is not a TCP port");
  }
  std::lock_guard<std::mutex> lock(mu_);
  GEOTRAIN_RETURN_IF_ERROR(AcceptingChanges());
  WorkerEntry* worker = request.worker_id().empty() ? nullptr : FindWorker(request.worker_id());
  if (worker != nullptr) {
    const bool adopt = worker->record.identity().empty() && caller.bound();
    if (adopt) {
      spdlog::warn("worker {} was registered without identity; it is now bound to {}",
                   worker->record.id(), caller.Describe());
    } else {
      GEOTRAIN_RETURN_IF_ERROR(CheckBinding(worker->record, caller, "Register"));
    }
    const v1::Worker before = worker->record;
    if (adopt) worker->record.set_identity(caller.name);
    *worker->record.mutable_capabilities() = caps;
    MarkSeen(*worker);
    if (!PersistWorker(*worker)) {
      worker->record = before;
      return store_failure_;
    }
    spdlog::info("worker {} registered again (host {}, region '{}', {})", worker->record.id(),
                 caps.host(), caps.region(), caps.device_kind());
  } else {
    uint64_t number = 0;
    GEOTRAIN_RETURN_IF_ERROR(Write("taking the next worker number", [&]() -> Status {
      GEOTRAIN_ASSIGN_OR_RETURN(number, store_->NextWorkerNumber());
      return OkStatus();
    }));
    auto entry = std::make_unique<WorkerEntry>();
    v1::Worker& record = entry->record;
    record.set_id("w-" + std::to_string(number));
    *record.mutable_capabilities() = caps;
    record.set_identity(caller.name);
    // Not connected until its session opens; it has a heartbeat timeout to do so.
    record.set_state(v1::WORKER_STATE_DISCONNECTED);
    MarkSeen(*entry);
    record.set_registered_unix_ms(record.last_heartbeat_unix_ms());
    GEOTRAIN_RETURN_IF_ERROR(
        Write("registering worker " + record.id(), [&] { return store_->PutWorker(record); }));
    if (!request.worker_id().empty()) {
      spdlog::warn(
          "a worker presented the unknown id '{}' (state of another coordinator?); "
          "it gets the new id {}",
          request.worker_id(), record.id());
    }
    spdlog::info("worker {} registered (host {}, region '{}', {}, data plane {}, {})", record.id(),
                 caps.host(), caps.region(), caps.device_kind(), caps.advertise_address(),
                 caller.Describe());
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
                                                std::shared_ptr<SessionSink> sink,
                                                const CallerIdentity& caller) {
  if (hello.worker_id().empty()) {
    return InvalidArgument("hello.worker_id: empty (call Register first and present its id)");
  }
  std::lock_guard<std::mutex> lock(mu_);
  GEOTRAIN_RETURN_IF_ERROR(AcceptingChanges());
  WorkerEntry* worker = FindWorker(hello.worker_id());
  if (worker == nullptr) {
    return NotFound("hello.worker_id: worker '" + hello.worker_id() +
                    "' is not registered with this coordinator (call Register first)");
  }
  GEOTRAIN_RETURN_IF_ERROR(CheckBinding(worker->record, caller, "Session"));
  if (worker->session != nullptr && caller.certified) {
    // Two heartbeat intervals without a message: the old stream is as good as gone (its
    // connection broke without a reset), and this is the worker coming back.
    const int64_t silent_ms = clock_->NowMonotonicMs() - worker->session_seen_ms;
    const int64_t live_ms = 2 * static_cast<int64_t>(options_.heartbeat_interval_ms);
    if (silent_ms < live_ms) {
      spdlog::warn(
          "refused Session of worker {} ({}): its session {} is live (last message {} "
          "ms ago)",
          worker->record.id(), caller.Describe(), worker->session_id, silent_ms);
      return FailedPrecondition("Session: worker " + worker->record.id() +
                                " already has a live session; a new one is accepted once it has "
                                "closed or been silent for " +
                                std::to_string(live_ms) + " ms");
    }
  }
  if (worker->session != nullptr) {
    spdlog::info("worker {}: a new session replaces session {}", worker->record.id(),
                 worker->session_id);
    worker->session->Close();
  }
  const bool was_dead = worker->record.state() == v1::WORKER_STATE_DEAD;
  worker->session = std::move(sink);
  worker->session_id = next_session_id_++;
  MarkSeen(*worker);
  worker->session_seen_ms = worker->last_seen_ms;
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
  if (store_failed()) {
    // Not acknowledged, so not attached: the worker keeps its tasks and says hello again to the
    // restarted coordinator.
    worker->session.reset();
    worker->session_id = 0;
    RefreshWorkerState(*worker);
    return store_failure_;
  }
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
  const bool store_failed_before = store_failed();
  if (store_failed_before && ChangesState(message)) return store_failure_;
  MarkSeen(*worker);
  worker->session_seen_ms = worker->last_seen_ms;
  switch (message.body_case()) {
    case v1::WorkerMessage::kHello:
      return FailedPrecondition("a SessionHello is only valid as the first message of a session");
    case v1::WorkerMessage::kHeartbeat:
      break;
    case v1::WorkerMessage::kTask:
      if (message.task().job_id().empty() || message.task().state() == v1::TASK_STATE_UNSPECIFIED) {
        spdlog::warn("worker {}: task status without job_id or state; ignored", worker_id);
        break;
      }
      ApplyTaskStatus(*worker, message.task());
      RefreshWorkerState(*worker);
      Wake();
      break;
    case v1::WorkerMessage::kSteps:
      GEOTRAIN_RETURN_IF_ERROR(CheckStepReports(message.steps()));
      ApplyStepReports(*worker, message.steps());
      break;
    case v1::WorkerMessage::kLogs:
      ApplyLogLines(*worker, message.logs());
      break;
    case v1::WorkerMessage::kProbes:
      // Workers probe only the targets the coordinator ordered, all of them registered.
      for (int i = 0; i < message.probes().results_size(); ++i) {
        const std::string& dst = message.probes().results(i).dst_worker_id();
        if (FindWorker(dst) == nullptr) {
          return InvalidArgument("probes.results[" + std::to_string(i) + "].dst_worker_id: '" +
                                 dst.substr(0, kMaxIdentifierBytes) +
                                 "' is not a registered worker");
        }
      }
      ApplyProbeResults(*worker, message.probes());
      break;
    case v1::WorkerMessage::BODY_NOT_SET:
      // A newer worker's message kind; it still counted as a heartbeat.
      spdlog::debug("worker {}: message of an unknown kind; ignored", worker_id);
      break;
  }
  // A write of this message failed: what it told is not on record, so it is not acknowledged.
  if (!store_failed_before) return store_failure_;
  return OkStatus();
}

// A protocol violation ends the session with INVALID_ARGUMENT (the worker reconnects). Reports of
// unknown jobs or old generations are not violations (late reports of an abandoned placement):
// ApplyStepReports skips them. Runs under mu_.
Status CoordinatorCore::CheckStepReports(const v1::StepReports& reports) {
  for (int i = 0; i < reports.reports_size(); ++i) {
    const v1::StepReport& report = reports.reports(i);
    const std::string field = "steps.reports[" + std::to_string(i) + "]";
    if (report.step() < 0 || report.step() > kMaxStep) {
      return InvalidArgument(field + ".step: " + std::to_string(report.step()) +
                             " is outside [0, " + std::to_string(kMaxStep) + "]");
    }
    const JobEntry* entry = FindJob(report.job_id());
    const int num_stages = entry == nullptr ? 0 : entry->figures.num_stages;
    const int replicas = entry == nullptr ? 0 : entry->figures.replicas;
    const bool current = entry != nullptr && report.generation() == entry->job.generation();
    if (report.stage() < 0 || (current && report.stage() >= num_stages)) {
      return InvalidArgument(field + ".stage: " + std::to_string(report.stage()) +
                             " is outside the stages of " + report.job_id() +
                             (current ? " [0, " + std::to_string(num_stages) + ")" : ""));
    }
    if (report.replica() < 0 || (current && report.replica() >= replicas)) {
      return InvalidArgument(field + ".replica: " + std::to_string(report.replica()) +
                             " is outside the replicas of " + report.job_id() +
                             (current ? " [0, " + std::to_string(replicas) + ")" : ""));
    }
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
               worker->last_seen_ms + options_.heartbeat_timeout_ms - clock_->NowMonotonicMs());
}

Status CoordinatorCore::AuthorizeRendezvous(const CallerIdentity& caller, const std::string& job_id,
                                            uint32_t generation) const {
  if (!caller.bound()) return OkStatus();
  const std::string scope = "job '" + job_id.substr(0, kMaxIdentifierBytes) + "' generation " +
                            std::to_string(generation);
  std::lock_guard<std::mutex> lock(mu_);
  const auto job = jobs_.find(job_id);
  if (job != jobs_.end() && HoldsPlacement(job->second->job.state()) &&
      job->second->job.generation() == generation) {
    for (const RankTask& rank : job->second->ranks) {
      if (rank.Ended()) continue;
      const auto worker = workers_.find(rank.worker_id);
      if (worker != workers_.end() && worker->second->record.identity() == caller.name) {
        return OkStatus();
      }
    }
  }
  spdlog::warn("refused rendezvous call on {}: {} holds no live rank there", scope,
               caller.Describe());
  return PermissionDenied("rendezvous scope " + scope + ": " + caller.Describe() +
                          " holds no live rank of that job and generation");
}

void CoordinatorCore::MarkSeen(WorkerEntry& worker) {
  worker.last_seen_ms = clock_->NowMonotonicMs();
  worker.record.set_last_heartbeat_unix_ms(clock_->NowUnixMs());
}

void CoordinatorCore::DeclareDead(WorkerEntry& worker) {
  const std::string id = worker.record.id();
  spdlog::warn("worker {} declared dead: no message for {} ms", id,
               clock_->NowMonotonicMs() - worker.last_seen_ms);
  if (worker.session != nullptr) worker.session->Close();
  worker.session.reset();
  worker.session_id = 0;
  probe_scheduler_.WorkerLeft(id);
  worker.open_tasks.clear();
  worker.record.set_state(v1::WORKER_STATE_DEAD);
  RefreshWorkerState(worker);
  if (!PersistWorker(worker)) return;
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
