// PermissionDenied: the coordinator's refusal of an authenticated caller acting beyond what its
// identity may do (another worker's id, another job's rendezvous scope). ToGrpcStatus
// (rendezvous_service.h) sends it as PERMISSION_DENIED.
//
// geotrain::Status has no such code, and adding one to common/status.h would touch every target
// of the tree for a code only the coordinator's services produce; so it travels as
// FAILED_PRECONDITION whose message starts with kPermissionDeniedPrefix, made and recognised only
// here.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace geotrain::coordinator {

inline constexpr std::string_view kPermissionDeniedPrefix = "permission denied: ";

inline Status PermissionDenied(const std::string& message) {
  return FailedPrecondition(std::string(kPermissionDeniedPrefix) + message);
}

inline bool IsPermissionDenied(const Status& status) {
  return status.code() == StatusCode::kFailedPrecondition &&
         status.message().rfind(kPermissionDeniedPrefix, 0) == 0;
}

}  // namespace geotrain::coordinator
