// geotrain-coordinator: the control plane's daemon. This file parses flags, wires a
// CoordinatorServer and its metrics page, and waits for SIGINT/SIGTERM. Exit codes: 0 after a
// clean shutdown, 1 when the state directory cannot be used or an address cannot be bound, 2 for
// bad flags (a non-loopback --listen without TLS and tokens and without --insecure included, and
// certificate or token files that cannot be used).
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <csignal>
#include <cstdlib>
#include <iostream>
#include <memory>

#include "common/io/host_port.h"
#include "common/metrics/metrics_endpoint.h"
#include "coordinator/coordinator_metrics.h"
#include "coordinator/server.h"

namespace {

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

int Usage(const std::string& message) {
  std::cerr << "geotrain-coordinator: " << message << "\n";
  return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  geotrain::coordinator::ServerOptions options;
  std::string log_level = "info";
  int64_t stop_timeout_seconds = 30;
  int64_t reattach_grace_seconds = 15;
  std::string metrics_listen = "0.0.0.0:9400";
  int64_t probe_interval_seconds = 300;
  geotrain::coordinator::ProbeSchedulerOptions& probes = options.coordinator.probes;

  CLI::App app{"geotrain-coordinator: plans, tracks and recovers geotrain training jobs"};
  app.add_option("--listen", options.listen_address, "HOST:PORT to serve gRPC on")
      ->capture_default_str();
  app.add_option("--state-dir", options.state_dir,
                 "directory of the SQLite state (coordinator.db); created when missing")
      ->required();
  app.add_option("--heartbeat-interval-ms", options.coordinator.heartbeat_interval_ms,
                 "how often workers send a heartbeat")
      ->capture_default_str();
  app.add_option("--heartbeat-timeout-ms", options.coordinator.heartbeat_timeout_ms,
                 "a worker silent this long is declared dead")
      ->capture_default_str();
  app.add_option("--stop-timeout-seconds", stop_timeout_seconds,
                 "how long a recovering job waits for its other ranks to stop")
      ->capture_default_str();
  app.add_option("--reattach-grace-seconds", reattach_grace_seconds,
                 "after a restart, how long known workers get to reconnect before they are dead")
      ->capture_default_str();
  app.add_option("--probe-interval", probe_interval_seconds,
                 "seconds between two active probes of the same link (0: probe only when a "
                 "worker joins)")
      ->capture_default_str();
  app.add_option("--probe-bytes", probes.max_bytes,
                 "bytes a probe sends at most per link (64 KiB to 1 GiB)")
      ->capture_default_str();
  app.add_option("--probe-timeout", probes.timeout_ms,
                 "milliseconds a probe's transfer may take at most per link")
      ->capture_default_str();
  app.add_option("--probe-streams", probes.streams,
                 "parallel TCP connections of a probe's transfer (1-64)")
      ->capture_default_str();
  app.add_option("--metrics-listen", metrics_listen,
                 "HOST:PORT to serve Prometheus /metrics on; \"\" turns it off, port 0 picks one")
      ->capture_default_str();
  geotrain::coordinator::ServerSecurityOptions& security = options.security;
  app.add_option("--tls-cert", security.tls_cert_file,
                 "the server's TLS certificate (PEM; with --tls-key: TLS on)");
  app.add_option("--tls-key", security.tls_key_file, "the server certificate's private key (PEM)");
  app.add_option("--tls-ca", security.tls_ca_file,
                 "CA of the workers' client certificates: worker calls then need one (mTLS)");
  app.add_option("--join-token-file", security.join_token_file,
                 "file with the token workers present (mode 0600, >= 32 characters)");
  app.add_option("--admin-token-file", security.admin_token_file,
                 "file with the token the CLI presents (mode 0600, >= 32 characters)");
  app.add_flag("--insecure", security.insecure,
               "allow a non-loopback --listen without TLS or tokens (anyone who reaches the port "
               "may call)");
  app.add_option("--revoked-workers", security.revoked_workers_file,
                 "file of revoked worker names and sha256: certificate fingerprints, one a line; "
                 "re-read when it changes (docs/security.md)");
  app.add_flag("--allow-shared-worker-cert", security.allow_shared_worker_cert,
               "accept worker certificates without a worker identity (an old shared worker.pem): "
               "such workers are not bound to an identity and their rendezvous is not scoped");
  app.add_option("--rendezvous-job-max-bytes", options.rendezvous.max_job_bytes,
                 "rendezvous store bytes one job may hold, over all its generations")
      ->capture_default_str();
  app.add_option("--rendezvous-job-max-keys", options.rendezvous.max_job_keys,
                 "rendezvous store keys one job may hold, over all its generations")
      ->capture_default_str();
  app.add_option("--max-registrations-per-minute", options.max_registrations_per_minute,
                 "worker registrations accepted per client host and minute (0: unlimited)")
      ->capture_default_str();
  app.add_option("--max-submissions-per-minute", options.max_submissions_per_minute,
                 "job submissions accepted per client host and minute (0: unlimited)")
      ->capture_default_str();
  app.add_option("--max-message-bytes", options.max_receive_message_bytes,
                 "largest request accepted (bytes)")
      ->capture_default_str();
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error, critical, off")
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : kExitUsage;
  }

  const spdlog::level::level_enum level = spdlog::level::from_str(log_level);
  if (level == spdlog::level::off && log_level != "off") {
    return Usage("--log-level: unknown level \"" + log_level +
                 "\" (trace, debug, info, warn, error, critical, off)");
  }
  if (options.coordinator.heartbeat_interval_ms == 0) {
    return Usage("--heartbeat-interval-ms: must be positive");
  }
  if (options.coordinator.heartbeat_timeout_ms <= options.coordinator.heartbeat_interval_ms) {
    return Usage(
        "--heartbeat-timeout-ms: " + std::to_string(options.coordinator.heartbeat_timeout_ms) +
        " must exceed --heartbeat-interval-ms (" +
        std::to_string(options.coordinator.heartbeat_interval_ms) + ")");
  }
  if (stop_timeout_seconds <= 0) return Usage("--stop-timeout-seconds: must be positive");
  if (reattach_grace_seconds < 0) return Usage("--reattach-grace-seconds: must not be negative");
  if (options.listen_address.rfind("unix:", 0) != 0) {
    if (const geotrain::Status status =
            geotrain::io::ParseHostPort(options.listen_address, "--listen").status();
        !status.ok()) {
      return Usage(status.message());
    }
  }
  if (options.rendezvous.max_job_bytes == 0 ||
      options.rendezvous.max_job_bytes > options.rendezvous.max_total_bytes) {
    return Usage("--rendezvous-job-max-bytes: " + std::to_string(options.rendezvous.max_job_bytes) +
                 " is outside 1.." + std::to_string(options.rendezvous.max_total_bytes) +
                 " (the whole store)");
  }
  if (options.rendezvous.max_job_keys == 0) {
    return Usage("--rendezvous-job-max-keys: must be positive");
  }
  if (options.max_registrations_per_minute < 0) {
    return Usage("--max-registrations-per-minute: must not be negative (0: unlimited)");
  }
  if (options.max_submissions_per_minute < 0) {
    return Usage("--max-submissions-per-minute: must not be negative (0: unlimited)");
  }
  if (options.max_receive_message_bytes < 1024) {
    return Usage("--max-message-bytes: " + std::to_string(options.max_receive_message_bytes) +
                 " is below 1024");
  }
  if (const geotrain::Status status =
          geotrain::coordinator::CheckServerSecurity(options.listen_address, security);
      !status.ok()) {
    return Usage(status.message());
  }
  // The one parser, in this flag's established wording (whatever the problem, the fix is the
  // same: HOST:PORT or "").
  if (!metrics_listen.empty() && geotrain::io::SplitHostPort(metrics_listen, 0, nullptr) !=
                                     geotrain::io::HostPortProblem::kNone) {
    return Usage("--metrics-listen: \"" + metrics_listen +
                 "\" is not HOST:PORT (\"\" turns metrics off)");
  }
  // A year: anything longer is a typo, and the product stays far from overflowing.
  if (probe_interval_seconds < 0 || probe_interval_seconds > 365LL * 24 * 3600) {
    return Usage("--probe-interval: " + std::to_string(probe_interval_seconds) +
                 " is outside [0, 31536000] seconds (0 probes only when a worker joins)");
  }
  probes.interval_ms = probe_interval_seconds * 1000;
  if (const geotrain::Status status = probes.Validate(); !status.ok()) {
    return Usage(status.message());
  }
  options.coordinator.stop_timeout_ms = stop_timeout_seconds * 1000;
  options.coordinator.reattach_grace_ms = reattach_grace_seconds * 1000;

  spdlog::set_default_logger(spdlog::stderr_color_mt("geotrain-coordinator"));
  spdlog::set_level(level);

  // Block the signals before any thread starts, so every thread inherits the mask and only the
  // sigwait below receives them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto server = geotrain::coordinator::CoordinatorServer::Start(options);
  if (!server.ok()) {
    const geotrain::Status& status = server.status();
    spdlog::error("{}", status.ToString());
    return status.code() == geotrain::StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
  }
  // After the state store opened, so a directory another coordinator holds is reported as
  // that, not as its metrics port being busy.
  std::unique_ptr<geotrain::MetricsEndpoint> metrics;
  if (!metrics_listen.empty()) {
    auto endpoint = geotrain::MetricsEndpoint::Start(metrics_listen, "--metrics-listen");
    if (!endpoint.ok()) {
      const geotrain::Status& status = endpoint.status();
      spdlog::error("{}", status.ToString());
      return status.code() == geotrain::StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
    }
    metrics = std::move(*endpoint);
  }
  // Owned here, registered weakly: they live exactly as long as main's scope.
  const auto collectable =
      std::make_shared<geotrain::coordinator::CoordinatorMetrics>(&(*server)->core());
  const auto store_health =
      std::make_shared<geotrain::coordinator::StateStoreMetrics>(&(*server)->core());
  if (metrics != nullptr) {
    metrics->Register(collectable);
    metrics->Register(store_health);
  }

  spdlog::info("listening on {} (state in {})", (*server)->address(), options.state_dir);
  if (security.tls_cert_file.empty()) {
    spdlog::warn("no TLS: {}",
                 geotrain::coordinator::IsLoopbackListenAddress(options.listen_address)
                     ? "development mode on loopback, no tokens checked"
                     : "--insecure: anyone who reaches the port may call");
  } else {
    spdlog::info("TLS on; worker client certificates {}; join token {}; admin token {}",
                 security.tls_ca_file.empty()        ? "not checked"
                 : security.allow_shared_worker_cert ? "required (shared ones without identity "
                                                       "allowed)"
                                                     : "required, each with its worker identity",
                 security.join_token_file.empty() ? "not checked" : "required",
                 security.admin_token_file.empty() ? "not checked" : "required");
  }
  // For scripts and tests: stdout carries these lines, the gRPC address first.
  std::cout << "listening on " << (*server)->address() << std::endl;
  if (metrics != nullptr) {
    spdlog::info("metrics on {}", metrics->address());
    std::cout << "metrics on " << metrics->address() << std::endl;
  } else {
    spdlog::info("metrics off (--metrics-listen \"\")");
  }

  int signal = 0;
  sigwait(&signals, &signal);
  spdlog::info("received {}; shutting down", signal == SIGINT ? "SIGINT" : "SIGTERM");
  // The metrics page reads the core: stop serving it before the core goes.
  metrics.reset();
  const std::string store_failure = (*server)->core().StateStoreFailure();
  (*server)->Shutdown();
  if (store_failure.empty()) {
    spdlog::info("state written; bye");
  } else {
    spdlog::warn(
        "the state store had failed ({}): what was acknowledged before is written, "
        "nothing after it; bye",
        store_failure);
  }
  return 0;
}
