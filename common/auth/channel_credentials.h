// The client side of the coordinator's security, shared by the worker daemon, its task children
// and the CLI: TLS that verifies the coordinator against a CA, an optional client certificate
// (mTLS), and a bearer token sent as `authorization: Bearer <token>` on every call.
#pragma once

#include <grpcpp/security/credentials.h>

#include <memory>
#include <string>

#include "common/auth/credential_files.h"
#include "common/status.h"

namespace geotrain::auth {

struct ClientCredentialFiles {
  CredentialFile ca{"", "--tls-ca"};      // given: TLS, the coordinator verified against it
  CredentialFile cert{"", "--tls-cert"};  // with key: the client certificate (mTLS)
  CredentialFile key{"", "--tls-key"};
  CredentialFile token{"", "--join-token-file"};  // given: sent on every call
};

// Checks how the files combine: cert and key together, both only with a CA, a token only with a
// CA (a token in clear text would be anyone's on the path). Reads nothing.
Status CheckClientCredentialFiles(const ClientCredentialFiles& files);

// Insecure credentials when no CA is given; otherwise TLS (plus the client certificate and the
// token where given). Errors name the flag of the file that cannot be used.
StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const ClientCredentialFiles& files);

// The metadata key and value prefix of the tokens (the coordinator's CallAuthorizer reads them).
inline constexpr char kAuthorizationHeader[] = "authorization";
inline constexpr char kBearerPrefix[] = "Bearer ";

}  // namespace geotrain::auth
