// Where the control commands find the coordinator: --coordinator, else the GEOTRAIN_COORDINATOR
// environment variable, else 127.0.0.1:7070.
#pragma once

#include <string>

#include "common/auth/channel_credentials.h"
#include "common/status.h"

namespace geotrain::cli {

inline constexpr char kCoordinatorEnvVar[] = "GEOTRAIN_COORDINATOR";
inline constexpr char kDefaultCoordinatorAddress[] = "127.0.0.1:7070";

struct CoordinatorAddress {
  // What gRPC dials: "HOST:PORT", "[IPV6]:PORT" or "unix:PATH".
  std::string target;
  // Where it came from, for error messages: "--coordinator", "GEOTRAIN_COORDINATOR" or "default".
  std::string origin;
};

// Empty when `value` is HOST:PORT (port 1-65535; IPv6 hosts in brackets) or unix:PATH; otherwise
// what is wrong with it ("'foo' has no port (expected HOST:PORT)").
std::string CoordinatorAddressProblem(const std::string& value);
// CoordinatorAddressProblem as a Status: InvalidArgument "field: problem".
Status CheckCoordinatorAddress(const std::string& value, const std::string& field);

// The flag's value (empty: not given), else `env_value` (nullptr or empty: unset), else the
// default; the chosen value must pass CheckCoordinatorAddress.
StatusOr<CoordinatorAddress> ResolveCoordinatorAddress(const std::string& flag_value,
                                                       const char* env_value);

// How a user points the CLI at another coordinator (appended to "cannot reach" errors).
std::string CoordinatorAddressHint();

// The CLI's TLS and token files: each from its flag, else its environment variable, else none.
inline constexpr char kTlsCaEnvVar[] = "GEOTRAIN_TLS_CA";
inline constexpr char kTlsCertEnvVar[] = "GEOTRAIN_TLS_CERT";
inline constexpr char kTlsKeyEnvVar[] = "GEOTRAIN_TLS_KEY";
inline constexpr char kAdminTokenEnvVar[] = "GEOTRAIN_ADMIN_TOKEN_FILE";

struct CredentialFlags {
  std::string tls_ca;            // --tls-ca
  std::string tls_cert;          // --tls-cert
  std::string tls_key;           // --tls-key
  std::string admin_token_file;  // --admin-token-file
};

// The environment variables' values (nullptr: unset).
struct CredentialEnv {
  const char* tls_ca = nullptr;
  const char* tls_cert = nullptr;
  const char* tls_key = nullptr;
  const char* admin_token_file = nullptr;
};

// Each file from its flag, else its variable; origins name which (for errors). Checks how they
// combine (auth::CheckClientCredentialFiles); reads nothing.
StatusOr<auth::ClientCredentialFiles> ResolveCredentialFiles(const CredentialFlags& flags,
                                                             const CredentialEnv& env);

}  // namespace geotrain::cli
