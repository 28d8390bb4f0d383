#include "worker/worker_flags.h"

#include <spdlog/spdlog.h>

#include <filesystem>

#include "common/io/host_port.h"

namespace geotrain::worker {
namespace fs = std::filesystem;

namespace {

void AddCredentialFlags(CLI::App* app, auth::ClientCredentialFiles* files) {
  app->add_option("--tls-ca", files->ca.path,
                  "CA that signed the coordinator's certificate (PEM): TLS on");
  app->add_option("--tls-cert", files->cert.path,
                  "this worker's client certificate (PEM; with --tls-key: mTLS)");
  app->add_option("--tls-key", files->key.path, "the client certificate's private key (PEM)");
  app->add_option("--join-token-file", files->token.path,
                  "file with the coordinator's join token (mode 0600; needs --tls-ca)");
}

// Absolute: the task children run in --data-root, not in the daemon's directory.
void MakeAbsolute(auth::CredentialFile* file) {
  if (file->given()) file->path = fs::absolute(file->path).lexically_normal().string();
}

}  // namespace

std::vector<std::string> CredentialFlags(const auth::ClientCredentialFiles& files) {
  std::vector<std::string> args;
  for (const auth::CredentialFile* file : {&files.ca, &files.cert, &files.key, &files.token}) {
    if (!file->given()) continue;
    args.push_back(file->origin);
    args.push_back(file->path);
  }
  return args;
}

void AddDaemonFlags(CLI::App* app, DaemonFlags* flags) {
  app->add_option("--coordinator", flags->coordinator, "the coordinator, HOST:PORT")->required();
  AddCredentialFlags(app, &flags->credentials);
  app->add_option("--advertise", flags->advertise,
                  "the address other workers reach this one's data plane at")
      ->required();
  app->add_option("--region", flags->region, "region label (placement keeps replicas together)")
      ->required();
  app->add_option("--work-dir", flags->work_dir,
                  "worker id file and one directory per task (created if missing)")
      ->required();
  app->add_option("--data-root", flags->data_root,
                  "working directory of the tasks: relative paths in job specs resolve here, "
                  "and every job path must lie below it or an --allow-path "
                  "(default: the current directory)");
  app->add_option("--allow-path", flags->allowed_paths,
                  "a directory besides --data-root that job paths may name, e.g. checkpoints "
                  "on another disk (repeatable)");
  app->add_option("--threads", flags->threads,
                  "intra-op threads (and OMP_NUM_THREADS) of each task; 0: LibTorch's default")
      ->capture_default_str();
  app->add_option("--stop-grace-seconds", flags->stop_grace_seconds,
                  "SIGTERM to SIGKILL delay when stopping a task")
      ->capture_default_str();
  app->add_option("--port-min", flags->port_min,
                  "lowest data-plane port (with --port-max; 0 and 0: ephemeral ports)")
      ->capture_default_str();
  app->add_option("--port-max", flags->port_max, "highest data-plane port")->capture_default_str();
  app->add_option("--log-level", flags->log_level,
                  "trace, debug, info, warn, error, critical or off")
      ->capture_default_str();
  app->add_option("--metrics-listen", flags->metrics_listen,
                  "serve Prometheus metrics on /metrics at HOST:PORT (port 0: any free port; "
                  "\"\": no metrics)")
      ->capture_default_str();
  app->add_option("--probe-listen", flags->probe_listen,
                  "answer other workers' link probes at HOST:PORT (port 0: any free port; the "
                  "bound one is reported to the coordinator; \"\": no probes to this worker)")
      ->capture_default_str();
}

Status CheckHostPort(const std::string& flag, const std::string& value) {
  return io::ParseHostPort(value, flag, 1).status();
}

Status CheckListenAddress(const std::string& flag, const std::string& value) {
  return io::ParseHostPort(value, flag, 0).status();
}

Status FinishDaemonFlags(DaemonFlags* flags) {
  GEOTRAIN_RETURN_IF_ERROR(CheckHostPort("--coordinator", flags->coordinator));
  if (flags->advertise.empty()) return InvalidArgument("--advertise: empty");
  if (flags->region.empty()) return InvalidArgument("--region: empty");
  if (flags->threads < 0) {
    return InvalidArgument("--threads: " + std::to_string(flags->threads) + " is negative");
  }
  if (!(flags->stop_grace_seconds >= 0) || flags->stop_grace_seconds > 3600) {
    return InvalidArgument("--stop-grace-seconds: " + std::to_string(flags->stop_grace_seconds) +
                           " is outside 0..3600");
  }
  for (const auto& [flag, port] :
       {std::pair{"--port-min", flags->port_min}, std::pair{"--port-max", flags->port_max}}) {
    if (port < 0 || port > 65535) {
      return InvalidArgument(std::string(flag) + ": " + std::to_string(port) +
                             " is outside 0..65535");
    }
  }
  if ((flags->port_min == 0) != (flags->port_max == 0)) {
    return InvalidArgument("--port-min/--port-max: give both (or neither, for ephemeral ports)");
  }
  if (flags->port_min > flags->port_max) {
    return InvalidArgument("--port-min: " + std::to_string(flags->port_min) +
                           " is above --port-max " + std::to_string(flags->port_max));
  }
  if (spdlog::level::from_str(flags->log_level) == spdlog::level::off &&
      flags->log_level != "off") {
    return InvalidArgument("--log-level: \"" + flags->log_level +
                           "\" is none of trace, debug, info, warn, error, critical, off");
  }
  if (!flags->metrics_listen.empty()) {
    GEOTRAIN_RETURN_IF_ERROR(CheckListenAddress("--metrics-listen", flags->metrics_listen));
  }
  if (!flags->probe_listen.empty()) {
    GEOTRAIN_RETURN_IF_ERROR(CheckListenAddress("--probe-listen", flags->probe_listen));
  }

  GEOTRAIN_RETURN_IF_ERROR(auth::CheckClientCredentialFiles(flags->credentials));
  for (auth::CredentialFile* file : {&flags->credentials.ca, &flags->credentials.cert,
                                     &flags->credentials.key, &flags->credentials.token}) {
    MakeAbsolute(file);
  }

  std::error_code ec;
  if (flags->work_dir.empty()) return InvalidArgument("--work-dir: empty");
  fs::create_directories(flags->work_dir, ec);
  if (ec || !fs::is_directory(flags->work_dir)) {
    return InvalidArgument("--work-dir: cannot create directory " + flags->work_dir +
                           (ec ? ": " + ec.message() : std::string()));
  }
  flags->work_dir = fs::absolute(flags->work_dir).lexically_normal().string();
  if (flags->data_root.empty()) flags->data_root = fs::current_path(ec).string();
  if (!fs::is_directory(flags->data_root, ec)) {
    return InvalidArgument("--data-root: " + flags->data_root + " is not a directory");
  }
  flags->data_root = fs::absolute(flags->data_root).lexically_normal().string();
  for (std::string& dir : flags->allowed_paths) {
    if (dir.empty() || !fs::is_directory(dir, ec)) {
      return InvalidArgument("--allow-path: " + dir + " is not a directory");
    }
    dir = fs::absolute(dir).lexically_normal().string();
  }
  return OkStatus();
}

void AddTaskFlags(CLI::App* app, TaskCommandOptions* options) {
  app->add_option("--coordinator", options->coordinator, "the coordinator, HOST:PORT")->required();
  app->add_option("--assignment", options->assignment_path, "the task's assignment.pb")->required();
  app->add_option("--bind", options->bind_address, "the address Gloo listens on")->required();
  app->add_option("--threads", options->threads, "intra-op threads; 0: LibTorch's default")
      ->capture_default_str();
  app->add_option("--data-root", options->data_root,
                  "job paths resolve here and must lie below it (default: the current directory)");
  app->add_option("--allow-path", options->allowed_paths,
                  "another directory job paths may name (repeatable)");
  AddCredentialFlags(app, &options->credentials);
}

Status CheckTaskFlags(const TaskCommandOptions& options) {
  GEOTRAIN_RETURN_IF_ERROR(CheckHostPort("--coordinator", options.coordinator));
  if (options.assignment_path.empty()) return InvalidArgument("--assignment: empty");
  GEOTRAIN_RETURN_IF_ERROR(auth::CheckClientCredentialFiles(options.credentials));
  if (options.threads < 0) {
    return InvalidArgument("--threads: " + std::to_string(options.threads) + " is negative");
  }
  return OkStatus();
}

}  // namespace geotrain::worker
