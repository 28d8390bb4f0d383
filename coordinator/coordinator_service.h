// CoordinatorService: the gRPC Coordinator service (proto/geotrain/v1/coordinator.proto). Thin:
// each handler converts the request, calls CoordinatorCore (or reads the StateStore for events
// and log lines) and converts the Status.
//
// Who may call is decided before any handler runs (CallAuthorizer); how often a client host may
// register or submit is decided here, because only a handler can refuse a call with its own
// status once the call is authorized.
//
// Thread-safe: gRPC's synchronous server runs each RPC on a thread of its pool; Session and
// WatchJob hold theirs for the stream's life.
#pragma once

#include <grpcpp/grpcpp.h>

#include "coordinator/client_rate_limiter.h"
#include "coordinator/coordinator_core.h"
#include "coordinator/state_store.h"
#include "geotrain/v1/coordinator.grpc.pb.h"

namespace geotrain::coordinator {

class RevokedWorkers;

// Per-client-host limits of the calls that write (null: unlimited). Not owned.
struct CallLimits {
  ClientRateLimiter* registrations = nullptr;
  ClientRateLimiter* submissions = nullptr;
  // The --revoked-workers list (null: none): a Session whose certificate is revoked while it is
  // open ends at its next message with PERMISSION_DENIED.
  RevokedWorkers* revoked = nullptr;
};

class CoordinatorService final : public v1::Coordinator::Service {
 public:
  // None is owned; all must outlive the service.
  CoordinatorService(CoordinatorCore* core, StateStore* store, CallLimits limits = {})
      : core_(core), store_(store), limits_(limits) {}

  grpc::Status Register(grpc::ServerContext* context, const v1::RegisterRequest* request,
                        v1::RegisterResponse* response) override;
  grpc::Status Session(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<v1::CoordinatorMessage, v1::WorkerMessage>* stream) override;
  grpc::Status SubmitJob(grpc::ServerContext* context, const v1::SubmitJobRequest* request,
                         v1::Job* response) override;
  grpc::Status GetJob(grpc::ServerContext* context, const v1::GetJobRequest* request,
                      v1::Job* response) override;
  grpc::Status GetJobSteps(grpc::ServerContext* context, const v1::GetJobStepsRequest* request,
                           v1::JobSteps* response) override;
  grpc::Status ListJobs(grpc::ServerContext* context, const v1::ListJobsRequest* request,
                        v1::ListJobsResponse* response) override;
  grpc::Status CancelJob(grpc::ServerContext* context, const v1::CancelJobRequest* request,
                         v1::Job* response) override;
  grpc::Status ListWorkers(grpc::ServerContext* context, const v1::ListWorkersRequest* request,
                           v1::ListWorkersResponse* response) override;
  grpc::Status GetLinks(grpc::ServerContext* context, const v1::GetLinksRequest* request,
                        v1::LinkMatrix* response) override;
  grpc::Status WatchJob(grpc::ServerContext* context, const v1::WatchJobRequest* request,
                        grpc::ServerWriter<v1::JobUpdate>* writer) override;

 private:
  CoordinatorCore* core_;
  StateStore* store_;
  const CallLimits limits_;
};

}  // namespace geotrain::coordinator
