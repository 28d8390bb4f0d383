#include "cli/control_address.h"

#include "common/io/host_port.h"

namespace geotrain::cli {

std::string CoordinatorAddressProblem(const std::string& value) {
  const auto bad = [&](const std::string& why) {
    return "'" + value + "' " + why + " (expected HOST:PORT)";
  };
  if (value.rfind("unix:", 0) == 0) {
    if (value.size() == 5) return bad("names no socket path after unix:");
    return "";
  }
  switch (io::SplitHostPort(value, 1, nullptr)) {
    case io::HostPortProblem::kNone:
      return "";
    case io::HostPortProblem::kNoPort:
      return bad("has no port");
    case io::HostPortProblem::kNoHost:
      return bad("has no host");
    case io::HostPortProblem::kUnbracketedIpv6:
      return bad("has an IPv6 host that is not in brackets");
    case io::HostPortProblem::kPortNotNumber:
      return bad("has no valid port (not a number)");
    case io::HostPortProblem::kPortOutOfRange:
      return bad("has a port outside 1-65535");
  }
  return bad("is not an address");
}

Status CheckCoordinatorAddress(const std::string& value, const std::string& field) {
  const std::string problem = CoordinatorAddressProblem(value);
  return problem.empty() ? OkStatus() : InvalidArgument(field + ": " + problem);
}

StatusOr<CoordinatorAddress> ResolveCoordinatorAddress(const std::string& flag_value,
                                                       const char* env_value) {
  CoordinatorAddress address;
  if (!flag_value.empty()) {
    address = {flag_value, "--coordinator"};
  } else if (env_value != nullptr && env_value[0] != '\0') {
    address = {env_value, kCoordinatorEnvVar};
  } else {
    address = {kDefaultCoordinatorAddress, "default"};
  }
  GEOTRAIN_RETURN_IF_ERROR(CheckCoordinatorAddress(address.target, address.origin));
  return address;
}

namespace {

auth::CredentialFile Pick(const std::string& flag_value, const char* flag, const char* env_value,
                          const char* env_name) {
  if (!flag_value.empty()) return {flag_value, flag};
  if (env_value != nullptr && env_value[0] != '\0') return {env_value, env_name};
  return {"", flag};
}

}  // namespace

StatusOr<auth::ClientCredentialFiles> ResolveCredentialFiles(const CredentialFlags& flags,
                                                             const CredentialEnv& env) {
  auth::ClientCredentialFiles files;
  files.ca = Pick(flags.tls_ca, "--tls-ca", env.tls_ca, kTlsCaEnvVar);
  files.cert = Pick(flags.tls_cert, "--tls-cert", env.tls_cert, kTlsCertEnvVar);
  files.key = Pick(flags.tls_key, "--tls-key", env.tls_key, kTlsKeyEnvVar);
  files.token =
      Pick(flags.admin_token_file, "--admin-token-file", env.admin_token_file, kAdminTokenEnvVar);
  GEOTRAIN_RETURN_IF_ERROR(auth::CheckClientCredentialFiles(files));
  return files;
}

std::string CoordinatorAddressHint() {
  return std::string("set the address with --coordinator HOST:PORT or the ") + kCoordinatorEnvVar +
         " environment variable (default " + kDefaultCoordinatorAddress + ")";
}

}  // namespace geotrain::cli
