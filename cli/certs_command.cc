#include "cli/certs_command.h"

#include <filesystem>

#include "cli/exit_codes.h"

namespace geotrain::cli {

std::string CertsUsage(const std::string& dir) {
  const std::string d = std::filesystem::absolute(dir).lexically_normal().string() + "/";
  return "coordinator: geotrain-coordinator --tls-cert " + d + auth::kCoordinatorCertFile +
         " --tls-key " + d + auth::kCoordinatorKeyFile + " --tls-ca " + d + auth::kCaCertFile +
         " --join-token-file " + d + auth::kJoinTokenFile + " --admin-token-file " + d +
         auth::kAdminTokenFile + " [--revoked-workers FILE] ...\n" +
         "workers:     geotrain certs add-worker --dir " + d + " --name NAME, once per worker\n" +
         "CLI:         export GEOTRAIN_TLS_CA=" + d + auth::kCaCertFile +
         " GEOTRAIN_ADMIN_TOKEN_FILE=" + d + auth::kAdminTokenFile + "\n" +
         "Keep ca.key and admin.token off the workers (ca.key signs certificates: store it "
         "offline).\n";
}

int RunCertsInit(const auth::CertsInitOptions& options, std::ostream& out, std::ostream& err) {
  const StatusOr<std::vector<std::string>> written = auth::InitDeploymentCerts(options);
  if (!written.ok()) {
    err << "geotrain: " << written.status().ToString() << "\n";
    return written.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
  }
  out << "wrote:\n";
  for (const std::string& path : *written) out << "  " << path << "\n";
  out << CertsUsage(options.dir);
  return kExitSuccess;
}

int RunCertsAddWorker(const auth::AddWorkerOptions& options, std::ostream& out, std::ostream& err) {
  const StatusOr<auth::AddedWorker> added = auth::AddWorkerCert(options);
  if (!added.ok()) {
    err << "geotrain: " << added.status().ToString() << "\n";
    return added.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
  }
  const std::string d = std::filesystem::absolute(options.dir).lexically_normal().string() + "/";
  out << "wrote:\n  " << added->key_path << "\n  " << added->cert_path << "\n"
      << "identity:    " << auth::kWorkerIdentityUriPrefix << options.name << "\n"
      << "fingerprint: " << added->fingerprint << "\n"
      << "worker " << options.name << ": geotrain-worker --tls-ca " << d << auth::kCaCertFile
      << " --tls-cert " << d << auth::WorkerCertFile(options.name) << " --tls-key " << d
      << auth::WorkerKeyFile(options.name) << " --join-token-file " << d << auth::kJoinTokenFile
      << " ...\n"
      << "Copy ca.pem, join.token and these two files to that worker only. To revoke it, add the\n"
         "line '"
      << options.name << "' (every certificate of the name) or '" << added->fingerprint
      << "'\n(this one) to the coordinator's --revoked-workers file.\n";
  return kExitSuccess;
}

}  // namespace geotrain::cli
