// `geotrain certs init`: the files it writes, their modes, what the certificates say, and that
// nothing is overwritten without --force.
#include "cli/certs_command.h"

#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <vector>

#include "cli/exit_codes.h"
#include "common/auth/credential_files.h"
#include "tests/testing/temp_dir.h"

namespace geotrain::cli {
namespace {

unsigned Mode(const std::string& path) {
  struct stat info {};
  EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
  return info.st_mode & 0777;
}

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

X509* LoadCert(const std::string& path) {
  FILE* file = std::fopen(path.c_str(), "r");
  if (file == nullptr) return nullptr;
  X509* cert = PEM_read_X509(file, nullptr, nullptr, nullptr);
  std::fclose(file);
  return cert;
}

TEST(CertsInitTest, WritesTheSetWithPrivateModesAndUsableTokens) {
  geotrain::testing::TempDir dir;
  auth::CertsInitOptions options;
  options.dir = dir.File("certs");
  options.hosts = {"10.77.0.1", "coord.example.com"};
  std::ostringstream out, err;
  ASSERT_EQ(RunCertsInit(options, out, err), kExitSuccess) << err.str();
  for (const char* name :
       {auth::kCaKeyFile, auth::kCoordinatorKeyFile, auth::kJoinTokenFile, auth::kAdminTokenFile}) {
    EXPECT_EQ(Mode(options.dir + "/" + name), 0600u) << name;
    EXPECT_NE(out.str().find(options.dir + "/" + name), std::string::npos) << name;
  }
  for (const char* name : {auth::kCaCertFile, auth::kCoordinatorCertFile}) {
    EXPECT_EQ(Mode(options.dir + "/" + name), 0644u) << name;
  }
  EXPECT_NE(out.str().find("--admin-token-file"), std::string::npos) << out.str();

  const auto join = auth::ReadTokenFile({options.dir + "/" + auth::kJoinTokenFile, "join"});
  const auto admin = auth::ReadTokenFile({options.dir + "/" + auth::kAdminTokenFile, "admin"});
  ASSERT_TRUE(join.ok()) << join.status().ToString();
  ASSERT_TRUE(admin.ok());
  EXPECT_EQ(join->size(), 64u);
  EXPECT_NE(*join, *admin);

  // The coordinator's certificate: signed by the CA, for the hosts and localhost.
  X509* ca = LoadCert(options.dir + "/" + auth::kCaCertFile);
  X509* coordinator = LoadCert(options.dir + "/" + auth::kCoordinatorCertFile);
  ASSERT_NE(ca, nullptr);
  ASSERT_NE(coordinator, nullptr);
  EVP_PKEY* ca_key = X509_get0_pubkey(ca);
  EXPECT_EQ(X509_verify(coordinator, ca_key), 1);
  EXPECT_EQ(X509_check_host(coordinator, "coord.example.com", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_host(coordinator, "localhost", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_ip_asc(coordinator, "10.77.0.1", 0), 1);
  EXPECT_EQ(X509_check_ip_asc(coordinator, "127.0.0.1", 0), 1);
  EXPECT_NE(X509_check_ip_asc(coordinator, "10.77.0.2", 0), 1);
  EXPECT_EQ(X509_check_purpose(coordinator, X509_PURPOSE_SSL_SERVER, 0), 1);
  X509_free(ca);
  X509_free(coordinator);
}

// The URI SANs of `cert`.
std::vector<std::string> Uris(X509* cert) {
  std::vector<std::string> uris;
  auto* names =
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  for (int i = 0; names != nullptr && i < sk_GENERAL_NAME_num(names); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names, i);
    if (name->type != GEN_URI) continue;
    const ASN1_IA5STRING* uri = name->d.uniformResourceIdentifier;
    uris.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(uri)),
                      static_cast<size_t>(ASN1_STRING_length(uri)));
  }
  GENERAL_NAMES_free(names);
  return uris;
}

TEST(CertsAddWorkerTest, IssuesAClientCertificateWithTheWorkersOwnIdentity) {
  geotrain::testing::TempDir dir;
  auth::CertsInitOptions init;
  init.dir = dir.path();
  std::ostringstream out, err;
  ASSERT_EQ(RunCertsInit(init, out, err), kExitSuccess) << err.str();
  EXPECT_NE(out.str().find("certs add-worker"), std::string::npos) << out.str();

  auth::AddWorkerOptions options;
  options.dir = dir.path();
  options.name = "gpu-7";
  std::ostringstream added, added_err;
  ASSERT_EQ(RunCertsAddWorker(options, added, added_err), kExitSuccess) << added_err.str();
  const std::string cert_path = dir.File(auth::WorkerCertFile("gpu-7"));
  const std::string key_path = dir.File(auth::WorkerKeyFile("gpu-7"));
  EXPECT_EQ(cert_path, dir.File("worker-gpu-7.pem"));
  EXPECT_EQ(Mode(key_path), 0600u);
  EXPECT_EQ(Mode(cert_path), 0644u);
  EXPECT_NE(added.str().find("fingerprint: sha256:"), std::string::npos) << added.str();
  EXPECT_NE(added.str().find("--revoked-workers"), std::string::npos) << added.str();

  X509* ca = LoadCert(dir.File(auth::kCaCertFile));
  X509* worker = LoadCert(cert_path);
  ASSERT_NE(ca, nullptr);
  ASSERT_NE(worker, nullptr);
  EXPECT_EQ(X509_verify(worker, X509_get0_pubkey(ca)), 1);
  EXPECT_EQ(X509_check_purpose(worker, X509_PURPOSE_SSL_CLIENT, 0), 1);
  EXPECT_NE(X509_check_purpose(worker, X509_PURPOSE_SSL_SERVER, 0), 1);
  EXPECT_EQ(Uris(worker), std::vector<std::string>{"geotrain:worker:gpu-7"});
  X509_free(ca);
  X509_free(worker);

  // Not twice without --force; names are checked; a directory without the CA is refused.
  std::ostringstream again, again_err;
  EXPECT_EQ(RunCertsAddWorker(options, again, again_err), kExitFailure);
  EXPECT_NE(again_err.str().find("exists; --force replaces it"), std::string::npos);
  options.name = "../evil";
  EXPECT_EQ(RunCertsAddWorker(options, again, again_err), kExitUsage);
  EXPECT_NE(again_err.str().find("--name: \"../evil\""), std::string::npos) << again_err.str();
  options.name = "w1";
  options.dir = dir.File("nothing-here");
  EXPECT_EQ(RunCertsAddWorker(options, again, again_err), kExitUsage);
  EXPECT_NE(again_err.str().find("ca.pem"), std::string::npos) << again_err.str();
}

TEST(CertsInitTest, RefusesToOverwriteWithoutForce) {
  geotrain::testing::TempDir dir;
  auth::CertsInitOptions options;
  options.dir = dir.path();
  std::ostringstream out, err;
  ASSERT_EQ(RunCertsInit(options, out, err), kExitSuccess) << err.str();
  const std::string token = Read(dir.File(auth::kAdminTokenFile));

  std::ostringstream out2, err2;
  EXPECT_EQ(RunCertsInit(options, out2, err2), kExitFailure);
  EXPECT_NE(err2.str().find(dir.File(auth::kCaCertFile) + " exists; --force replaces it"),
            std::string::npos)
      << err2.str();
  EXPECT_EQ(Read(dir.File(auth::kAdminTokenFile)), token);

  options.force = true;
  std::ostringstream out3, err3;
  EXPECT_EQ(RunCertsInit(options, out3, err3), kExitSuccess) << err3.str();
  EXPECT_NE(Read(dir.File(auth::kAdminTokenFile)), token);
  EXPECT_EQ(Mode(dir.File(auth::kAdminTokenFile)), 0600u);
}

TEST(CertsInitTest, BadOptionsNameTheFlag) {
  geotrain::testing::TempDir dir;
  auth::CertsInitOptions options;
  options.dir = dir.path();
  options.hosts = {"bad host"};
  std::ostringstream out, err;
  EXPECT_EQ(RunCertsInit(options, out, err), kExitUsage);
  EXPECT_NE(err.str().find("--hosts: \"bad host\""), std::string::npos) << err.str();
  options.hosts = {};
  options.days = 0;
  std::ostringstream out2, err2;
  EXPECT_EQ(RunCertsInit(options, out2, err2), kExitUsage);
  EXPECT_NE(err2.str().find("--days"), std::string::npos);
}

TEST(CredentialFilesTest, TokenFilesMustBePrivateLongAndOneLine) {
  geotrain::testing::TempDir dir;
  const std::string strong = "3f9a0c7be41d28e6a5b0f7c39d1e4a8b62c5";
  const std::string path = dir.Write("t", strong + "\n");
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  auto token = auth::ReadTokenFile({path, "--admin-token-file"});
  ASSERT_FALSE(token.ok());
  EXPECT_NE(token.status().message().find("--admin-token-file: " + path + " has mode 0640"),
            std::string::npos)
      << token.status().message();
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  token = auth::ReadTokenFile({path, "--admin-token-file"});
  ASSERT_TRUE(token.ok());
  EXPECT_EQ(*token, strong);

  const std::string short_token = dir.Write("s", "abc\n");
  ::chmod(short_token.c_str(), 0600);
  EXPECT_NE(auth::ReadTokenFile({short_token, "X"}).status().message().find("at least 32"),
            std::string::npos);
  const std::string two_lines = dir.Write("l", std::string(40, 'x') + "\nmore\n");
  ::chmod(two_lines.c_str(), 0600);
  EXPECT_NE(auth::ReadTokenFile({two_lines, "X"}).status().message().find("more than one line"),
            std::string::npos);
  EXPECT_NE(auth::ReadPemFile({two_lines, "--tls-ca"}).status().message().find("no PEM block"),
            std::string::npos);
}

// Issue 20: tokens were only length-checked. Each weak one is refused naming the file and why.
TEST(CredentialFilesTest, GuessableTokensAreRefusedNamingTheFileAndTheReason) {
  geotrain::testing::TempDir dir;
  const std::pair<std::string, std::string> weak[] = {
      {std::string(40, 'x'), "only 1 different characters"},  // long enough before
      {"12345678901234567890123456789012", "alphabet of 10 give about 106 bits"},
      {"abababababababababababababababababab", "only 2 different characters"},
      {"a1b2c3d4e5f6a7b8a1b2c3d4e5f6a7b8", "repeats a pattern of 16 characters"},
      {"abcdefghijklmnopqrstuvwxyzabcdefgh", "consecutive characters"},
      {"passwordpasswordpasswordpassword", "only 7 different characters"},
      {"Passw0rd!Passw0rd!Passw0rd!Passw0rd!", "repeats a pattern of 9 characters"},
  };
  for (const auto& [token, reason] : weak) {
    const std::string path = dir.Write("weak", token + "\n");
    ::chmod(path.c_str(), 0600);
    const auto read = auth::ReadTokenFile({path, "--join-token-file"});
    ASSERT_FALSE(read.ok()) << token;
    const std::string& message = read.status().message();
    EXPECT_NE(message.find("--join-token-file: the token in " + path + " is too easy to guess"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find(reason), std::string::npos) << token << ": " << message;
  }
  // Random tokens of the shapes operators use pass: `openssl rand -hex 16` (the shortest
  // allowed), `geotrain certs init`'s 64 hex characters (also checked above), base64.
  std::mt19937 random(20);
  for (const size_t length : {32, 64}) {
    for (int i = 0; i < 2000; ++i) {
      std::string token;
      for (size_t c = 0; c < length; ++c) token += "0123456789abcdef"[random() % 16];
      EXPECT_EQ(auth::TokenWeakness(token), "") << token;
    }
  }
  EXPECT_EQ(auth::TokenWeakness("q2Vx9mK0pL7rT4wZ1bN8cF5hJ3dS6gA0yE2uI9oP1k="), "");
}

}  // namespace
}  // namespace geotrain::cli
