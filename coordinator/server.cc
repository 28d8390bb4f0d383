#include "coordinator/server.h"

#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>

#include "coordinator/coordinator_service.h"
#include "coordinator/kv_store.h"
#include "coordinator/kv_store_scopes.h"
#include "coordinator/rendezvous_service.h"
#include "coordinator/scheduler_thread.h"

namespace geotrain::coordinator {
namespace {

// How long Shutdown lets RPCs in flight finish before cancelling them.
constexpr std::chrono::seconds kShutdownGrace{2};

}  // namespace

CoordinatorServer::CoordinatorServer() = default;

CoordinatorServer::~CoordinatorServer() { Shutdown(); }

StatusOr<std::unique_ptr<CoordinatorServer>> CoordinatorServer::Start(
    const ServerOptions& options) {
  const size_t colon = options.listen_address.rfind(':');
  if (colon == std::string::npos || colon + 1 == options.listen_address.size()) {
    return InvalidArgument("listen address: \"" + options.listen_address +
                           "\" is not HOST:PORT");
  }
  std::unique_ptr<CoordinatorServer> server(new CoordinatorServer());
  GEOTRAIN_ASSIGN_OR_RETURN(server->store_, OpenSqliteStateStore(options.state_dir));
  server->kv_ = std::make_unique<KvStore>();
  server->scopes_ = KvStoreScopes(server->kv_.get());
  GEOTRAIN_ASSIGN_OR_RETURN(server->core_,
                            CoordinatorCore::Create(options.coordinator, server->store_.get(),
                                                    server->scopes_.get(), &SystemClock()));
  server->coordinator_service_ =
      std::make_unique<CoordinatorService>(server->core_.get(), server->store_.get());
  server->rendezvous_service_ = std::make_unique<RendezvousService>(server->kv_.get());

  grpc::ServerBuilder builder;
  // Without this a second coordinator could bind the same port and share its traffic.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddListeningPort(options.listen_address, grpc::InsecureServerCredentials(),
                           &server->port_);
  builder.RegisterService(server->coordinator_service_.get());
  builder.RegisterService(server->rendezvous_service_.get());
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    server->server_.reset();
    return Unavailable("listen address " + options.listen_address +
                       ": cannot listen there (in use, or not an address of this machine)");
  }
  server->address_ =
      options.listen_address.substr(0, colon + 1) + std::to_string(server->port_);
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
  scheduler_.reset();
  core_.reset();
  scopes_.reset();
  kv_.reset();
  store_.reset();
}

}  // namespace geotrain::coordinator
