// What the control commands share: connecting, printing an answer, and turning errors and
// finished jobs into exit codes. Internal to cli/.
#pragma once

#include <google/protobuf/message.h>

#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "cli/control_client.h"
#include "cli/control_commands.h"
#include "cli/control_follow.h"
#include "common/status.h"

namespace geotrain::cli {

// Whether `status` is the coordinator's UNAUTHENTICATED (kUnauthenticated, as FromGrpcStatus
// converts it), whatever context the caller added to its message.
bool IsUnauthenticated(const Status& status);

// Prints `status` on `err` as "geotrain: CODE: first line", further lines indented by two spaces
// (the coordinator lists one problem per line). Returns kExitUnreachable for Unavailable (the
// client reports an unreachable coordinator so), kExitUnauthenticated (with a hint about the
// admin token) for a refused credential, kExitFailure otherwise.
int ReportFailure(const Status& status, std::ostream& err);

// A client for the address from --coordinator, GEOTRAIN_COORDINATOR or the default.
StatusOr<std::unique_ptr<CoordinatorClient>> ConnectToCoordinator(const ControlOptions& control,
                                                                  const CommandContext& context);

// Prints `message` as one JSON line (-o json) or table(message) (-o table) on context.out.
// Returns the exit code.
int PrintAnswer(const google::protobuf::Message& message, OutputFormat format,
                const std::function<std::string()>& table, CommandContext& context);

// What FollowJob needs to read `job_id`'s stream from the beginning.
FollowOptions MakeFollowOptions(const std::string& job_id, bool follow, bool events, bool logs,
                                double reconnect_seconds);

// kExitSuccess when `job` succeeded; otherwise prints "geotrain: job-3 failed: why" on `err` and
// returns kExitJobFailed.
int FinishedJobExitCode(const v1::Job& job, std::ostream& err);

}  // namespace geotrain::cli
