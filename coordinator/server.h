// CoordinatorServer: the coordinator daemon's objects wired together: the state store, the core,
// the scheduler thread, the rendezvous key-value store, and one gRPC server serving the
// Coordinator and Rendezvous services on one port. main.cc and the loopback tests start it.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "common/status.h"
#include "coordinator/coordinator_core.h"

namespace grpc {
class Server;
}

namespace geotrain::coordinator {

class KvStore;
class CoordinatorService;
class RendezvousService;
class SchedulerThread;

struct ServerOptions {
  // HOST:PORT to listen on; port 0 picks a free one (see CoordinatorServer::address()).
  std::string listen_address = "0.0.0.0:7070";
  // Where coordinator.db lives; created when missing.
  std::string state_dir;
  CoordinatorOptions coordinator;
  // The scheduler's period when nothing wakes it.
  std::chrono::milliseconds tick_period{200};
};

class CoordinatorServer {
 public:
  // Opens and loads the state, binds the address and starts serving. Errors name the state
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
  std::unique_ptr<CoordinatorService> coordinator_service_;
  std::unique_ptr<RendezvousService> rendezvous_service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
  int port_ = 0;
  bool shut_down_ = false;
};

}  // namespace geotrain::coordinator
