// GrpcCodeName: the name of a gRPC status code, as error messages of every control-plane program
// show it ("UNAVAILABLE: failed to connect ...").
#pragma once

#include <grpcpp/support/status.h>

namespace geotrain::proto {

// "NOT_FOUND" for grpc::StatusCode::NOT_FOUND; "UNKNOWN_CODE" for a value gRPC does not define.
const char* GrpcCodeName(grpc::StatusCode code);

}  // namespace geotrain::proto
