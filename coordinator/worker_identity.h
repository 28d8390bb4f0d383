// Worker identity: who, by certificate, is calling. `geotrain certs add-worker` issues each worker
// a certificate whose URI SAN is geotrain:worker:NAME (common/auth/deployment_certs.h); the
// coordinator reads NAME from the certificate the TLS handshake verified, binds each worker id to
// it (CoordinatorCore) and lets Kv* calls touch only the scopes of the jobs the name's workers are
// placed in (RendezvousService).
//
// CallAuthorizer sets the identity on the call's AuthContext (kIdentityProperty) once it has
// checked the certificate; handlers read it back with CallerOf. Thread-safe: free functions.
#pragma once

#include <grpcpp/grpcpp.h>

#include <string>
#include <string_view>

#include "common/status.h"
#include "coordinator/caller_identity.h"

namespace geotrain::coordinator {

// The AuthContext properties CallAuthorizer adds: the caller's worker name, once checked, and
// its certificate's fingerprint (for revocations made while a session is open).
inline constexpr char kIdentityProperty[] = "geotrain_worker_identity";
inline constexpr char kFingerprintProperty[] = "geotrain_worker_fingerprint";

// What a verified client certificate says.
struct CertificateIdentity {
  std::string name;         // empty: the certificate carries no geotrain:worker: URI SAN
  std::string fingerprint;  // "sha256:<hex>" of its DER
};

// Parses the PEM of one certificate. INVALID_ARGUMENT when it is not a certificate, or carries
// more than one worker identity or an identity that is no valid worker name.
StatusOr<CertificateIdentity> IdentityOfCertificate(std::string_view pem);

// The identity of the call CallAuthorizer let in.
CallerIdentity CallerOf(const grpc::ServerContext& context);
// Its client certificate's fingerprint ("" without one).
std::string FingerprintOf(const grpc::ServerContext& context);

}  // namespace geotrain::coordinator
