#include "cli/certs_command.h"

#include <filesystem>

#include "cli/exit_codes.h"

namespace geotrain::cli {

std::string CertsUsage(const std::string& dir) {
  const std::string d = std::filesystem::absolute(dir).lexically_normal().string() + "/";
  return "coordinator: geotrain-coordinator --tls-cert " + d + auth::kCoordinatorCertFile +
         " --tls-key " + d + auth::kCoordinatorKeyFile + " --tls-ca " + d + auth::kCaCertFile +
         " --join-token-file " + d + auth::kJoinTokenFile + " --admin-token-file " + d +
         auth::kAdminTokenFile + " ...\n" + "workers:     geotrain-worker --tls-ca " + d +
         auth::kCaCertFile + " --tls-cert " + d + auth::kWorkerCertFile + " --tls-key " + d +
         auth::kWorkerKeyFile + " --join-token-file " + d + auth::kJoinTokenFile + " ...\n" +
         "CLI:         export GEOTRAIN_TLS_CA=" + d + auth::kCaCertFile +
         " GEOTRAIN_ADMIN_TOKEN_FILE=" + d + auth::kAdminTokenFile + "\n" +
         "Copy ca.pem, worker.pem, worker.key and join.token to the workers; keep ca.key and\n"
         "admin.token off them (ca.key signs certificates: store it offline).\n";
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

}  // namespace geotrain::cli
