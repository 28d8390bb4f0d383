// The JSON view of the control commands' answers (`-o json`).
#pragma once

#include <google/protobuf/message.h>

#include <string>

#include "common/status.h"

namespace geotrain::cli {

// `message` as one line of JSON (no newline): protobuf's canonical JSON mapping with the .proto
// field names (`progress.step`), every field written even when zero, enums by name
// ("JOB_STATE_RUNNING"), and 64-bit integers as decimal strings ("step": "120"), as the mapping
// requires so that JavaScript readers lose no precision.
StatusOr<std::string> ToJsonLine(const google::protobuf::Message& message);

}  // namespace geotrain::cli
