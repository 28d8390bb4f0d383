// CallAuthorizer: who may call what on the coordinator's port. One table maps every full method
// name of the Coordinator and Rendezvous services to the role it needs:
//
//   worker  Register, Session (the daemon), Kv* (its task children's Gloo store)
//   admin   SubmitJob, CancelJob and the read-only GetJob, GetJobSteps, ListJobs, ListWorkers,
//           GetLinks, WatchJob (the CLI): specs, logs and worker addresses are not for workers
//
// and checks each call's `authorization: Bearer <token>` against that role's token by comparing
// SHA-256 digests in constant time; with `require_client_cert`, worker calls also need a client
// certificate the TLS handshake verified. Methods missing from the table are refused.
//
// A worker call's certificate must carry a worker identity (URI SAN geotrain:worker:NAME, from
// `geotrain certs add-worker`) unless `allow_shared_worker_cert`, and must not be revoked (the
// --revoked-workers file); both refusals are PERMISSION_DENIED and logged with the name and the
// reason. The identity goes onto the call's AuthContext (worker_identity.h), where the services
// read it to bind worker ids and rendezvous scopes to it.
//
// It is the gRPC server credentials' AuthMetadataProcessor, so it runs before any handler, for
// unary and streaming calls alike, and a refusal never reaches the services; gRPC sets one only
// on TLS credentials, which is why tokens need TLS (server.h). Thread-safe: immutable after
// construction.
#pragma once

#include <grpcpp/security/auth_metadata_processor.h>

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace geotrain::coordinator {

class RevokedWorkers;

enum class CallRole { kWorker, kAdmin };

struct CallAuthorizerOptions {
  // Empty: calls of that role need no token (development on loopback).
  std::string join_token;
  std::string admin_token;
  // Worker calls need a verified client certificate (the coordinator's --tls-ca).
  bool require_client_cert = false;
  // Accept worker certificates without identity (the shared worker.pem of older `certs init`):
  // such workers are not bound to an identity and their Kv* calls are not scoped.
  bool allow_shared_worker_cert = false;
  // Optional: the --revoked-workers list.
  std::shared_ptr<RevokedWorkers> revoked;
};

class CallAuthorizer final : public grpc::AuthMetadataProcessor {
 public:
  explicit CallAuthorizer(const CallAuthorizerOptions& options);

  // "/geotrain.v1.Coordinator/SubmitJob" -> kAdmin; nullopt for a method of neither service.
  static std::optional<CallRole> RoleOf(std::string_view full_method);

  // OK, or UNAUTHENTICATED naming what is missing (never echoing what was sent).
  // `authorization` is the header's value (nullopt: none sent); `peer_certified`: the TLS
  // handshake verified a client certificate.
  grpc::Status Authorize(std::string_view full_method,
                         std::optional<std::string_view> authorization, bool peer_certified) const;

  bool IsBlocking() const override { return false; }
  // The worker identity of a verified client certificate's PEM: OK with `name` set (empty only
  // under allow_shared_worker_cert), or PERMISSION_DENIED (logged) for a certificate without
  // identity, with a malformed one, or revoked.
  grpc::Status CheckWorkerCertificate(std::string_view full_method, std::string_view pem,
                                      std::string* name) const;

  // Takes ":path" and "authorization" from the metadata; the header is consumed, so handlers
  // never see the token. Adds the worker identity to `context` (worker_identity.h).
  grpc::Status Process(const InputMetadata& auth_metadata, grpc::AuthContext* context,
                       OutputMetadata* consumed_auth_metadata,
                       OutputMetadata* response_metadata) override;

 private:
  using Digest = std::array<unsigned char, 32>;
  // Constant time in the token's content; `expected` unset: no token needed.
  static bool TokenMatches(const std::optional<Digest>& expected,
                           std::optional<std::string_view> authorization);

  std::optional<Digest> join_digest_;
  std::optional<Digest> admin_digest_;
  bool require_client_cert_;
  bool allow_shared_worker_cert_;
  std::shared_ptr<RevokedWorkers> revoked_;
};

}  // namespace geotrain::coordinator
