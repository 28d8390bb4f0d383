// `geotrain certs init`: a private certificate authority and the leaf certificates and tokens of
// one small deployment, written into one directory (docs/security.md):
//
//   ca.pem, ca.key                the CA (EC P-256, self-signed); ca.key stays with the admin
//   coordinator.pem, .key         serverAuth; SANs: the given hosts, localhost and 127.0.0.1
//   join.token, admin.token       64 hex characters (32 random bytes) each
//
// and `geotrain certs add-worker`: one worker's own certificate, signed by that CA:
//
//   worker-NAME.pem, worker-NAME.key  clientAuth; identity URI SAN geotrain:worker:NAME
//
// Each worker has its own identity, so the coordinator can bind a worker id to it and refuse it
// to anyone else, and an operator can revoke one worker by name (the coordinator's
// --revoked-workers file) without a new CA.
//
// Keys and tokens are written with mode 0600, certificates 0644. Nothing is overwritten unless
// `force`; then the files are replaced one by one (a crash midway leaves a mixed set: run again).
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace geotrain::auth {

inline constexpr char kCaCertFile[] = "ca.pem";
inline constexpr char kCaKeyFile[] = "ca.key";
inline constexpr char kCoordinatorCertFile[] = "coordinator.pem";
inline constexpr char kCoordinatorKeyFile[] = "coordinator.key";
inline constexpr char kJoinTokenFile[] = "join.token";
inline constexpr char kAdminTokenFile[] = "admin.token";

struct CertsInitOptions {
  // Created when missing (one level), mode 0700.
  std::string dir;
  // The coordinator's DNS names and IP addresses as workers and the CLI dial them; localhost and
  // 127.0.0.1 are always added.
  std::vector<std::string> hosts;
  // Validity of every certificate, 1 to 3650 days.
  int days = 825;
  // Replace files that exist.
  bool force = false;
};

// The identity a worker certificate carries: a URI SAN of this prefix and the worker's name.
inline constexpr char kWorkerIdentityUriPrefix[] = "geotrain:worker:";

// worker-NAME.pem / worker-NAME.key.
std::string WorkerCertFile(const std::string& name);
std::string WorkerKeyFile(const std::string& name);

// "--name: ..." or OK: 1 to 64 of [A-Za-z0-9._-], not starting with '.' or '-'.
Status CheckWorkerName(const std::string& name);

struct AddWorkerOptions {
  // A directory `certs init` wrote: ca.pem and ca.key are read from it, the worker's files
  // written into it.
  std::string dir;
  std::string name;
  int days = 825;
  bool force = false;
};

struct AddedWorker {
  std::string cert_path;
  std::string key_path;
  // "sha256:<64 hex>" of the certificate's DER: what a --revoked-workers line names to revoke
  // this one certificate (a line with the bare name revokes every certificate of the name).
  std::string fingerprint;
};

// Issues worker NAME's certificate and key. Errors name the option or the file (a missing CA,
// an existing worker file without `force`).
StatusOr<AddedWorker> AddWorkerCert(const AddWorkerOptions& options);

// Writes the six files; returns their paths in the order above. Errors name the option or the
// file (an existing one without `force`, one that cannot be written).
StatusOr<std::vector<std::string>> InitDeploymentCerts(const CertsInitOptions& options);

// "--hosts: \"a b\" is neither an IP address nor a DNS name" or OK.
Status CheckCertHost(const std::string& host);

}  // namespace geotrain::auth
