// The worker's side of the coordinator's security: its --tls-* and --join-token-file flags, what
// the daemon passes on to its task children, and registering with a real coordinator that wants
// TLS, a client certificate and the join token (files made by `geotrain certs init`'s function).
#include <gtest/gtest.h>

#include <algorithm>

#include "common/auth/deployment_certs.h"
#include "coordinator/server.h"
#include "geotrain/v1/coordinator.grpc.pb.h"
#include "tests/testing/temp_dir.h"
#include "worker/coordinator_channel.h"
#include "worker/worker_flags.h"

namespace geotrain::worker {
namespace {

template <typename Flags, typename Add, typename Finish>
Status Parse(std::vector<std::string> args, Flags* flags, Add add, Finish finish) {
  CLI::App app;
  add(&app, flags);
  std::reverse(args.begin(), args.end());
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return InvalidArgument(e.what());
  }
  return finish(flags);
}

Status ParseDaemon(std::vector<std::string> args, DaemonFlags* flags) {
  return Parse(std::move(args), flags, AddDaemonFlags, FinishDaemonFlags);
}

// What `geotrain certs add-worker --name w1` writes.
constexpr char kWorkerCert[] = "worker-w1.pem";
constexpr char kWorkerKey[] = "worker-w1.key";

class WorkerTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    certs_ = dir_.path() + "/certs";
    auth::CertsInitOptions certs;
    certs.dir = certs_;
    ASSERT_TRUE(auth::InitDeploymentCerts(certs).ok());
    auth::AddWorkerOptions worker;
    worker.dir = certs_;
    worker.name = "w1";
    ASSERT_TRUE(auth::AddWorkerCert(worker).ok());
  }
  std::string Cert(const char* name) const { return certs_ + "/" + name; }
  std::vector<std::string> Args(std::vector<std::string> extra) const {
    std::vector<std::string> args = {"--coordinator", "127.0.0.1:7070",     "--advertise",
                                     "10.0.0.2",      "--region",           "eu",
                                     "--work-dir",    dir_.path() + "/work"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  geotrain::testing::TempDir dir_;
  std::string certs_;
};

TEST_F(WorkerTlsTest, FlagsMustCombine) {
  DaemonFlags flags;
  Status status =
      ParseDaemon(Args({"--tls-cert", Cert(kWorkerCert), "--tls-key", Cert(kWorkerKey)}), &flags);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("--tls-cert: a client certificate needs --tls-ca"),
            std::string::npos)
      << status.message();
  flags = DaemonFlags();
  status = ParseDaemon(Args({"--join-token-file", Cert(auth::kJoinTokenFile)}), &flags);
  EXPECT_NE(status.message().find("--join-token-file: a token is sent only over TLS"),
            std::string::npos)
      << status.message();
  flags = DaemonFlags();
  status = ParseDaemon(Args({"--tls-ca", Cert(auth::kCaCertFile), "--tls-key", Cert(kWorkerKey)}),
                       &flags);
  EXPECT_NE(status.message().find("give both"), std::string::npos) << status.message();
}

TEST_F(WorkerTlsTest, TheTaskChildGetsTheSameFilesAsAbsolutePaths) {
  DaemonFlags flags;
  const std::string relative_ca = std::filesystem::relative(Cert(auth::kCaCertFile)).string();
  ASSERT_TRUE(
      ParseDaemon(Args({"--tls-ca", relative_ca, "--tls-cert", Cert(kWorkerCert), "--tls-key",
                        Cert(kWorkerKey), "--join-token-file", Cert(auth::kJoinTokenFile)}),
                  &flags)
          .ok());
  const std::vector<std::string> child = CredentialFlags(flags.credentials);
  EXPECT_EQ(child, (std::vector<std::string>{"--tls-ca", Cert(auth::kCaCertFile), "--tls-cert",
                                             Cert(kWorkerCert), "--tls-key", Cert(kWorkerKey),
                                             "--join-token-file", Cert(auth::kJoinTokenFile)}));
  // The child's own parser reads them back.
  TaskCommandOptions task;
  std::vector<std::string> args = {"--coordinator", "127.0.0.1:7070", "--assignment",
                                   "a.pb",          "--bind",         "10.0.0.2"};
  args.insert(args.end(), child.begin(), child.end());
  const Status parsed = Parse(args, &task, AddTaskFlags,
                              [](TaskCommandOptions* options) { return CheckTaskFlags(*options); });
  ASSERT_TRUE(parsed.ok()) << parsed.ToString();
  EXPECT_EQ(task.credentials.token.path, Cert(auth::kJoinTokenFile));
  EXPECT_EQ(task.credentials.ca.path, Cert(auth::kCaCertFile));
}

TEST_F(WorkerTlsTest, RegistersWithACoordinatorThatWantsCertificateAndToken) {
  coordinator::ServerOptions options;
  options.listen_address = "127.0.0.1:0";
  options.state_dir = dir_.path() + "/state";
  options.security.tls_cert_file = Cert(auth::kCoordinatorCertFile);
  options.security.tls_key_file = Cert(auth::kCoordinatorKeyFile);
  options.security.tls_ca_file = Cert(auth::kCaCertFile);
  options.security.join_token_file = Cert(auth::kJoinTokenFile);
  options.security.admin_token_file = Cert(auth::kAdminTokenFile);
  auto server = coordinator::CoordinatorServer::Start(options);
  ASSERT_TRUE(server.ok()) << server.status().ToString();

  const auto register_with = [&](const std::vector<std::string>& extra) {
    DaemonFlags flags;
    const Status parsed = ParseDaemon(Args(extra), &flags);
    EXPECT_TRUE(parsed.ok()) << parsed.ToString();
    auto credentials = auth::MakeChannelCredentials(flags.credentials);
    EXPECT_TRUE(credentials.ok()) << credentials.status().ToString();
    auto stub = v1::Coordinator::NewStub(CoordinatorChannel((*server)->address(), *credentials));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    v1::RegisterRequest request;
    request.mutable_capabilities()->set_region("eu");
    v1::RegisterResponse response;
    return stub->Register(&context, request, &response);
  };
  const std::vector<std::string> tls = {"--tls-ca",   Cert(auth::kCaCertFile),
                                        "--tls-cert", Cert(kWorkerCert),
                                        "--tls-key",  Cert(kWorkerKey)};
  grpc::Status status = register_with(tls);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_NE(DescribeRpcError(status).find("UNAUTHENTICATED: worker join token missing or wrong"),
            std::string::npos)
      << DescribeRpcError(status);
  std::vector<std::string> full = tls;
  full.insert(full.end(), {"--join-token-file", Cert(auth::kJoinTokenFile)});
  status = register_with(full);
  EXPECT_TRUE(status.ok()) << DescribeRpcError(status);
  // Plain gRPC to a TLS port gets nowhere.
  status = register_with({});
  EXPECT_FALSE(status.ok());
}

}  // namespace
}  // namespace geotrain::worker
