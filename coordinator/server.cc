#include "coordinator/server.h"

#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/security/server_credentials.h>
#include <spdlog/spdlog.h>

#include "common/auth/credential_files.h"
#include "common/io/host_port.h"
#include "coordinator/call_authorizer.h"
#include "coordinator/client_rate_limiter.h"
#include "coordinator/coordinator_service.h"
#include "coordinator/kv_store.h"
#include "coordinator/kv_store_scopes.h"
#include "coordinator/rendezvous_service.h"
#include "coordinator/revoked_workers.h"
#include "coordinator/scheduler_thread.h"

namespace geotrain::coordinator {
namespace {

// How long Shutdown lets RPCs in flight finish before cancelling them.
constexpr std::chrono::seconds kShutdownGrace{2};

// The server's credentials: insecure, or TLS (with client certificates requested and verified
// when there is a CA) and the CallAuthorizer.
StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const ServerSecurityOptions& security, std::shared_ptr<RevokedWorkers> revoked) {
  if (security.tls_cert_file.empty()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions ssl(security.tls_ca_file.empty()
                                            ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                                            // The CLI connects without a certificate: a worker call
                                            // without one is refused per call, by the authorizer.
                                            : GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY);
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  GEOTRAIN_ASSIGN_OR_RETURN(pair.cert_chain,
                            auth::ReadPemFile({security.tls_cert_file, "--tls-cert"}));
  GEOTRAIN_ASSIGN_OR_RETURN(pair.private_key,
                            auth::ReadPemFile({security.tls_key_file, "--tls-key"}));
  ssl.pem_key_cert_pairs.push_back(std::move(pair));
  if (!security.tls_ca_file.empty()) {
    GEOTRAIN_ASSIGN_OR_RETURN(ssl.pem_root_certs,
                              auth::ReadPemFile({security.tls_ca_file, "--tls-ca"}));
  }
  CallAuthorizerOptions authorizer;
  authorizer.require_client_cert = !security.tls_ca_file.empty();
  authorizer.allow_shared_worker_cert = security.allow_shared_worker_cert;
  authorizer.revoked = std::move(revoked);
  if (!security.join_token_file.empty()) {
    GEOTRAIN_ASSIGN_OR_RETURN(authorizer.join_token,
                              auth::ReadTokenFile({security.join_token_file, "--join-token-file"}));
  }
  if (!security.admin_token_file.empty()) {
    GEOTRAIN_ASSIGN_OR_RETURN(
        authorizer.admin_token,
        auth::ReadTokenFile({security.admin_token_file, "--admin-token-file"}));
  }
  if (authorizer.join_token == authorizer.admin_token && !authorizer.join_token.empty()) {
    return InvalidArgument(
        "--join-token-file/--admin-token-file: the two tokens are the same; a "
        "worker could then act as an admin");
  }
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::SslServerCredentials(ssl);
  credentials->SetAuthMetadataProcessor(std::make_shared<CallAuthorizer>(authorizer));
  return credentials;
}

}  // namespace

bool IsLoopbackListenAddress(const std::string& listen_address) {
  if (listen_address.rfind("unix:", 0) == 0) return true;
  // Not HOST:PORT: not known to be loopback, so the security checks apply.
  const StatusOr<io::HostPort> where = io::ParseHostPort(listen_address, "listen address");
  if (!where.ok()) return false;
  const std::string& host = where->host;
  if (host == "localhost" || host == "::1") return true;
  in_addr v4{};
  return inet_pton(AF_INET, host.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127;
}

Status CheckServerSecurity(const std::string& listen_address,
                           const ServerSecurityOptions& security) {
  const bool tls = !security.tls_cert_file.empty();
  if (security.tls_cert_file.empty() != security.tls_key_file.empty()) {
    return InvalidArgument(
        "--tls-cert/--tls-key: give both (the server's certificate and its "
        "private key) or neither");
  }
  if (security.tls_ca_file.empty() &&
      (!security.revoked_workers_file.empty() || security.allow_shared_worker_cert)) {
    return InvalidArgument(std::string(security.allow_shared_worker_cert
                                           ? "--allow-shared-worker-cert"
                                           : "--revoked-workers") +
                           ": worker certificates are checked only with --tls-ca (mTLS)");
  }
  if (!tls) {
    if (!security.tls_ca_file.empty()) {
      return InvalidArgument(
          "--tls-ca: client certificates need TLS; give --tls-cert and "
          "--tls-key too");
    }
    for (const auto& [flag, file] : {std::pair{"--join-token-file", &security.join_token_file},
                                     std::pair{"--admin-token-file", &security.admin_token_file}}) {
      if (!file->empty()) {
        return InvalidArgument(std::string(flag) +
                               ": tokens are checked only over TLS (in clear text anyone on the "
                               "path could copy them); give --tls-cert and --tls-key too");
      }
    }
  }
  if (security.insecure || IsLoopbackListenAddress(listen_address)) return OkStatus();
  if (!tls) {
    return InvalidArgument("--listen " + listen_address +
                           ": a non-loopback address needs TLS (--tls-cert, --tls-key, and "
                           "--tls-ca, --join-token-file, --admin-token-file; `geotrain certs "
                           "init` makes them) or --insecure to serve in clear text anyway");
  }
  if (security.join_token_file.empty() || security.admin_token_file.empty()) {
    return InvalidArgument("--listen " + listen_address +
                           ": a non-loopback address needs both --join-token-file and "
                           "--admin-token-file (or --insecure to let anyone who reaches the port "
                           "in)");
  }
  return OkStatus();
}

CoordinatorServer::CoordinatorServer() = default;

CoordinatorServer::~CoordinatorServer() { Shutdown(); }

StatusOr<std::unique_ptr<CoordinatorServer>> CoordinatorServer::Start(
    const ServerOptions& options) {
  const bool unix_socket = options.listen_address.rfind("unix:", 0) == 0;
  io::HostPort where;
  if (!unix_socket) {
    GEOTRAIN_ASSIGN_OR_RETURN(where, io::ParseHostPort(options.listen_address, "listen address"));
  }
  GEOTRAIN_RETURN_IF_ERROR(CheckServerSecurity(options.listen_address, options.security));
  if (options.max_receive_message_bytes < 1024) {
    return InvalidArgument(
        "max receive message size: " + std::to_string(options.max_receive_message_bytes) +
        " bytes is below 1024");
  }
  std::shared_ptr<RevokedWorkers> revoked;
  if (!options.security.revoked_workers_file.empty()) {
    GEOTRAIN_ASSIGN_OR_RETURN(
        revoked, RevokedWorkers::Open(options.security.revoked_workers_file, &RealClock()));
  }
  GEOTRAIN_ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> credentials,
                            MakeServerCredentials(options.security, revoked));
  std::unique_ptr<CoordinatorServer> server(new CoordinatorServer());
  GEOTRAIN_ASSIGN_OR_RETURN(server->store_, OpenSqliteStateStore(options.state_dir));
  server->kv_ = std::make_unique<KvStore>(options.rendezvous);
  server->scopes_ = KvStoreScopes(server->kv_.get());
  GEOTRAIN_ASSIGN_OR_RETURN(server->core_,
                            CoordinatorCore::Create(options.coordinator, server->store_.get(),
                                                    server->scopes_.get(), &RealClock()));
  server->registration_limiter_ =
      std::make_unique<ClientRateLimiter>(options.max_registrations_per_minute, "registrations",
                                          "--max-registrations-per-minute", &RealClock());
  server->submission_limiter_ =
      std::make_unique<ClientRateLimiter>(options.max_submissions_per_minute, "job submissions",
                                          "--max-submissions-per-minute", &RealClock());
  server->coordinator_service_ = std::make_unique<CoordinatorService>(
      server->core_.get(), server->store_.get(),
      CallLimits{server->registration_limiter_.get(), server->submission_limiter_.get(),
                 revoked.get()});
  server->revoked_ = std::move(revoked);
  CoordinatorCore* core = server->core_.get();
  server->rendezvous_service_ = std::make_unique<RendezvousService>(
      server->kv_.get(), [core](const CallerIdentity& caller, const KvScopeId& scope) {
        return core->AuthorizeRendezvous(caller, scope.job_id, scope.generation);
      });

  grpc::ServerBuilder builder;
  // Without this a second coordinator could bind the same port and share its traffic.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(options.max_receive_message_bytes);
  builder.AddListeningPort(options.listen_address, credentials, &server->port_);
  builder.RegisterService(server->coordinator_service_.get());
  builder.RegisterService(server->rendezvous_service_.get());
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    server->server_.reset();
    return Unavailable("listen address " + options.listen_address +
                       ": cannot listen there (in use, or not an address of this machine)");
  }
  server->address_ =
      unix_socket ? options.listen_address : io::HostPort{where.host, server->port_}.ToString();
  server->scheduler_ = std::make_unique<SchedulerThread>(server->core_.get(), options.tick_period);
  return server;
}

void CoordinatorServer::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  // Sessions and watches are endless streams: end them first so the server can drain.
  if (core_ != nullptr) core_->Shutdown();
  if (server_ != nullptr) {
    server_->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
    server_->Wait();
  }
  if (scheduler_ != nullptr) scheduler_->Stop();
  server_.reset();
  rendezvous_service_.reset();
  coordinator_service_.reset();
  submission_limiter_.reset();
  registration_limiter_.reset();
  scheduler_.reset();
  core_.reset();
  scopes_.reset();
  kv_.reset();
  store_.reset();
}

}  // namespace geotrain::coordinator
