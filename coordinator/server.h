// CoordinatorServer: the coordinator daemon's objects wired together: the state store, the core,
// the scheduler thread, the rendezvous key-value store, and one gRPC server serving the
// Coordinator and Rendezvous services on one port. main.cc and the loopback tests start it.
//
// Security (docs/security.md): with a certificate and key the port speaks TLS; with a CA, worker
// calls also need a client certificate it signed (mTLS; the CLI may connect without one); with
// token files, every call needs the token of its role (CallAuthorizer). Loopback without any of
// them is development mode; any other address needs TLS and both tokens unless `insecure`.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "common/status.h"
#include "coordinator/coordinator_core.h"
#include "coordinator/kv_store.h"

namespace grpc {
class Server;
}

namespace geotrain::coordinator {

class CallAuthorizer;
class ClientRateLimiter;
class KvStore;
class CoordinatorService;
class RendezvousService;
class RevokedWorkers;
class SchedulerThread;

struct ServerSecurityOptions {
  std::string tls_cert_file;     // --tls-cert: the server's certificate (chain), PEM
  std::string tls_key_file;      // --tls-key: its private key, PEM
  std::string tls_ca_file;       // --tls-ca: the CA of workers' client certificates (mTLS)
  std::string join_token_file;   // --join-token-file: the workers' token
  std::string admin_token_file;  // --admin-token-file: the CLI's token
  // --insecure: allow a non-loopback address without TLS, or with TLS but without tokens.
  bool insecure = false;
  // --revoked-workers: worker names and certificate fingerprints refused (revoked_workers.h).
  std::string revoked_workers_file;
  // --allow-shared-worker-cert: accept worker certificates without identity (CallAuthorizer).
  bool allow_shared_worker_cert = false;
};

struct ServerOptions {
  // HOST:PORT to listen on; port 0 picks a free one (see CoordinatorServer::address()).
  std::string listen_address = "0.0.0.0:7070";
  // Where coordinator.db lives; created when missing.
  std::string state_dir;
  CoordinatorOptions coordinator;
  // The scheduler's period when nothing wakes it.
  std::chrono::milliseconds tick_period{200};
  ServerSecurityOptions security;
  // Largest request gRPC accepts; a bigger one is refused with RESOURCE_EXHAUSTED before any
  // handler runs. Job specs are a few KiB; the largest worker messages (step reports) less.
  int max_receive_message_bytes = 16 << 20;
  // Per client host and minute (0: unlimited).
  int64_t max_registrations_per_minute = 60;
  int64_t max_submissions_per_minute = 30;
  // The rendezvous store's limits (--rendezvous-job-max-bytes, --rendezvous-job-max-keys).
  KvStoreLimits rendezvous;
};

// True for 127.0.0.0/8, ::1, localhost and unix: sockets: addresses no other host can reach.
bool IsLoopbackListenAddress(const std::string& listen_address);

// The rules above, before anything is opened: InvalidArgument naming the flags (--listen and
// --insecure when a non-loopback address lacks TLS or tokens; a key without a certificate;
// tokens without TLS, which only TLS credentials can check).
Status CheckServerSecurity(const std::string& listen_address,
                           const ServerSecurityOptions& security);

class CoordinatorServer {
 public:
  // Checks the security options (CheckServerSecurity) and reads their files, opens and loads
  // the state, binds the address and starts serving. Errors name the state
  // directory (it cannot be created, holds a foreign or newer database, or another coordinator
  // uses it) or the address (UNAVAILABLE: it cannot be bound).
  static StatusOr<std::unique_ptr<CoordinatorServer>> Start(const ServerOptions& options);
  ~CoordinatorServer();  // Shutdown()
  CoordinatorServer(const CoordinatorServer&) = delete;
  CoordinatorServer& operator=(const CoordinatorServer&) = delete;

  // The listen address with the port actually bound ("0.0.0.0:7070", "127.0.0.1:41234").
  const std::string& address() const { return address_; }
  int port() const { return port_; }

  // The core, for read-only views beside the gRPC services (the metrics page). Valid until
  // Shutdown(); whoever reads it must stop before then.
  const CoordinatorCore& core() const { return *core_; }

  // Stops accepting, ends sessions and watches, stops the scheduler and closes the store (every
  // change already written; pending progress is flushed). Idempotent; not concurrently with
  // itself.
  void Shutdown();

 private:
  CoordinatorServer();

  std::unique_ptr<StateStore> store_;
  std::unique_ptr<KvStore> kv_;
  std::unique_ptr<RendezvousScopes> scopes_;
  std::unique_ptr<CoordinatorCore> core_;
  std::unique_ptr<SchedulerThread> scheduler_;
  std::unique_ptr<ClientRateLimiter> registration_limiter_;
  std::unique_ptr<ClientRateLimiter> submission_limiter_;
  std::unique_ptr<CoordinatorService> coordinator_service_;
  std::unique_ptr<RendezvousService> rendezvous_service_;
  // --revoked-workers; shared with the CallAuthorizer of the credentials.
  std::shared_ptr<RevokedWorkers> revoked_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
  int port_ = 0;
  bool shut_down_ = false;
};

}  // namespace geotrain::coordinator
