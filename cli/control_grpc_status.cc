#include "cli/control_grpc_status.h"

namespace geotrain::cli {

std::string GrpcCodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::UNKNOWN:
      return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED:
      return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS:
      return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    default:
      return "CODE_" + std::to_string(static_cast<int>(code));
  }
}

Status FromGrpcStatus(const grpc::Status& status) {
  const std::string& message = status.error_message();
  const std::string renamed = GrpcCodeName(status.error_code()) + ": " + message;
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
    case grpc::StatusCode::UNIMPLEMENTED:
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::ALREADY_EXISTS:
      return FailedPrecondition(renamed);
    default:
      return Internal(renamed);
  }
}

}  // namespace geotrain::cli
