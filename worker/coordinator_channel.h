// The gRPC channel to the coordinator, configured the same way for the daemon and its task
// children, and the wording of RPC errors in their logs.
//
// Reconnection back-off is capped at 5 s (gRPC's default grows to 2 minutes), so a restarted
// coordinator is found again as quickly as the daemon's own back-off intends. Keepalive pings
// every 6 minutes notice a silently dead link; any shorter and a coordinator with gRPC's default
// server policy (one ping per 5 minutes while it sends nothing) would close the connection.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

namespace geotrain::worker {

// `credentials` null: insecure (a coordinator in development mode on loopback). Otherwise TLS
// and the join token (auth::MakeChannelCredentials with the worker's --tls-* and
// --join-token-file).
std::shared_ptr<grpc::Channel> CoordinatorChannel(
    const std::string& address, std::shared_ptr<grpc::ChannelCredentials> credentials = nullptr);

// "UNAVAILABLE: failed to connect to all addresses".
std::string DescribeRpcError(const grpc::Status& status);

}  // namespace geotrain::worker
