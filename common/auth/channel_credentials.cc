#include "common/auth/channel_credentials.h"

#include <grpcpp/security/credentials.h>

namespace geotrain::auth {
namespace {

// Adds the token to every call's metadata. Not blocking: the token is in memory.
class BearerTokenPlugin final : public grpc::MetadataCredentialsPlugin {
 public:
  explicit BearerTokenPlugin(std::string token) : header_value_(kBearerPrefix + token) {}

  bool IsBlocking() const override { return false; }
  const char* GetType() const override { return "geotrain-bearer-token"; }

  grpc::Status GetMetadata(grpc::string_ref /*service_url*/, grpc::string_ref /*method_name*/,
                           const grpc::AuthContext& /*channel_auth_context*/,
                           std::multimap<grpc::string, grpc::string>* metadata) override {
    metadata->emplace(kAuthorizationHeader, header_value_);
    return grpc::Status::OK;
  }

 private:
  const std::string header_value_;
};

}  // namespace

Status CheckClientCredentialFiles(const ClientCredentialFiles& files) {
  if (files.cert.given() != files.key.given()) {
    return InvalidArgument(files.cert.origin + "/" + files.key.origin +
                           ": give both (the client certificate and its key) or neither");
  }
  if (files.cert.given() && !files.ca.given()) {
    return InvalidArgument(files.cert.origin + ": a client certificate needs " + files.ca.origin +
                           " (TLS) too");
  }
  if (files.token.given() && !files.ca.given()) {
    return InvalidArgument(files.token.origin + ": a token is sent only over TLS; give " +
                           files.ca.origin +
                           " too (the CA that signed the coordinator's "
                           "certificate)");
  }
  return OkStatus();
}

StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const ClientCredentialFiles& files) {
  GEOTRAIN_RETURN_IF_ERROR(CheckClientCredentialFiles(files));
  if (!files.ca.given()) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions ssl;
  GEOTRAIN_ASSIGN_OR_RETURN(ssl.pem_root_certs, ReadPemFile(files.ca));
  if (files.cert.given()) {
    GEOTRAIN_ASSIGN_OR_RETURN(ssl.pem_cert_chain, ReadPemFile(files.cert));
    GEOTRAIN_ASSIGN_OR_RETURN(ssl.pem_private_key, ReadPemFile(files.key));
  }
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::SslCredentials(ssl);
  if (!files.token.given()) return credentials;
  GEOTRAIN_ASSIGN_OR_RETURN(std::string token, ReadTokenFile(files.token));
  return grpc::CompositeChannelCredentials(
      credentials,
      grpc::MetadataCredentialsFromPlugin(std::make_unique<BearerTokenPlugin>(std::move(token))));
}

}  // namespace geotrain::auth
