#include "cli/control_channel.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

namespace geotrain::cli {

std::shared_ptr<grpc::Channel> CreateCoordinatorChannel(
    const CoordinatorAddress& address, std::shared_ptr<grpc::ChannelCredentials> credentials) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 500);
  // gRPC reads this as the minimum connect timeout (TCP, TLS handshake, HTTP/2 preface); a
  // shorter one cuts TLS handshakes on a loaded machine (worker/coordinator_channel.h).
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 10000);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 4000);
  // Not below gRPC servers' default minimum ping interval (5 min): faster pings would be
  // answered with GOAWAY "too_many_pings" by a coordinator that does not opt in to them.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 5 * 60 * 1000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20 * 1000);
  // ListJobs --all carries every job's spec; the 4 MB default is too small for a busy cluster.
  args.SetMaxReceiveMessageSize(64 << 20);
  if (credentials == nullptr) credentials = grpc::InsecureChannelCredentials();
  return grpc::CreateCustomChannel(address.target, credentials, args);
}

}  // namespace geotrain::cli
