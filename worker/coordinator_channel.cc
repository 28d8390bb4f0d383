#include "worker/coordinator_channel.h"

#include "proto/grpc_code_name.h"

namespace geotrain::worker {

std::shared_ptr<grpc::Channel> CoordinatorChannel(
    const std::string& address, std::shared_ptr<grpc::ChannelCredentials> credentials) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 200);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, static_cast<int>(kMinConnectTimeout.count()));
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 5000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 6 * 60 * 1000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20 * 1000);
  if (credentials == nullptr) credentials = grpc::InsecureChannelCredentials();
  return grpc::CreateCustomChannel(address, credentials, args);
}

void WaitForReady(grpc::ClientContext& context) { context.set_wait_for_ready(true); }

std::string DescribeRpcError(const grpc::Status& status) {
  std::string text = proto::GrpcCodeName(status.error_code());
  if (!status.error_message().empty()) text += ": " + status.error_message();
  return text;
}

}  // namespace geotrain::worker
