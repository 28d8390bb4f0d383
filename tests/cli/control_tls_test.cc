// The control commands over TLS with the admin token: the files come from flags or the
// environment, the token travels as `authorization: Bearer`, and a refusal has its own exit code.
// The server is an in-process Coordinator service whose TLS credentials check the admin token the
// way the coordinator's CallAuthorizer does (that class is tested in tests/coordinator/).
#include <grpcpp/grpcpp.h>
#include <grpcpp/security/auth_metadata_processor.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "cli/control_address.h"
#include "cli/control_command_support.h"
#include "cli/control_commands.h"
#include "cli/exit_codes.h"
#include "common/auth/deployment_certs.h"
#include "geotrain/v1/coordinator.grpc.pb.h"
#include "tests/testing/manual_clock.h"
#include "tests/testing/temp_dir.h"

namespace geotrain::cli {
namespace {

using geotrain::testing::ManualClock;

class TokenCheck final : public grpc::AuthMetadataProcessor {
 public:
  explicit TokenCheck(std::string token) : expected_("Bearer " + std::move(token)) {}
  bool IsBlocking() const override { return false; }
  grpc::Status Process(const InputMetadata& metadata, grpc::AuthContext*, OutputMetadata*,
                       OutputMetadata*) override {
    for (const auto& [key, value] : metadata) {
      if (std::string(key.data(), key.size()) == "authorization" &&
          std::string(value.data(), value.size()) == expected_) {
        return grpc::Status::OK;
      }
    }
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "admin token missing or wrong");
  }

 private:
  const std::string expected_;
};

class Jobs final : public v1::Coordinator::Service {
  grpc::Status SubmitJob(grpc::ServerContext*, const v1::SubmitJobRequest*, v1::Job* job) override {
    job->set_id("job-7");
    return grpc::Status::OK;
  }
};

class ControlTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    certs_ = dir_.File("certs");
    auth::CertsInitOptions options;
    options.dir = certs_;
    ASSERT_TRUE(auth::InitDeploymentCerts(options).ok());
    options.dir = dir_.File("other");
    ASSERT_TRUE(auth::InitDeploymentCerts(options).ok());
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back(
        {Read(In(auth::kCoordinatorKeyFile)), Read(In(auth::kCoordinatorCertFile))});
    auto credentials = grpc::SslServerCredentials(ssl);
    std::string token = Read(In(auth::kAdminTokenFile));
    token.pop_back();  // the newline
    credentials->SetAuthMetadataProcessor(std::make_shared<TokenCheck>(token));
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", credentials, &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    control_.coordinator = "127.0.0.1:" + std::to_string(port);
    control_.timeout_seconds = 20;
    job_file_ = dir_.Write("job.yaml", "name: tiny\n");
  }
  void TearDown() override { server_->Shutdown(); }

  std::string In(const char* name) const { return certs_ + "/" + name; }
  static std::string Read(const std::string& path) {
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }
  int Submit(const CredentialEnv& env = {}) {
    CommandContext context{out_, err_, clock_};
    context.credential_env = env;
    return RunSubmitCommand(control_, {job_file_}, context);
  }

  geotrain::testing::TempDir dir_;
  std::string certs_;
  Jobs service_;
  std::unique_ptr<grpc::Server> server_;
  ControlOptions control_;
  std::string job_file_;
  std::ostringstream out_, err_;
  ManualClock clock_{0};
};

TEST_F(ControlTlsTest, SubmitsWithTheAdminTokenFromFlags) {
  control_.credentials.tls_ca = In(auth::kCaCertFile);
  control_.credentials.admin_token_file = In(auth::kAdminTokenFile);
  EXPECT_EQ(Submit(), kExitSuccess) << err_.str();
  EXPECT_EQ(out_.str(), "job-7\n");
}

TEST_F(ControlTlsTest, SubmitsWithTheAdminTokenFromTheEnvironment) {
  const std::string ca = In(auth::kCaCertFile);
  const std::string token = In(auth::kAdminTokenFile);
  EXPECT_EQ(Submit({ca.c_str(), nullptr, nullptr, token.c_str()}), kExitSuccess) << err_.str();
}

TEST_F(ControlTlsTest, WithoutTheAdminTokenItIsRefusedWithItsOwnExitCode) {
  control_.credentials.tls_ca = In(auth::kCaCertFile);
  EXPECT_EQ(Submit(), kExitUnauthenticated);
  // The code leads the message, before what the command was doing.
  EXPECT_NE(err_.str().find("geotrain: UNAUTHENTICATED: "), std::string::npos) << err_.str();
  EXPECT_NE(err_.str().find("admin token missing or wrong"), std::string::npos) << err_.str();
  EXPECT_NE(err_.str().find("GEOTRAIN_ADMIN_TOKEN_FILE"), std::string::npos);
  // The join token is not the admin token.
  err_.str("");
  control_.credentials.admin_token_file = In(auth::kJoinTokenFile);
  EXPECT_EQ(Submit(), kExitUnauthenticated) << err_.str();
}

TEST_F(ControlTlsTest, ACoordinatorCertificateFromAnotherCaIsNotTrusted) {
  control_.credentials.tls_ca = dir_.File("other") + "/" + auth::kCaCertFile;
  control_.credentials.admin_token_file = In(auth::kAdminTokenFile);
  EXPECT_EQ(Submit(), kExitUnreachable) << err_.str();
  EXPECT_EQ(out_.str(), "");
}

TEST(ControlCredentialsTest, FlagsWinOverTheEnvironmentAndMustCombine) {
  CredentialFlags flags;
  flags.tls_ca = "/flag/ca.pem";
  const CredentialEnv env{"/env/ca.pem", nullptr, nullptr, "/env/admin.token"};
  auto files = ResolveCredentialFiles(flags, env);
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  EXPECT_EQ(files->ca.path, "/flag/ca.pem");
  EXPECT_EQ(files->ca.origin, "--tls-ca");
  EXPECT_EQ(files->token.path, "/env/admin.token");
  EXPECT_EQ(files->token.origin, "GEOTRAIN_ADMIN_TOKEN_FILE");

  auto bad = ResolveCredentialFiles({}, {nullptr, nullptr, nullptr, "/env/admin.token"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("GEOTRAIN_ADMIN_TOKEN_FILE: a token is sent only over TLS"),
            std::string::npos)
      << bad.status().message();
  bad = ResolveCredentialFiles({"/ca", "/cert", "", ""}, {});
  EXPECT_FALSE(bad.ok());
}

TEST(ControlCredentialsTest, UnauthenticatedHasItsOwnExitCode) {
  std::ostringstream err;
  EXPECT_EQ(ReportFailure(Unauthenticated("admin token missing or wrong"), err),
            kExitUnauthenticated);
  EXPECT_EQ(
      ReportFailure(
          Unauthenticated("admin token missing or wrong").WithContext("submitting job.yaml"), err),
      kExitUnauthenticated);
  // The code decides, not the text.
  EXPECT_EQ(ReportFailure(FailedPrecondition("UNAUTHENTICATED: admin token missing or wrong"), err),
            kExitFailure);
  EXPECT_EQ(ReportFailure(FailedPrecondition("job-1 already ended"), err), kExitFailure);
}

}  // namespace
}  // namespace geotrain::cli
