// The command lines of geotrain-worker: the daemon's flags and the hidden `task` subcommand's,
// declared on a CLI::App and checked afterwards, every error naming the flag and the reason.
//
//   geotrain-worker --coordinator HOST:PORT --advertise ADDR --region NAME --work-dir DIR
//       [--data-root DIR] [--allow-path DIR ...] [--threads N] [--stop-grace-seconds S] [--port-min
//       P --port-max P]
//       [--log-level info] [--metrics-listen HOST:PORT] [--probe-listen HOST:PORT]
//       [--tls-ca FILE [--tls-cert FILE --tls-key FILE] [--join-token-file FILE]]
//   geotrain-worker task --coordinator HOST:PORT --assignment FILE --bind ADDR [--threads N]
//       [--data-root DIR] [--allow-path DIR ...]
//       [the daemon's --tls-* and --join-token-file]
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "common/auth/channel_credentials.h"
#include "common/status.h"
#include "worker/task_command.h"

namespace geotrain::worker {

struct DaemonFlags {
  std::string coordinator;
  // --tls-ca, --tls-cert, --tls-key, --join-token-file (absolute after FinishDaemonFlags).
  auth::ClientCredentialFiles credentials;
  std::string advertise;
  std::string region;
  std::string work_dir;
  std::string data_root;  // empty: the current directory
  // --allow-path DIR (repeatable): directories besides data_root that job paths may name
  // (checkpoints on another disk); absolute after FinishDaemonFlags.
  std::vector<std::string> allowed_paths;
  int threads = 0;
  double stop_grace_seconds = 5;
  int port_min = 0;
  int port_max = 0;
  std::string log_level = "info";
  // Where /metrics is served ("" : nowhere; port 0: any free port).
  std::string metrics_listen = "0.0.0.0:9401";
  // Where the link-probe server listens ("": no server; port 0: any free port).
  std::string probe_listen = "0.0.0.0:0";
};

void AddDaemonFlags(CLI::App* app, DaemonFlags* flags);
// Checks the values; makes work_dir (created if missing), data_root and allowed_paths absolute.
Status FinishDaemonFlags(DaemonFlags* flags);

void AddTaskFlags(CLI::App* app, TaskCommandOptions* options);
Status CheckTaskFlags(const TaskCommandOptions& options);

// The child's flags for `files`: {"--tls-ca", PATH, ...}, only those given.
std::vector<std::string> CredentialFlags(const auth::ClientCredentialFiles& files);

// "--coordinator: \"x\" is not HOST:PORT ..." or OK.
Status CheckHostPort(const std::string& flag, const std::string& value);
// As CheckHostPort, for an address to listen on: port 0 (any free port) is allowed.
Status CheckListenAddress(const std::string& flag, const std::string& value);

}  // namespace geotrain::worker
