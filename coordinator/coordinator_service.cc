#include "coordinator/coordinator_service.h"

#include <spdlog/spdlog.h>

#include <memory>

#include "coordinator/job_state_machine.h"
// ToGrpcStatus: the one Status -> grpc::Status conversion, shared with the Rendezvous service.
#include "coordinator/rendezvous_service.h"
#include "coordinator/revoked_workers.h"
#include "coordinator/session_stream.h"
#include "coordinator/worker_identity.h"

namespace geotrain::coordinator {
namespace {

// Events or log lines per store read while catching up a watcher.
constexpr int kWatchBatch = 500;
// How often a waiting watcher checks whether its client went away.
constexpr std::chrono::milliseconds kWatchPoll{500};

template <typename T>
grpc::Status Reply(StatusOr<T> result, T* response) {
  if (!result.ok()) return ToGrpcStatus(result.status());
  *response = std::move(*result);
  return grpc::Status::OK;
}

}  // namespace

grpc::Status CoordinatorService::Register(grpc::ServerContext* context,
                                          const v1::RegisterRequest* request,
                                          v1::RegisterResponse* response) {
  if (limits_.registrations != nullptr) {
    const Status allowed = limits_.registrations->Acquire(PeerHost(context->peer()));
    if (!allowed.ok()) return ToGrpcStatus(allowed);
  }
  return Reply(core_->Register(*request, CallerOf(*context)), response);
}

grpc::Status CoordinatorService::Session(
    grpc::ServerContext* context,
    grpc::ServerReaderWriter<v1::CoordinatorMessage, v1::WorkerMessage>* stream) {
  v1::WorkerMessage message;
  if (!stream->Read(&message)) return grpc::Status::CANCELLED;
  if (message.body_case() != v1::WorkerMessage::kHello) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "the first message of a session must be a SessionHello");
  }
  const std::string worker_id = message.hello().worker_id();
  auto sink = std::make_shared<SessionStream>(context, stream);
  StatusOr<uint64_t> session = core_->OpenSession(message.hello(), sink, CallerOf(*context));
  if (!session.ok()) {
    sink->Finish();
    return ToGrpcStatus(session.status());
  }
  const CallerIdentity caller = CallerOf(*context);
  const std::string fingerprint = FingerprintOf(*context);
  Status status;
  while (stream->Read(&message)) {
    if (limits_.revoked != nullptr && caller.certified) {
      if (const std::string revocation = limits_.revoked->RevocationOf(caller.name, fingerprint);
          !revocation.empty()) {
        spdlog::warn(
            "worker {} ({}): session ended, its certificate is revoked by {} in "
            "--revoked-workers",
            worker_id, caller.Describe(), revocation);
        status = PermissionDenied("Session: the worker certificate is revoked (--revoked-workers)");
        break;
      }
    }
    status = core_->HandleWorkerMessage(worker_id, *session, message);
    if (!status.ok()) break;
  }
  core_->CloseSession(worker_id, *session);
  sink->Finish();
  if (!status.ok()) return ToGrpcStatus(status);
  if (core_->shutting_down()) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the coordinator is shutting down");
  }
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::SubmitJob(grpc::ServerContext* context,
                                           const v1::SubmitJobRequest* request, v1::Job* response) {
  if (limits_.submissions != nullptr) {
    const Status allowed = limits_.submissions->Acquire(PeerHost(context->peer()));
    if (!allowed.ok()) return ToGrpcStatus(allowed);
  }
  return Reply(core_->SubmitJob(*request), response);
}

grpc::Status CoordinatorService::GetJob(grpc::ServerContext*, const v1::GetJobRequest* request,
                                        v1::Job* response) {
  return Reply(core_->GetJob(request->job_id()), response);
}

grpc::Status CoordinatorService::GetJobSteps(grpc::ServerContext*,
                                             const v1::GetJobStepsRequest* request,
                                             v1::JobSteps* response) {
  return Reply(core_->GetJobSteps(*request), response);
}

grpc::Status CoordinatorService::ListJobs(grpc::ServerContext*, const v1::ListJobsRequest* request,
                                          v1::ListJobsResponse* response) {
  for (v1::Job& job : core_->ListJobs(request->include_finished())) {
    *response->add_jobs() = std::move(job);
  }
  response->set_state_store_failure(core_->StateStoreFailure());
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::CancelJob(grpc::ServerContext*,
                                           const v1::CancelJobRequest* request, v1::Job* response) {
  return Reply(core_->CancelJob(request->job_id()), response);
}

grpc::Status CoordinatorService::ListWorkers(grpc::ServerContext*,
                                             const v1::ListWorkersRequest* request,
                                             v1::ListWorkersResponse* response) {
  for (v1::Worker& worker : core_->ListWorkers(request->include_dead())) {
    *response->add_workers() = std::move(worker);
  }
  response->set_state_store_failure(core_->StateStoreFailure());
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::GetLinks(grpc::ServerContext*, const v1::GetLinksRequest*,
                                          v1::LinkMatrix* response) {
  *response = core_->GetLinks();
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::WatchJob(grpc::ServerContext* context,
                                          const v1::WatchJobRequest* request,
                                          grpc::ServerWriter<v1::JobUpdate>* writer) {
  const std::string& job_id = request->job_id();
  int64_t event_sequence = request->after_event_sequence();
  int64_t log_sequence = request->after_log_sequence();
  bool sent_job = false;
  v1::JobState sent_state = v1::JOB_STATE_UNSPECIFIED;
  int64_t sent_step = -1;
  std::string sent_waiting_for;
  while (true) {
    // Read the version before the state, so a change after the reads wakes the wait below.
    const uint64_t version = core_->change_version();
    StatusOr<v1::Job> job = core_->GetJob(job_id);
    if (!job.ok()) return ToGrpcStatus(job.status());
    const bool terminal = IsTerminalJobState(job->state());
    if (!sent_job || job->state() != sent_state || job->progress().step() != sent_step ||
        job->waiting_for() != sent_waiting_for) {
      v1::JobUpdate update;
      *update.mutable_job() = *job;
      if (!writer->Write(update)) return grpc::Status::CANCELLED;
      sent_job = true;
      sent_state = job->state();
      sent_step = job->progress().step();
      sent_waiting_for = job->waiting_for();
    }
    // Catch up completely: a terminal job's snapshot was read before these, so after this loop
    // everything up to its end was sent.
    bool more = true;
    while (more) {
      more = false;
      if (request->include_events()) {
        StatusOr<std::vector<v1::JobEvent>> events =
            store_->EventsAfter(job_id, event_sequence, kWatchBatch);
        if (!events.ok()) return ToGrpcStatus(events.status());
        for (v1::JobEvent& event : *events) {
          event_sequence = event.sequence();
          v1::JobUpdate update;
          *update.mutable_event() = std::move(event);
          if (!writer->Write(update)) return grpc::Status::CANCELLED;
        }
        more = more || events->size() == static_cast<size_t>(kWatchBatch);
      }
      if (request->include_logs()) {
        StatusOr<std::vector<v1::SequencedLogLine>> lines =
            store_->LogLinesAfter(job_id, log_sequence, kWatchBatch);
        if (!lines.ok()) return ToGrpcStatus(lines.status());
        for (v1::SequencedLogLine& line : *lines) {
          log_sequence = line.sequence();
          v1::JobUpdate update;
          *update.mutable_log() = std::move(line);
          if (!writer->Write(update)) return grpc::Status::CANCELLED;
        }
        more = more || lines->size() == static_cast<size_t>(kWatchBatch);
      }
    }
    if (!request->follow() || terminal) return grpc::Status::OK;
    uint64_t now_version = version;
    while (now_version == version) {
      if (context->IsCancelled()) return grpc::Status::CANCELLED;
      if (core_->shutting_down()) {
        return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the coordinator is shutting down");
      }
      now_version = core_->WaitForChange(version, kWatchPoll);
    }
  }
}

}  // namespace geotrain::coordinator
