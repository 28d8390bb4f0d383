#include "common/auth/deployment_certs.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>

namespace geotrain::auth {
namespace {

namespace fs = std::filesystem;

struct KeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
struct CertFree {
  void operator()(X509* cert) const { X509_free(cert); }
};
struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
using Key = std::unique_ptr<EVP_PKEY, KeyFree>;
using Cert = std::unique_ptr<X509, CertFree>;

// The newest OpenSSL error, for messages ("error:... bad extension").
std::string OpenSslError(const std::string& what) {
  char text[256] = "unknown error";
  if (const unsigned long code = ERR_get_error(); code != 0) {
    ERR_error_string_n(code, text, sizeof(text));
  }
  ERR_clear_error();
  return "certs init: " + what + ": " + text;
}

bool IsIpAddress(const std::string& host) {
  unsigned char buffer[16];
  return inet_pton(AF_INET, host.c_str(), buffer) == 1 ||
         inet_pton(AF_INET6, host.c_str(), buffer) == 1;
}

StatusOr<Key> NewP256Key() {
  Key key(EVP_EC_gen("P-256"));
  if (key == nullptr) return Internal(OpenSslError("cannot make an EC P-256 key"));
  return key;
}

Status AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX context;
  X509V3_set_ctx_nodb(&context);
  X509V3_set_ctx(&context, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* extension = X509V3_EXT_conf_nid(nullptr, &context, nid, value.c_str());
  if (extension == nullptr) {
    return Internal(OpenSslError(std::string("bad extension ") + OBJ_nid2sn(nid) + "=" + value));
  }
  const int added = X509_add_ext(cert, extension, -1);
  X509_EXTENSION_free(extension);
  if (added != 1) return Internal(OpenSslError("cannot add an extension"));
  return OkStatus();
}

struct CertRequest {
  std::string common_name;
  EVP_PKEY* subject_key = nullptr;
  X509* issuer = nullptr;  // null: self-signed (the CA)
  EVP_PKEY* issuer_key = nullptr;
  int days = 0;
  // name -> value of each extension besides the key identifiers.
  std::vector<std::pair<int, std::string>> extensions;
};

StatusOr<Cert> IssueCertificate(const CertRequest& request) {
  Cert cert(X509_new());
  if (cert == nullptr) return Internal(OpenSslError("X509_new"));
  X509_set_version(cert.get(), 2);  // v3
  // 63 random bits: unique per certificate and positive.
  std::unique_ptr<BIGNUM, decltype(&BN_free)> serial(BN_new(), BN_free);
  if (serial == nullptr || BN_rand(serial.get(), 63, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1 ||
      BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert.get())) == nullptr) {
    return Internal(OpenSslError("cannot draw a serial number"));
  }
  // A minute back: a host whose clock is slightly behind still accepts a fresh certificate.
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -60);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), static_cast<long>(request.days) * 24 * 3600);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("geotrain"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(request.common_name.c_str()),
                             -1, -1, 0);
  X509* issuer = request.issuer != nullptr ? request.issuer : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(issuer));
  X509_set_pubkey(cert.get(), request.subject_key);
  for (const auto& [nid, value] : request.extensions) {
    GEOTRAIN_RETURN_IF_ERROR(AddExtension(cert.get(), issuer, nid, value));
  }
  GEOTRAIN_RETURN_IF_ERROR(AddExtension(cert.get(), issuer, NID_subject_key_identifier, "hash"));
  GEOTRAIN_RETURN_IF_ERROR(
      AddExtension(cert.get(), issuer, NID_authority_key_identifier, "keyid:always"));
  EVP_PKEY* signer = request.issuer_key != nullptr ? request.issuer_key : request.subject_key;
  if (X509_sign(cert.get(), signer, EVP_sha256()) == 0) {
    return Internal(OpenSslError("cannot sign the certificate of " + request.common_name));
  }
  return cert;
}

template <typename Write>
StatusOr<std::string> ToPem(Write write, const std::string& what) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new(BIO_s_mem()));
  if (bio == nullptr || write(bio.get()) != 1)
    return Internal(OpenSslError("cannot encode " + what));
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(size));
}

StatusOr<std::string> CertPem(X509* cert) {
  return ToPem([cert](BIO* bio) { return PEM_write_bio_X509(bio, cert); }, "a certificate");
}

StatusOr<std::string> KeyPem(EVP_PKEY* key) {
  return ToPem(
      [key](BIO* bio) {
        return PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
      },
      "a private key");
}

StatusOr<std::string> RandomToken() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) return Internal(OpenSslError("RAND_bytes"));
  static const char kHex[] = "0123456789abcdef";
  std::string token;
  for (const unsigned char b : bytes) {
    token += kHex[b >> 4];
    token += kHex[b & 15];
  }
  return token + "\n";
}

// Writes `text` to `path` with `mode`; replaces the file only if `force`. The mode is set on
// the open file, so a secret is never readable by others, not even for a moment.
Status WriteFile(const std::string& path, const std::string& text, mode_t mode, bool force) {
  const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (force ? O_TRUNC : O_EXCL);
  const int fd = ::open(path.c_str(), flags, mode);
  if (fd < 0) {
    return Unavailable("certs init: cannot write " + path + ": " + std::strerror(errno));
  }
  Status status = OkStatus();
  if (::fchmod(fd, mode) != 0) {
    status = Unavailable("certs init: cannot chmod " + path + ": " + std::strerror(errno));
  }
  size_t done = 0;
  while (status.ok() && done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      status = Unavailable("certs init: cannot write " + path + ": " + std::strerror(errno));
      break;
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0 && status.ok()) {
    status = Unavailable("certs init: cannot write " + path + ": " + std::strerror(errno));
  }
  return status;
}

std::string SubjectAltNames(const std::vector<std::string>& hosts) {
  std::vector<std::string> all = {"localhost", "127.0.0.1"};
  for (const std::string& host : hosts) {
    bool seen = false;
    for (const std::string& known : all) seen = seen || known == host;
    if (!seen) all.push_back(host);
  }
  std::string names;
  for (const std::string& host : all) {
    if (!names.empty()) names += ",";
    names += (IsIpAddress(host) ? "IP:" : "DNS:") + host;
  }
  return names;
}

// A PEM file of `dir` for AddWorkerCert ("--dir: /x/ca.key: cannot read ...").
StatusOr<std::unique_ptr<BIO, BioFree>> OpenPem(const fs::path& file) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new_file(file.c_str(), "r"));
  if (bio == nullptr) {
    ERR_clear_error();
    return InvalidArgument("--dir: cannot read " + file.string() +
                           " (a directory `geotrain certs init` wrote holds it)");
  }
  return bio;
}

StatusOr<std::string> Fingerprint(X509* cert) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (X509_digest(cert, EVP_sha256(), digest, &size) != 1) {
    return Internal(OpenSslError("cannot hash the certificate"));
  }
  static const char kHex[] = "0123456789abcdef";
  std::string text = "sha256:";
  for (unsigned int i = 0; i < size; ++i) {
    text += kHex[digest[i] >> 4];
    text += kHex[digest[i] & 15];
  }
  return text;
}

}  // namespace

std::string WorkerCertFile(const std::string& name) { return "worker-" + name + ".pem"; }
std::string WorkerKeyFile(const std::string& name) { return "worker-" + name + ".key"; }

Status CheckWorkerName(const std::string& name) {
  if (name.empty() || name.size() > 64) {
    return InvalidArgument("--name: \"" + name.substr(0, 80) + "\" must have 1 to 64 characters");
  }
  for (const char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '.' || c == '_';
    if (!ok) {
      return InvalidArgument("--name: \"" + name +
                             "\" may hold only letters, digits, '.', '_' and '-'");
    }
  }
  if (name[0] == '.' || name[0] == '-') {
    return InvalidArgument("--name: \"" + name + "\" must not start with '.' or '-'");
  }
  return OkStatus();
}

StatusOr<AddedWorker> AddWorkerCert(const AddWorkerOptions& options) {
  if (options.dir.empty()) return InvalidArgument("--dir: empty");
  GEOTRAIN_RETURN_IF_ERROR(CheckWorkerName(options.name));
  if (options.days < 1 || options.days > 3650) {
    return InvalidArgument("--days: " + std::to_string(options.days) + " is outside 1..3650");
  }
  const fs::path dir(options.dir);
  AddedWorker added;
  added.cert_path = (dir / WorkerCertFile(options.name)).string();
  added.key_path = (dir / WorkerKeyFile(options.name)).string();
  std::error_code ec;
  if (!options.force) {
    for (const std::string& file : {added.cert_path, added.key_path}) {
      if (fs::exists(file, ec)) {
        return FailedPrecondition("certs add-worker: " + file +
                                  " exists; --force replaces it (revoke the old certificate by "
                                  "its fingerprint if it may be in the wrong hands)");
      }
    }
  }
  GEOTRAIN_ASSIGN_OR_RETURN(auto ca_bio, OpenPem(dir / kCaCertFile));
  Cert ca(PEM_read_bio_X509(ca_bio.get(), nullptr, nullptr, nullptr));
  if (ca == nullptr) {
    return InvalidArgument(OpenSslError((dir / kCaCertFile).string() + " holds no certificate"));
  }
  GEOTRAIN_ASSIGN_OR_RETURN(auto ca_key_bio, OpenPem(dir / kCaKeyFile));
  Key ca_key(PEM_read_bio_PrivateKey(ca_key_bio.get(), nullptr, nullptr, nullptr));
  if (ca_key == nullptr) {
    return InvalidArgument(OpenSslError((dir / kCaKeyFile).string() + " holds no private key"));
  }
  if (X509_check_private_key(ca.get(), ca_key.get()) != 1) {
    return InvalidArgument(OpenSslError((dir / kCaKeyFile).string() + " is not the key of " +
                                        (dir / kCaCertFile).string()));
  }
  GEOTRAIN_ASSIGN_OR_RETURN(Key worker_key, NewP256Key());
  CertRequest request;
  request.common_name = "geotrain-worker:" + options.name;
  request.subject_key = worker_key.get();
  request.issuer = ca.get();
  request.issuer_key = ca_key.get();
  request.days = options.days;
  request.extensions = {
      {NID_basic_constraints, "critical,CA:FALSE"},
      {NID_key_usage, "critical,digitalSignature,keyAgreement"},
      {NID_ext_key_usage, "clientAuth"},
      {NID_subject_alt_name, std::string("URI:") + kWorkerIdentityUriPrefix + options.name}};
  GEOTRAIN_ASSIGN_OR_RETURN(Cert cert, IssueCertificate(request));
  GEOTRAIN_ASSIGN_OR_RETURN(std::string cert_pem, CertPem(cert.get()));
  GEOTRAIN_ASSIGN_OR_RETURN(std::string key_pem, KeyPem(worker_key.get()));
  GEOTRAIN_ASSIGN_OR_RETURN(added.fingerprint, Fingerprint(cert.get()));
  // The key first: a certificate without its key is never left behind as if usable.
  GEOTRAIN_RETURN_IF_ERROR(WriteFile(added.key_path, key_pem, 0600, options.force));
  GEOTRAIN_RETURN_IF_ERROR(WriteFile(added.cert_path, cert_pem, 0644, options.force));
  return added;
}

Status CheckCertHost(const std::string& host) {
  if (host.empty()) return InvalidArgument("--hosts: an empty name (between two commas?)");
  if (IsIpAddress(host)) return OkStatus();
  for (const char c : host) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '.' || c == '*';
    if (!ok) {
      return InvalidArgument("--hosts: \"" + host +
                             "\" is neither an IP address nor a DNS name (letters, digits, '-', "
                             "'.', '*')");
    }
  }
  return OkStatus();
}

StatusOr<std::vector<std::string>> InitDeploymentCerts(const CertsInitOptions& options) {
  if (options.dir.empty()) return InvalidArgument("--dir: empty");
  if (options.days < 1 || options.days > 3650) {
    return InvalidArgument("--days: " + std::to_string(options.days) + " is outside 1..3650");
  }
  for (const std::string& host : options.hosts) GEOTRAIN_RETURN_IF_ERROR(CheckCertHost(host));
  std::error_code ec;
  if (!fs::is_directory(options.dir, ec)) {
    if (::mkdir(options.dir.c_str(), 0700) != 0) {
      return InvalidArgument("--dir: cannot create " + options.dir + ": " + std::strerror(errno));
    }
  }
  const fs::path dir(options.dir);
  const auto path = [&dir](const char* name) { return (dir / name).string(); };
  const std::vector<std::string> names = {kCaCertFile,         kCaKeyFile,     kCoordinatorCertFile,
                                          kCoordinatorKeyFile, kJoinTokenFile, kAdminTokenFile};
  if (!options.force) {
    for (const std::string& name : names) {
      if (fs::exists(dir / name, ec)) {
        return FailedPrecondition("certs init: " + (dir / name).string() +
                                  " exists; --force replaces it (and every other file of the "
                                  "set: certificates signed by the old CA stop working)");
      }
    }
  }

  GEOTRAIN_ASSIGN_OR_RETURN(Key ca_key, NewP256Key());
  CertRequest ca_request;
  ca_request.common_name = "geotrain CA";
  ca_request.subject_key = ca_key.get();
  ca_request.days = options.days;
  ca_request.extensions = {{NID_basic_constraints, "critical,CA:TRUE,pathlen:0"},
                           {NID_key_usage, "critical,keyCertSign,cRLSign"}};
  GEOTRAIN_ASSIGN_OR_RETURN(Cert ca, IssueCertificate(ca_request));

  GEOTRAIN_ASSIGN_OR_RETURN(Key coordinator_key, NewP256Key());
  CertRequest coordinator_request;
  coordinator_request.common_name = "geotrain-coordinator";
  coordinator_request.subject_key = coordinator_key.get();
  coordinator_request.issuer = ca.get();
  coordinator_request.issuer_key = ca_key.get();
  coordinator_request.days = options.days;
  coordinator_request.extensions = {{NID_basic_constraints, "critical,CA:FALSE"},
                                    {NID_key_usage, "critical,digitalSignature,keyAgreement"},
                                    {NID_ext_key_usage, "serverAuth"},
                                    {NID_subject_alt_name, SubjectAltNames(options.hosts)}};
  GEOTRAIN_ASSIGN_OR_RETURN(Cert coordinator, IssueCertificate(coordinator_request));

  GEOTRAIN_ASSIGN_OR_RETURN(std::string ca_pem, CertPem(ca.get()));
  GEOTRAIN_ASSIGN_OR_RETURN(std::string ca_key_pem, KeyPem(ca_key.get()));
  GEOTRAIN_ASSIGN_OR_RETURN(std::string coordinator_pem, CertPem(coordinator.get()));
  GEOTRAIN_ASSIGN_OR_RETURN(std::string coordinator_key_pem, KeyPem(coordinator_key.get()));
  GEOTRAIN_ASSIGN_OR_RETURN(std::string join_token, RandomToken());
  GEOTRAIN_ASSIGN_OR_RETURN(std::string admin_token, RandomToken());
  const std::vector<std::pair<const std::string*, mode_t>> contents = {
      {&ca_pem, 0644},          {&ca_key_pem, 0600},
      {&coordinator_pem, 0644}, {&coordinator_key_pem, 0600},
      {&join_token, 0600},      {&admin_token, 0600}};
  std::vector<std::string> written;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string file = path(names[i].c_str());
    GEOTRAIN_RETURN_IF_ERROR(
        WriteFile(file, *contents[i].first, contents[i].second, options.force));
    written.push_back(file);
  }
  return written;
}

}  // namespace geotrain::auth
