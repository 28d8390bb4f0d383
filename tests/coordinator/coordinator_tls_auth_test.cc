// The coordinator's port with TLS, mTLS and tokens, with certificates and tokens made by the
// function behind `geotrain certs init`: who can register, submit and use the rendezvous store,
// and the rules that refuse to start an unprotected coordinator on a public address.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <thread>

#include <google/protobuf/descriptor.h>

#include "common/auth/channel_credentials.h"
#include "common/auth/deployment_certs.h"
#include "coordinator/call_authorizer.h"
#include "coordinator/revoked_workers.h"
#include "coordinator/server.h"
#include "coordinator/worker_identity.h"
#include "geotrain/v1/coordinator.grpc.pb.h"
#include "geotrain/v1/rendezvous.grpc.pb.h"
#include "tests/coordinator/coordinator_test_support.h"
#include "tests/testing/manual_clock.h"

namespace geotrain::coordinator {
namespace {

using testing::TempDir;
using testing::TinyJobYaml;

constexpr std::chrono::seconds kRpcDeadline{20};

std::string In(const std::string& dir, const std::string& name) { return dir + "/" + name; }

// A deployment's files (certs init) in `dir`, and the certificates of workers w1 and w2.
void MakeCerts(const std::string& dir) {
  auth::CertsInitOptions options;
  options.dir = dir;
  const auto written = auth::InitDeploymentCerts(options);
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  for (const char* name : {"w1", "w2"}) {
    auth::AddWorkerOptions worker;
    worker.dir = dir;
    worker.name = name;
    const auto added = auth::AddWorkerCert(worker);
    ASSERT_TRUE(added.ok()) << added.status().ToString();
  }
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

ServerSecurityOptions SecurityFrom(const std::string& certs) {
  ServerSecurityOptions security;
  security.tls_cert_file = In(certs, auth::kCoordinatorCertFile);
  security.tls_key_file = In(certs, auth::kCoordinatorKeyFile);
  security.tls_ca_file = In(certs, auth::kCaCertFile);
  security.join_token_file = In(certs, auth::kJoinTokenFile);
  security.admin_token_file = In(certs, auth::kAdminTokenFile);
  return security;
}

class CoordinatorTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    certs_ = dir_.path() + "/certs";
    other_ = dir_.path() + "/other";
    MakeCerts(certs_);
    MakeCerts(other_);  // another CA: its worker certificate must not be accepted
    ServerOptions options;
    options.listen_address = "127.0.0.1:0";
    options.state_dir = dir_.path() + "/state";
    options.tick_period = std::chrono::milliseconds(50);
    options.security = SecurityFrom(certs_);
    revoked_ = dir_.path() + "/revoked-workers";
    std::ofstream(revoked_) << "# none\n";
    options.security.revoked_workers_file = revoked_;
    options.max_submissions_per_minute = 3;
    auto server = CoordinatorServer::Start(options);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
  }

  // A channel with the CA of `certs_` and whatever else is given ("" : not given).
  std::shared_ptr<grpc::Channel> Channel(const std::string& cert, const std::string& key,
                                         const std::string& token) {
    auth::ClientCredentialFiles files;
    files.ca.path = In(certs_, auth::kCaCertFile);
    files.cert.path = cert;
    files.key.path = key;
    files.token.path = token;
    auto credentials = auth::MakeChannelCredentials(files);
    EXPECT_TRUE(credentials.ok()) << credentials.status().ToString();
    return grpc::CreateChannel(server_->address(), *credentials);
  }
  std::shared_ptr<grpc::Channel> WorkerChannel(const std::string& token,
                                               const std::string& name = "w1") {
    return Channel(In(certs_, auth::WorkerCertFile(name)), In(certs_, auth::WorkerKeyFile(name)),
                   token);
  }

  static grpc::Status Register(const std::shared_ptr<grpc::Channel>& channel,
                               const std::string& worker_id = "", std::string* id = nullptr) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kRpcDeadline);
    v1::RegisterRequest request;
    request.set_worker_id(worker_id);
    request.mutable_capabilities()->set_region("eu");
    v1::RegisterResponse response;
    grpc::Status status = v1::Coordinator::NewStub(channel)->Register(&context, request, &response);
    if (id != nullptr) *id = response.worker_id();
    return status;
  }
  static grpc::Status Submit(const std::shared_ptr<grpc::Channel>& channel,
                             const std::string& yaml = TinyJobYaml(1, 1)) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kRpcDeadline);
    v1::SubmitJobRequest request;
    request.set_spec_yaml(yaml);
    v1::Job job;
    return v1::Coordinator::NewStub(channel)->SubmitJob(&context, request, &job);
  }
  static grpc::Status ListJobs(const std::shared_ptr<grpc::Channel>& channel) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kRpcDeadline);
    v1::ListJobsResponse response;
    return v1::Coordinator::NewStub(channel)->ListJobs(&context, v1::ListJobsRequest(), &response);
  }
  static grpc::Status KvSet(const std::shared_ptr<grpc::Channel>& channel) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kRpcDeadline);
    v1::KvSetRequest request;
    request.mutable_scope()->set_job_id("job-1");
    request.mutable_scope()->set_generation(1);
    request.set_key("k");
    v1::KvSetResponse response;
    return v1::Rendezvous::NewStub(channel)->KvSet(&context, request, &response);
  }

  TempDir dir_;
  std::string certs_, other_, revoked_;
  std::unique_ptr<CoordinatorServer> server_;
};

TEST_F(CoordinatorTlsTest, AWorkerNeedsItsCertificateAndTheJoinToken) {
  const std::string join = In(certs_, auth::kJoinTokenFile);
  // No client certificate.
  grpc::Status status = Register(Channel("", "", join));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_NE(status.error_message().find("client certificate"), std::string::npos)
      << status.error_message();
  // A certificate from another CA: the handshake fails.
  status = Register(
      Channel(In(other_, auth::WorkerCertFile("w1")), In(other_, auth::WorkerKeyFile("w1")), join));
  EXPECT_FALSE(status.ok());
  // The right certificate, no token, the other deployment's token, the admin token.
  for (const std::string& token :
       {std::string(), In(other_, auth::kJoinTokenFile), In(certs_, auth::kAdminTokenFile)}) {
    status = Register(WorkerChannel(token));
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << token;
    EXPECT_NE(status.error_message().find("worker join token missing or wrong"), std::string::npos)
        << status.error_message();
  }
  // Both: registered, and the rendezvous store is open to it.
  status = Register(WorkerChannel(join));
  EXPECT_TRUE(status.ok()) << status.error_message();
  // Past the authorizer: the store itself answers (no such job's scope is open).
  status = KvSet(WorkerChannel(join));
  EXPECT_NE(status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << status.error_message();
}

TEST_F(CoordinatorTlsTest, AWorkerIdIsBoundToItsIdentityAndKvCallsToPlacedWorkers) {
  const std::string join = In(certs_, auth::kJoinTokenFile);
  std::string id;
  ASSERT_TRUE(Register(WorkerChannel(join, "w1"), "", &id).ok());
  ASSERT_FALSE(id.empty());
  const grpc::Status stolen = Register(WorkerChannel(join, "w2"), id);
  EXPECT_EQ(stolen.error_code(), grpc::StatusCode::PERMISSION_DENIED) << stolen.error_message();
  EXPECT_NE(stolen.error_message().find("worker " + id + " is bound to another identity"),
            std::string::npos)
      << stolen.error_message();
  EXPECT_EQ(stolen.error_message().find(ReadText(join).substr(0, 64)), std::string::npos);
  EXPECT_TRUE(Register(WorkerChannel(join, "w1"), id).ok());
  // No job is placed: no scope is open to a worker with identity.
  const grpc::Status kv = KvSet(WorkerChannel(join, "w1"));
  EXPECT_EQ(kv.error_code(), grpc::StatusCode::PERMISSION_DENIED) << kv.error_message();
  EXPECT_NE(kv.error_message().find("rendezvous scope job 'job-1' generation 1"), std::string::npos)
      << kv.error_message();
}

TEST_F(CoordinatorTlsTest, ARevokedWorkersOpenSessionEndsAndItCannotComeBack) {
  const std::string join = In(certs_, auth::kJoinTokenFile);
  const auto channel = WorkerChannel(join, "w1");
  std::string id;
  ASSERT_TRUE(Register(channel, "", &id).ok());
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + kRpcDeadline);
  auto stream = v1::Coordinator::NewStub(channel)->Session(&context);
  v1::WorkerMessage message;
  message.mutable_hello()->set_worker_id(id);
  ASSERT_TRUE(stream->Write(message));
  message.Clear();
  message.mutable_heartbeat()->set_unix_ms(1);
  ASSERT_TRUE(stream->Write(message));

  std::ofstream(revoked_, std::ios::trunc) << "w1\n";
  // The list is re-read at most once a second: heartbeats until the session ends.
  for (int i = 0; i < 100 && stream->Write(message); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const grpc::Status ended = stream->Finish();
  EXPECT_EQ(ended.error_code(), grpc::StatusCode::PERMISSION_DENIED) << ended.error_message();
  EXPECT_NE(ended.error_message().find("revoked"), std::string::npos) << ended.error_message();
  const grpc::Status again = Register(WorkerChannel(join, "w1"), id);
  EXPECT_EQ(again.error_code(), grpc::StatusCode::PERMISSION_DENIED) << again.error_message();
  EXPECT_TRUE(Register(WorkerChannel(join, "w2")).ok());
}

TEST_F(CoordinatorTlsTest, TheRendezvousStoreIsClosedToOthers) {
  EXPECT_EQ(KvSet(WorkerChannel("")).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(KvSet(Channel("", "", In(certs_, auth::kAdminTokenFile))).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
}

TEST_F(CoordinatorTlsTest, OnlyTheAdminTokenSubmitsAndReads) {
  grpc::Status status = Submit(Channel("", "", ""));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_NE(status.error_message().find("admin token missing or wrong"), std::string::npos);
  // A worker's credentials, certificate included, are not an admin's.
  EXPECT_EQ(Submit(WorkerChannel(In(certs_, auth::kJoinTokenFile))).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(ListJobs(WorkerChannel(In(certs_, auth::kJoinTokenFile))).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  // The CLI: TLS without a client certificate, the admin token.
  const auto admin = Channel("", "", In(certs_, auth::kAdminTokenFile));
  status = Submit(admin);
  EXPECT_TRUE(status.ok()) << status.error_message();
  status = ListJobs(admin);
  EXPECT_TRUE(status.ok()) << status.error_message();
}

TEST_F(CoordinatorTlsTest, SubmissionsAreLimitedPerClientAndOversizedSpecsRefused) {
  const auto admin = Channel("", "", In(certs_, auth::kAdminTokenFile));
  // gRPC refuses it before the handler: no submission spent.
  const grpc::Status huge = Submit(admin, std::string(17 << 20, '#'));
  EXPECT_EQ(huge.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << huge.error_message();
  for (int i = 0; i < 3; ++i) {
    const grpc::Status status = Submit(admin);
    ASSERT_TRUE(status.ok()) << i << ": " << status.error_message();
  }
  // The bucket holds 3 and refills one per 20 s: the fourth at once is refused.
  const grpc::Status status = Submit(admin);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(status.error_message().find("--max-submissions-per-minute"), std::string::npos)
      << status.error_message();
}

TEST(CoordinatorSecurityRulesTest, APublicAddressNeedsTlsAndTokensUnlessInsecure) {
  TempDir dir;
  ServerOptions options;
  options.listen_address = "0.0.0.0:0";
  options.state_dir = dir.path() + "/state";
  auto refused = CoordinatorServer::Start(options);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("--listen 0.0.0.0:0"), std::string::npos);
  EXPECT_NE(refused.status().message().find("--insecure"), std::string::npos);

  const std::string certs = dir.path() + "/certs";
  MakeCerts(certs);
  options.security = SecurityFrom(certs);
  options.security.admin_token_file.clear();
  EXPECT_FALSE(CheckServerSecurity(options.listen_address, options.security).ok());
  options.security = SecurityFrom(certs);
  EXPECT_TRUE(CheckServerSecurity(options.listen_address, options.security).ok());

  options.security = ServerSecurityOptions();
  options.security.insecure = true;
  auto allowed = CoordinatorServer::Start(options);
  EXPECT_TRUE(allowed.ok()) << allowed.status().ToString();
}

TEST(CoordinatorSecurityRulesTest, LoopbackIsDevelopmentModeAndTokensNeedTls) {
  for (const char* address :
       {"127.0.0.1:7070", "127.3.2.1:1", "localhost:7070", "[::1]:7070", "unix:/tmp/x.sock"}) {
    EXPECT_TRUE(IsLoopbackListenAddress(address)) << address;
  }
  for (const char* address : {"0.0.0.0:7070", "10.77.0.1:7070", "[::]:7070", "example.com:1"}) {
    EXPECT_FALSE(IsLoopbackListenAddress(address)) << address;
  }
  ServerSecurityOptions security;
  EXPECT_TRUE(CheckServerSecurity("127.0.0.1:0", security).ok());
  security.join_token_file = "/some/token";
  const Status status = CheckServerSecurity("127.0.0.1:0", security);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("--join-token-file"), std::string::npos);
  security = ServerSecurityOptions();
  security.tls_cert_file = "/some/cert.pem";
  EXPECT_NE(CheckServerSecurity("127.0.0.1:0", security).message().find("--tls-key"),
            std::string::npos);
}

TEST(CoordinatorSecurityRulesTest, AReadableTokenFileIsRefused) {
  TempDir dir;
  const std::string certs = dir.path() + "/certs";
  MakeCerts(certs);
  ASSERT_EQ(::chmod(In(certs, auth::kJoinTokenFile).c_str(), 0644), 0);
  ServerOptions options;
  options.listen_address = "127.0.0.1:0";
  options.state_dir = dir.path() + "/state";
  options.security = SecurityFrom(certs);
  auto server = CoordinatorServer::Start(options);
  ASSERT_FALSE(server.ok());
  EXPECT_NE(server.status().message().find("--join-token-file"), std::string::npos);
  EXPECT_NE(server.status().message().find("0644"), std::string::npos) << server.status().message();
}

TEST(CallAuthorizerTest, AWorkerCertificateNeedsAnIdentityUnlessSharedOnesAreAllowed) {
  TempDir dir;
  MakeCerts(dir.path());
  const std::string method = "/geotrain.v1.Coordinator/Register";
  const std::string w1 = ReadText(In(dir.path(), auth::WorkerCertFile("w1")));
  // The coordinator's own certificate stands in for an old shared worker.pem: no identity.
  const std::string shared = ReadText(In(dir.path(), auth::kCoordinatorCertFile));
  auto identity = IdentityOfCertificate(w1);
  ASSERT_TRUE(identity.ok()) << identity.status().ToString();
  EXPECT_EQ(identity->name, "w1");
  EXPECT_EQ(identity->fingerprint.size(), 7u + 64u);
  identity = IdentityOfCertificate(shared);
  ASSERT_TRUE(identity.ok());
  EXPECT_EQ(identity->name, "");
  EXPECT_FALSE(IdentityOfCertificate("not a certificate").ok());

  CallAuthorizer strict({"", "", true});
  std::string name;
  EXPECT_TRUE(strict.CheckWorkerCertificate(method, w1, &name).ok());
  EXPECT_EQ(name, "w1");
  const grpc::Status refused = strict.CheckWorkerCertificate(method, shared, &name);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(refused.error_message().find("carries no worker identity"), std::string::npos);
  EXPECT_NE(refused.error_message().find("--allow-shared-worker-cert"), std::string::npos);
  CallAuthorizer legacy({"", "", true, /*allow_shared_worker_cert=*/true});
  name = "x";
  EXPECT_TRUE(legacy.CheckWorkerCertificate(method, shared, &name).ok());
  EXPECT_EQ(name, "");
}

TEST(CallAuthorizerTest, RevokedWorkersAreRefusedAndTheFileIsReReadWhenItChanges) {
  TempDir dir;
  MakeCerts(dir.path());
  const std::string method = "/geotrain.v1.Rendezvous/KvGet";
  const std::string w1 = ReadText(In(dir.path(), auth::WorkerCertFile("w1")));
  const std::string w2 = ReadText(In(dir.path(), auth::WorkerCertFile("w2")));
  const std::string file = In(dir.path(), "revoked-workers");
  const auto write = [&file](const std::string& text) {
    std::ofstream(file, std::ios::trunc) << text;
  };
  write("# none yet\n");
  geotrain::testing::ManualClock clock(1'700'000'000'000);
  auto revoked = RevokedWorkers::Open(file, &clock);
  ASSERT_TRUE(revoked.ok()) << revoked.status().ToString();
  CallAuthorizerOptions options;
  options.require_client_cert = true;
  options.revoked = std::move(*revoked);
  CallAuthorizer authorizer(options);
  std::string name;
  EXPECT_TRUE(authorizer.CheckWorkerCertificate(method, w1, &name).ok());

  write("w1  # lost laptop\n");
  clock.AdvanceMs(1001);
  grpc::Status status = authorizer.CheckWorkerCertificate(method, w1, &name);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(status.error_message().find("'w1' is revoked"), std::string::npos);
  EXPECT_TRUE(authorizer.CheckWorkerCertificate(method, w2, &name).ok());

  // By fingerprint: only that certificate. A broken edit keeps the last good list.
  const auto fingerprint = IdentityOfCertificate(w2);
  ASSERT_TRUE(fingerprint.ok());
  write(fingerprint->fingerprint + "\n");
  clock.AdvanceMs(1001);
  EXPECT_TRUE(authorizer.CheckWorkerCertificate(method, w1, &name).ok());
  EXPECT_FALSE(authorizer.CheckWorkerCertificate(method, w2, &name).ok());
  write("w2\nnot a name!\n");
  clock.AdvanceMs(1001);
  EXPECT_FALSE(authorizer.CheckWorkerCertificate(method, w2, &name).ok());
  EXPECT_TRUE(authorizer.CheckWorkerCertificate(method, w1, &name).ok());

  const auto bad = RevokedWorkers::Parse("ok\nsha256:12\n", "f");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("f line 2"), std::string::npos) << bad.status().message();
  EXPECT_FALSE(RevokedWorkers::Open(In(dir.path(), "missing"), &clock).ok());
}

TEST(CallAuthorizerTest, EveryMethodOfBothServicesHasARole) {
  for (const char* name : {"geotrain.v1.Coordinator", "geotrain.v1.Rendezvous"}) {
    const auto* service =
        google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(name);
    ASSERT_NE(service, nullptr) << name;
    for (int i = 0; i < service->method_count(); ++i) {
      const std::string method = "/" + std::string(name) + "/" + service->method(i)->name();
      EXPECT_TRUE(CallAuthorizer::RoleOf(method).has_value()) << method;
    }
  }
  EXPECT_FALSE(CallAuthorizer::RoleOf("/grpc.health.v1.Health/Check").has_value());
}

TEST(CallAuthorizerTest, TokensAreCheckedPerRole) {
  const std::string join(40, 'j');
  const std::string admin(40, 'a');
  CallAuthorizer authorizer({join, admin, /*require_client_cert=*/true});
  const std::string submit = "/geotrain.v1.Coordinator/SubmitJob";
  const std::string kv = "/geotrain.v1.Rendezvous/KvGet";
  EXPECT_TRUE(authorizer.Authorize(submit, "Bearer " + admin, false).ok());
  EXPECT_FALSE(authorizer.Authorize(submit, "Bearer " + join, true).ok());
  EXPECT_FALSE(authorizer.Authorize(submit, admin, false).ok());  // no "Bearer "
  EXPECT_FALSE(authorizer.Authorize(submit, std::nullopt, false).ok());
  EXPECT_TRUE(authorizer.Authorize(kv, "Bearer " + join, true).ok());
  EXPECT_FALSE(authorizer.Authorize(kv, "Bearer " + join, false).ok());  // no certificate
  EXPECT_FALSE(authorizer.Authorize(kv, "Bearer " + join + "x", true).ok());
  const grpc::Status wrong = authorizer.Authorize(kv, "Bearer " + admin, true);
  EXPECT_EQ(wrong.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(wrong.error_message().find(admin), std::string::npos);  // never echoed
  EXPECT_FALSE(authorizer.Authorize("/x.Y/Z", "Bearer " + admin, true).ok());

  // No tokens configured (TLS only): open to both roles.
  CallAuthorizer open({"", "", false});
  EXPECT_TRUE(open.Authorize(submit, std::nullopt, false).ok());
  EXPECT_TRUE(open.Authorize(kv, std::nullopt, false).ok());
}

}  // namespace
}  // namespace geotrain::coordinator
