#include "coordinator/rendezvous_service.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/worker_identity.h"

namespace geotrain::coordinator {
namespace {

using std::chrono::milliseconds;

grpc::StatusCode ToGrpcCode(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return grpc::StatusCode::OK;
    case StatusCode::kInvalidArgument:
      return grpc::StatusCode::INVALID_ARGUMENT;
    case StatusCode::kDataLoss:
      return grpc::StatusCode::DATA_LOSS;
    case StatusCode::kOutOfRange:
      return grpc::StatusCode::OUT_OF_RANGE;
    case StatusCode::kFailedPrecondition:
      return grpc::StatusCode::FAILED_PRECONDITION;
    case StatusCode::kResourceExhausted:
      return grpc::StatusCode::RESOURCE_EXHAUSTED;
    case StatusCode::kNotFound:
      return grpc::StatusCode::NOT_FOUND;
    case StatusCode::kUnavailable:
      return grpc::StatusCode::UNAVAILABLE;
    case StatusCode::kDeadlineExceeded:
      return grpc::StatusCode::DEADLINE_EXCEEDED;
    case StatusCode::kInternal:
      return grpc::StatusCode::INTERNAL;
    case StatusCode::kUnauthenticated:
      return grpc::StatusCode::UNAUTHENTICATED;
    case StatusCode::kPermissionDenied:
      return grpc::StatusCode::PERMISSION_DENIED;
  }
  return grpc::StatusCode::UNKNOWN;
}

// proto3 cannot tell an unset scope from an empty one; say which it was.
StatusOr<KvScopeId> ScopeOf(bool has_scope, const geotrain::v1::KvScope& scope) {
  if (!has_scope) return InvalidArgument("scope: missing (set scope.job_id and scope.generation)");
  if (scope.job_id().empty()) return InvalidArgument("scope.job_id: empty");
  return KvScopeId{scope.job_id(), scope.generation()};
}

std::vector<std::string> KeysOf(const google::protobuf::RepeatedPtrField<std::string>& keys) {
  return {keys.begin(), keys.end()};
}

// A wait ends at the earliest of what the request asks, kMaxWait and the call's deadline, and
// as soon as the client cancels (or the server, shutting down, cancels for it).
KvWaitOptions WaitFor(grpc::ServerContext* context, uint32_t wait_ms) {
  KvWaitOptions wait;
  wait.timeout = std::min(milliseconds(wait_ms), RendezvousService::kMaxWait);
  const auto until_deadline = std::chrono::duration_cast<milliseconds>(
      context->deadline() - std::chrono::system_clock::now());
  wait.timeout = std::max(milliseconds(0), std::min(wait.timeout, until_deadline));
  wait.abandoned = [context] { return context->IsCancelled(); };
  return wait;
}

// What a handler returns: the store's answer, unless the client went away meanwhile, when it
// no longer matters and CANCELLED says why the call ended.
grpc::Status Reply(grpc::ServerContext* context, const Status& status) {
  if (!status.ok() && context->IsCancelled()) {
    return grpc::Status(grpc::StatusCode::CANCELLED, "the call was cancelled: " + status.message());
  }
  return ToGrpcStatus(status);
}

}  // namespace

grpc::Status ToGrpcStatus(const Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(ToGrpcCode(status.code()), status.message());
}

RendezvousService::RendezvousService(KvStore* store, Authorize authorize)
    : store_(store), authorize_(std::move(authorize)) {}

StatusOr<KvScopeId> RendezvousService::ScopeFor(const grpc::ServerContext& context, bool has_scope,
                                                const geotrain::v1::KvScope& scope) const {
  GEOTRAIN_ASSIGN_OR_RETURN(KvScopeId id, ScopeOf(has_scope, scope));
  if (authorize_ != nullptr) GEOTRAIN_RETURN_IF_ERROR(authorize_(CallerOf(context), id));
  return id;
}

grpc::Status RendezvousService::KvSet(grpc::ServerContext* context,
                                      const geotrain::v1::KvSetRequest* request,
                                      geotrain::v1::KvSetResponse* response) {
  const StatusOr<KvScopeId> scope = ScopeFor(*context, request->has_scope(), request->scope());
  if (!scope.ok()) return ToGrpcStatus(scope.status());
  return ToGrpcStatus(store_->Set(*scope, request->key(), request->value()));
}

grpc::Status RendezvousService::KvGet(grpc::ServerContext* context,
                                      const geotrain::v1::KvGetRequest* request,
                                      geotrain::v1::KvGetResponse* response) {
  const StatusOr<KvScopeId> scope = ScopeFor(*context, request->has_scope(), request->scope());
  if (!scope.ok()) return ToGrpcStatus(scope.status());
  StatusOr<std::string> value =
      store_->Get(*scope, request->key(), WaitFor(context, request->wait_ms()));
  if (!value.ok()) return Reply(context, value.status());
  response->set_value(std::move(value).value());
  return grpc::Status::OK;
}

grpc::Status RendezvousService::KvAdd(grpc::ServerContext* context,
                                      const geotrain::v1::KvAddRequest* request,
                                      geotrain::v1::KvAddResponse* response) {
  const StatusOr<KvScopeId> scope = ScopeFor(*context, request->has_scope(), request->scope());
  if (!scope.ok()) return ToGrpcStatus(scope.status());
  const StatusOr<int64_t> sum = store_->Add(*scope, request->key(), request->delta());
  if (!sum.ok()) return ToGrpcStatus(sum.status());
  response->set_value(*sum);
  return grpc::Status::OK;
}

grpc::Status RendezvousService::KvCompareSet(grpc::ServerContext* context,
                                             const geotrain::v1::KvCompareSetRequest* request,
                                             geotrain::v1::KvCompareSetResponse* response) {
  const StatusOr<KvScopeId> scope = ScopeFor(*context, request->has_scope(), request->scope());
  if (!scope.ok()) return ToGrpcStatus(scope.status());
  StatusOr<std::string> after =
      store_->CompareSet(*scope, request->key(), request->expected(), request->desired());
  if (!after.ok()) return ToGrpcStatus(after.status());
  response->set_value(std::move(after).value());
  return grpc::Status::OK;
}

grpc::Status RendezvousService::KvCheck(grpc::ServerContext* context,
                                        const geotrain::v1::KvCheckRequest* request,
                                        geotrain::v1::KvCheckResponse* response) {
  const StatusOr<KvScopeId> scope = ScopeFor(*context, request->has_scope(), request->scope());
  if (!scope.ok()) return ToGrpcStatus(scope.status());
  const StatusOr<bool> present = store_->Check(*scope, KeysOf(request->keys()));
  if (!present.ok()) return ToGrpcStatus(present.status());
  response->set_all_present(*present);
  return grpc::Status::OK;
}

grpc::Status RendezvousService::KvDelete(grpc::ServerContext* context,
                                         const geotrain::v1::KvDeleteRequest* request,
                                         geotrain::v1::KvDeleteResponse* response) {
  const StatusOr<KvScopeId> scope = ScopeFor(*context, request->has_scope(), request->scope());
  if (!scope.ok()) return ToGrpcStatus(scope.status());
  const StatusOr<bool> deleted = store_->Delete(*scope, request->key());
  if (!deleted.ok()) return ToGrpcStatus(deleted.status());
  response->set_deleted(*deleted);
  return grpc::Status::OK;
}

grpc::Status RendezvousService::KvNumKeys(grpc::ServerContext* context,
                                          const geotrain::v1::KvNumKeysRequest* request,
                                          geotrain::v1::KvNumKeysResponse* response) {
  const StatusOr<KvScopeId> scope = ScopeFor(*context, request->has_scope(), request->scope());
  if (!scope.ok()) return ToGrpcStatus(scope.status());
  const StatusOr<int64_t> count = store_->NumKeys(*scope);
  if (!count.ok()) return ToGrpcStatus(count.status());
  response->set_count(*count);
  return grpc::Status::OK;
}

grpc::Status RendezvousService::KvWait(grpc::ServerContext* context,
                                       const geotrain::v1::KvWaitRequest* request,
                                       geotrain::v1::KvWaitResponse* response) {
  const StatusOr<KvScopeId> scope = ScopeFor(*context, request->has_scope(), request->scope());
  if (!scope.ok()) return ToGrpcStatus(scope.status());
  return Reply(context,
               store_->Wait(*scope, KeysOf(request->keys()), WaitFor(context, request->wait_ms())));
}

}  // namespace geotrain::coordinator
