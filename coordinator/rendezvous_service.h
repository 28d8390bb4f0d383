// RendezvousService: the gRPC Rendezvous service (proto/geotrain/v1/rendezvous.proto) over a
// KvStore. Thin by design: it checks requests, converts proto <-> KvStore calls and
// geotrain::Status -> grpc::Status; the semantics live in KvStore.
//
// Waits (KvGet, KvWait) never pin a server thread for long: each is capped at kMaxWait, ends at
// the call's own deadline if that is earlier, and ends within KvWaitOptions' check interval
// (200 ms) once the client cancels or the server shuts down.
//
// Scoped to the caller: every call first asks `authorize` whether the caller's identity
// (worker_identity.h) may touch the request's scope (CoordinatorCore::AuthorizeRendezvous: only
// the job and generation one of its workers holds a live rank in); a refusal is PERMISSION_DENIED
// naming the scope, and nothing in the store is read or changed.
//
// Thread-safe (the store is); gRPC calls the handlers from its own threads. The store is not
// owned and must outlive the service.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <functional>

#include "common/status.h"
#include "coordinator/caller_identity.h"
#include "coordinator/kv_store.h"
#include "geotrain/v1/rendezvous.grpc.pb.h"

namespace geotrain::coordinator {

class RendezvousService final : public geotrain::v1::Rendezvous::Service {
 public:
  // The longest a single KvGet or KvWait waits, whatever its wait_ms asks for. Clients wanting
  // longer re-issue the call (as CoordinatorStore does).
  static constexpr std::chrono::milliseconds kMaxWait = std::chrono::minutes(10);

  using Authorize = std::function<Status(const CallerIdentity& caller, const KvScopeId& scope)>;

  // `store` is not owned. `authorize` null: every scope is open to every caller (tests).
  explicit RendezvousService(KvStore* store, Authorize authorize = nullptr);

  grpc::Status KvSet(grpc::ServerContext* context, const geotrain::v1::KvSetRequest* request,
                     geotrain::v1::KvSetResponse* response) override;
  grpc::Status KvGet(grpc::ServerContext* context, const geotrain::v1::KvGetRequest* request,
                     geotrain::v1::KvGetResponse* response) override;
  grpc::Status KvAdd(grpc::ServerContext* context, const geotrain::v1::KvAddRequest* request,
                     geotrain::v1::KvAddResponse* response) override;
  grpc::Status KvCompareSet(grpc::ServerContext* context,
                            const geotrain::v1::KvCompareSetRequest* request,
                            geotrain::v1::KvCompareSetResponse* response) override;
  grpc::Status KvCheck(grpc::ServerContext* context, const geotrain::v1::KvCheckRequest* request,
                       geotrain::v1::KvCheckResponse* response) override;
  grpc::Status KvDelete(grpc::ServerContext* context, const geotrain::v1::KvDeleteRequest* request,
                        geotrain::v1::KvDeleteResponse* response) override;
  grpc::Status KvNumKeys(grpc::ServerContext* context,
                         const geotrain::v1::KvNumKeysRequest* request,
                         geotrain::v1::KvNumKeysResponse* response) override;
  grpc::Status KvWait(grpc::ServerContext* context, const geotrain::v1::KvWaitRequest* request,
                      geotrain::v1::KvWaitResponse* response) override;

 private:
  // The request's scope, once the caller may touch it.
  StatusOr<KvScopeId> ScopeFor(const grpc::ServerContext& context, bool has_scope,
                               const geotrain::v1::KvScope& scope) const;

  KvStore* const store_;
  const Authorize authorize_;
};

// The gRPC status for a geotrain::Status: same code, same message.
grpc::Status ToGrpcStatus(const Status& status);

}  // namespace geotrain::coordinator
