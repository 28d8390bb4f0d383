// `geotrain certs init`: a private certificate authority and the leaf certificates and tokens of
// one small deployment, written into one directory (docs/security.md):
//
//   ca.pem, ca.key                the CA (EC P-256, self-signed); ca.key stays with the admin
//   coordinator.pem, .key         serverAuth; SANs: the given hosts, localhost and 127.0.0.1
//   worker.pem, worker.key        clientAuth; one identity shared by every worker
//   join.token, admin.token       64 hex characters (32 random bytes) each
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
inline constexpr char kWorkerCertFile[] = "worker.pem";
inline constexpr char kWorkerKeyFile[] = "worker.key";
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

// Writes the eight files; returns their paths in the order above. Errors name the option or the
// file (an existing one without `force`, one that cannot be written).
StatusOr<std::vector<std::string>> InitDeploymentCerts(const CertsInitOptions& options);

// "--hosts: \"a b\" is neither an IP address nor a DNS name" or OK.
Status CheckCertHost(const std::string& host);

}  // namespace geotrain::auth
