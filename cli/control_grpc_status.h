// gRPC status -> geotrain::Status, so that everything above the client speaks one error type.
#pragma once

#include <grpcpp/support/status.h>

#include <string>

#include "common/status.h"

namespace geotrain::cli {

// Codes geotrain::Status has keep their meaning, UNAUTHENTICATED included (the CLI answers it with
// its own exit code). UNIMPLEMENTED, PERMISSION_DENIED and ALREADY_EXISTS become
// FailedPrecondition (retrying cannot help); CANCELLED, UNKNOWN, ABORTED and INTERNAL become
// Internal (a broken stream reports them, so a follower may retry). Where the code changes, the
// message starts with the gRPC code's name.
Status FromGrpcStatus(const grpc::Status& status);

}  // namespace geotrain::cli
