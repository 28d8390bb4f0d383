// The task child: `geotrain-worker task --coordinator HOST:PORT --assignment FILE --bind ADDR
// [--threads N] [--data-root DIR] [--allow-path DIR ...] [--tls-ca FILE [--tls-cert FILE --tls-key
// FILE] [--join-token-file FILE]]`, the process the daemon starts for each Assignment (hidden
// from --help).
//
// Reads the Assignment file, derives the rank's StageAssignment (task_assignment.h), forms the
// job's groups through a CoordinatorStore scoped to the assignment's rendezvous, and trains with
// runtime::RunRank. Before every step it polls the task's config-changes.jsonl (next to the
// assignment file unless config_changes_path names another), where the daemon appends the
// coordinator's ConfigChanges (runtime/config_change.h). Every path of the job is confined to
// --data-root and --allow-path first (runtime/job_paths.h). Each step prints one JSON line
// (runtime/step_line.h) on stdout, flushed; logs go to stderr. Exit codes: 0 trained to the end, 1
// training failed, 2 bad assignment or job file (the daemon reports those as permanent failures).
#pragma once

#include <string>
#include <vector>

#include "common/auth/channel_credentials.h"

namespace geotrain::worker {

// The file in a task's directory where the daemon appends the task's codec changes.
inline constexpr char kConfigChangesFileName[] = "config-changes.jsonl";

struct TaskCommandOptions {
  std::string coordinator;      // HOST:PORT of the coordinator (its Rendezvous service)
  std::string assignment_path;  // WORK_DIR/tasks/<task>/assignment.pb
  std::string bind_address;     // where Gloo listens; the daemon's --advertise
  int threads = 0;              // intra-op threads; 0: LibTorch's default
  // --config-changes: the codec changes to poll; empty: kConfigChangesFileName in the
  // assignment file's directory (the daemon's task directory).
  std::string config_changes_path;
  // --data-root, --allow-path: where the job's paths may point (runtime/job_paths.h); an empty
  // data_root is the current directory, which the daemon sets to its own --data-root.
  std::string data_root;
  std::vector<std::string> allowed_paths;
  // --tls-ca, --tls-cert, --tls-key, --join-token-file: how the Rendezvous calls reach a
  // coordinator with TLS (the daemon passes its own on); none given: insecure.
  auth::ClientCredentialFiles credentials;
};

// Returns the process's exit code.
int RunTaskCommand(const TaskCommandOptions& options);

}  // namespace geotrain::worker
