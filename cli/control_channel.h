// The one place that decides how the CLI dials the coordinator: plain gRPC, or TLS with the admin
// token (auth::MakeChannelCredentials).
#pragma once

#include <grpcpp/channel.h>
#include <grpcpp/security/credentials.h>

#include <memory>

#include "cli/control_address.h"

namespace geotrain::cli {

// A lazily connecting channel to `address.target`. Reconnect back-off is capped at a few seconds
// (gRPC's default grows to two minutes) so that a follower resumes soon after a coordinator
// restart; keepalive pings notice a coordinator host that vanished without closing the socket.
// `credentials` null: insecure.
std::shared_ptr<grpc::Channel> CreateCoordinatorChannel(
    const CoordinatorAddress& address,
    std::shared_ptr<grpc::ChannelCredentials> credentials = nullptr);

}  // namespace geotrain::cli
