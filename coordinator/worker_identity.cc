#include "coordinator/worker_identity.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>

#include "common/auth/deployment_certs.h"

namespace geotrain::coordinator {

StatusOr<CertificateIdentity> IdentityOfCertificate(std::string_view pem) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_mem_buf(pem.data(), pem.size()), BIO_free);
  std::unique_ptr<X509, decltype(&X509_free)> cert(
      bio == nullptr ? nullptr : PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr),
      X509_free);
  if (cert == nullptr) return InvalidArgument("client certificate: not a PEM certificate");
  CertificateIdentity identity;
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (X509_digest(cert.get(), EVP_sha256(), digest, &size) != 1) {
    return InvalidArgument("client certificate: cannot be hashed");
  }
  static const char kHex[] = "0123456789abcdef";
  identity.fingerprint = "sha256:";
  for (unsigned int i = 0; i < size; ++i) {
    identity.fingerprint += kHex[digest[i] >> 4];
    identity.fingerprint += kHex[digest[i] & 15];
  }
  auto* names = static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(cert.get(), NID_subject_alt_name, nullptr, nullptr));
  const std::string_view prefix = auth::kWorkerIdentityUriPrefix;
  Status status = OkStatus();
  for (int i = 0; names != nullptr && i < sk_GENERAL_NAME_num(names); ++i) {
    const GENERAL_NAME* entry = sk_GENERAL_NAME_value(names, i);
    if (entry->type != GEN_URI) continue;
    const ASN1_IA5STRING* uri = entry->d.uniformResourceIdentifier;
    const std::string_view text(reinterpret_cast<const char*>(ASN1_STRING_get0_data(uri)),
                                static_cast<size_t>(ASN1_STRING_length(uri)));
    if (text.substr(0, prefix.size()) != prefix) continue;
    const std::string name(text.substr(prefix.size()));
    if (!identity.name.empty()) {
      status = InvalidArgument("client certificate: more than one worker identity ('" +
                               identity.name + "', '" + name.substr(0, 64) + "')");
      break;
    }
    if (!auth::CheckWorkerName(name).ok()) {
      status = InvalidArgument("client certificate: identity is no valid worker name");
      break;
    }
    identity.name = name;
  }
  GENERAL_NAMES_free(names);
  if (!status.ok()) return status;
  return identity;
}

CallerIdentity CallerOf(const grpc::ServerContext& context) {
  CallerIdentity caller;
  const std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  if (auth == nullptr) return caller;
  caller.certified = auth->IsPeerAuthenticated();
  for (const grpc::string_ref& value : auth->FindPropertyValues(kIdentityProperty)) {
    caller.name.assign(value.data(), value.size());
  }
  return caller;
}

std::string FingerprintOf(const grpc::ServerContext& context) {
  const std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  std::string fingerprint;
  if (auth == nullptr) return fingerprint;
  for (const grpc::string_ref& value : auth->FindPropertyValues(kFingerprintProperty)) {
    fingerprint.assign(value.data(), value.size());
  }
  return fingerprint;
}

}  // namespace geotrain::coordinator
