// The gRPC channel to the coordinator, configured the same way for the daemon and its task
// children, and the wording of RPC errors in their logs.
//
// Why these arguments (issue 20: TLS workers that never came back after a coordinator restart):
//  - gRPC C-core reads GRPC_ARG_MIN_RECONNECT_BACKOFF_MS as the *minimum connect timeout*: one
//    connection attempt (TCP connect, TLS handshake, HTTP/2 preface) is cut after
//    max(its back-off delay, that minimum). It was 200 ms; on a loaded machine a TLS handshake
//    takes longer, so every attempt was cut mid-handshake ("Handshake read failed", "tcp
//    handshaker shutdown"). kMinConnectTimeout leaves a handshake time to finish.
//  - Reconnection back-off: 200 ms growing to 5 s (gRPC's default grows to 2 minutes), so a
//    restarted coordinator is found again within seconds.
//  - A call without wait_for_ready fails at once while the channel is in TRANSIENT_FAILURE, and
//    then no thread of ours polls the connection attempt: only gRPC's backup poller (every 5 s)
//    moves it on, one handshake step per tick, and the attempt's deadline passes first. Callers
//    that retry therefore make their calls wait_for_ready with a deadline (WaitForReady below),
//    so the calling thread polls the attempt while it waits.
// Keepalive pings every 6 minutes notice a silently dead link; any shorter and a coordinator with
// gRPC's default server policy (one ping per 5 minutes while it sends nothing) would close the
// connection.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>

namespace geotrain::worker {

// The longest one connection attempt (TCP, TLS handshake, HTTP/2 preface) may take.
inline constexpr std::chrono::milliseconds kMinConnectTimeout{10000};

// `credentials` null: insecure (a coordinator in development mode on loopback). Otherwise TLS
// and the join token (auth::MakeChannelCredentials with the worker's --tls-* and
// --join-token-file).
std::shared_ptr<grpc::Channel> CoordinatorChannel(
    const std::string& address, std::shared_ptr<grpc::ChannelCredentials> credentials = nullptr);

// Makes the call wait for a connection (until its deadline, which the caller must set) instead of
// failing at once while the channel reconnects; see the header comment for why.
void WaitForReady(grpc::ClientContext& context);

// "UNAVAILABLE: failed to connect to all addresses".
std::string DescribeRpcError(const grpc::Status& status);

}  // namespace geotrain::worker
