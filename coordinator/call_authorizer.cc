#include "coordinator/call_authorizer.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <spdlog/spdlog.h>

#include <utility>

#include "common/auth/channel_credentials.h"
#include "coordinator/revoked_workers.h"
#include "coordinator/worker_identity.h"

namespace geotrain::coordinator {
namespace {

constexpr std::pair<std::string_view, CallRole> kMethodRoles[] = {
    {"/geotrain.v1.Coordinator/Register", CallRole::kWorker},
    {"/geotrain.v1.Coordinator/Session", CallRole::kWorker},
    {"/geotrain.v1.Coordinator/SubmitJob", CallRole::kAdmin},
    {"/geotrain.v1.Coordinator/GetJob", CallRole::kAdmin},
    {"/geotrain.v1.Coordinator/GetJobSteps", CallRole::kAdmin},
    {"/geotrain.v1.Coordinator/ListJobs", CallRole::kAdmin},
    {"/geotrain.v1.Coordinator/CancelJob", CallRole::kAdmin},
    {"/geotrain.v1.Coordinator/ListWorkers", CallRole::kAdmin},
    {"/geotrain.v1.Coordinator/GetLinks", CallRole::kAdmin},
    {"/geotrain.v1.Coordinator/WatchJob", CallRole::kAdmin},
    {"/geotrain.v1.Rendezvous/KvSet", CallRole::kWorker},
    {"/geotrain.v1.Rendezvous/KvGet", CallRole::kWorker},
    {"/geotrain.v1.Rendezvous/KvAdd", CallRole::kWorker},
    {"/geotrain.v1.Rendezvous/KvCompareSet", CallRole::kWorker},
    {"/geotrain.v1.Rendezvous/KvCheck", CallRole::kWorker},
    {"/geotrain.v1.Rendezvous/KvDelete", CallRole::kWorker},
    {"/geotrain.v1.Rendezvous/KvNumKeys", CallRole::kWorker},
    {"/geotrain.v1.Rendezvous/KvWait", CallRole::kWorker},
};

std::array<unsigned char, 32> Sha256(std::string_view text) {
  std::array<unsigned char, 32> digest{};
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest.data());
  return digest;
}

std::string_view ToView(const grpc::string_ref& ref) { return {ref.data(), ref.size()}; }

}  // namespace

CallAuthorizer::CallAuthorizer(const CallAuthorizerOptions& options)
    : require_client_cert_(options.require_client_cert),
      allow_shared_worker_cert_(options.allow_shared_worker_cert),
      revoked_(options.revoked) {
  if (!options.join_token.empty()) join_digest_ = Sha256(options.join_token);
  if (!options.admin_token.empty()) admin_digest_ = Sha256(options.admin_token);
}

std::optional<CallRole> CallAuthorizer::RoleOf(std::string_view full_method) {
  for (const auto& [method, role] : kMethodRoles) {
    if (method == full_method) return role;
  }
  return std::nullopt;
}

bool CallAuthorizer::TokenMatches(const std::optional<Digest>& expected,
                                  std::optional<std::string_view> authorization) {
  if (!expected.has_value()) return true;
  if (!authorization.has_value()) return false;
  const std::string_view prefix = auth::kBearerPrefix;
  if (authorization->substr(0, prefix.size()) != prefix) return false;
  // Digests of equal length: the comparison's time depends on neither token's content or length.
  const Digest presented = Sha256(authorization->substr(prefix.size()));
  return CRYPTO_memcmp(presented.data(), expected->data(), presented.size()) == 0;
}

grpc::Status CallAuthorizer::Authorize(std::string_view full_method,
                                       std::optional<std::string_view> authorization,
                                       bool peer_certified) const {
  const std::optional<CallRole> role = RoleOf(full_method);
  if (!role.has_value()) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "method " + std::string(full_method) + " is open to no role");
  }
  if (*role == CallRole::kWorker) {
    if (require_client_cert_ && !peer_certified) {
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                          "worker calls need a client certificate signed by the coordinator's "
                          "--tls-ca (the worker's --tls-cert and --tls-key)");
    }
    if (!TokenMatches(join_digest_, authorization)) {
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                          "worker join token missing or wrong (the worker's --join-token-file "
                          "must hold the coordinator's join token)");
    }
    return grpc::Status::OK;
  }
  if (!TokenMatches(admin_digest_, authorization)) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "admin token missing or wrong (give the CLI --admin-token-file or "
                        "GEOTRAIN_ADMIN_TOKEN_FILE with the coordinator's admin token)");
  }
  return grpc::Status::OK;
}

grpc::Status CallAuthorizer::CheckWorkerCertificate(std::string_view full_method,
                                                    std::string_view pem, std::string* name) const {
  const StatusOr<CertificateIdentity> identity = IdentityOfCertificate(pem);
  if (!identity.ok()) {
    spdlog::warn("refused {}: {}", full_method, identity.status().message());
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, identity.status().message());
  }
  if (identity->name.empty() && !allow_shared_worker_cert_) {
    spdlog::warn("refused {}: worker certificate {} carries no worker identity", full_method,
                 identity->fingerprint);
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                        "the worker certificate carries no worker identity (URI SAN "
                        "geotrain:worker:NAME): issue the worker its own with `geotrain certs "
                        "add-worker`, or start the coordinator with --allow-shared-worker-cert");
  }
  if (revoked_ != nullptr) {
    const std::string revocation = revoked_->RevocationOf(identity->name, identity->fingerprint);
    if (!revocation.empty()) {
      spdlog::warn(
          "refused {}: the certificate of worker identity '{}' ({}) is revoked by {} in "
          "--revoked-workers",
          full_method, identity->name, identity->fingerprint, revocation);
      return grpc::Status(
          grpc::StatusCode::PERMISSION_DENIED,
          "the worker certificate of '" + identity->name + "' is revoked (--revoked-workers)");
    }
  }
  *name = identity->name;
  return grpc::Status::OK;
}

grpc::Status CallAuthorizer::Process(const InputMetadata& auth_metadata, grpc::AuthContext* context,
                                     OutputMetadata* consumed_auth_metadata,
                                     OutputMetadata* /*response_metadata*/) {
  std::string_view method;
  std::optional<std::string_view> authorization;
  for (const auto& [key, value] : auth_metadata) {
    const std::string_view name = ToView(key);
    if (name == ":path") {
      method = ToView(value);
    } else if (name == auth::kAuthorizationHeader && !authorization.has_value()) {
      authorization = ToView(value);
      consumed_auth_metadata->emplace(std::string(key.data(), key.size()),
                                      std::string(value.data(), value.size()));
    }
  }
  const bool certified = context != nullptr && context->IsPeerAuthenticated();
  grpc::Status status = Authorize(method, authorization, certified);
  if (!status.ok() || !certified || RoleOf(method) != CallRole::kWorker) return status;
  std::string pem;
  for (const grpc::string_ref& value :
       context->FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME)) {
    pem.assign(value.data(), value.size());
  }
  std::string name;
  status = CheckWorkerCertificate(method, pem, &name);
  if (!status.ok()) return status;
  if (!name.empty()) context->AddProperty(kIdentityProperty, name);
  if (const auto identity = IdentityOfCertificate(pem); identity.ok()) {
    context->AddProperty(kFingerprintProperty, identity->fingerprint);
  }
  return status;
}

}  // namespace geotrain::coordinator
