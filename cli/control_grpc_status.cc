#include "cli/control_grpc_status.h"

#include "proto/grpc_code_name.h"

namespace geotrain::cli {

Status FromGrpcStatus(const grpc::Status& status) {
  const std::string& message = status.error_message();
  const std::string renamed =
      std::string(proto::GrpcCodeName(status.error_code())) + ": " + message;
  switch (status.error_code()) {
    case grpc::StatusCode::OK:
      return OkStatus();
    case grpc::StatusCode::INVALID_ARGUMENT:
      return InvalidArgument(message);
    case grpc::StatusCode::NOT_FOUND:
      return NotFound(message);
    case grpc::StatusCode::FAILED_PRECONDITION:
      return FailedPrecondition(message);
    case grpc::StatusCode::OUT_OF_RANGE:
      return OutOfRange(message);
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return ResourceExhausted(message);
    case grpc::StatusCode::DATA_LOSS:
      return DataLoss(message);
    case grpc::StatusCode::UNAVAILABLE:
      return Unavailable(message);
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return Status(StatusCode::kDeadlineExceeded, message);
    case grpc::StatusCode::UNAUTHENTICATED:
      return Unauthenticated(message);
    case grpc::StatusCode::UNIMPLEMENTED:
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::ALREADY_EXISTS:
      return FailedPrecondition(renamed);
    default:
      return Internal(renamed);
  }
}

}  // namespace geotrain::cli
