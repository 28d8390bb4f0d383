// geotrain-worker: the worker daemon on each machine (worker/README.md). This file parses flags
// and wires the parts; `geotrain-worker task ...` is the hidden subcommand each task child runs.
// Exit codes: 0 after SIGINT/SIGTERM, 1 a local failure (worker id file, a metrics or probe
// address that cannot be bound), 2 bad flags; the task child's are in task_command.h.
#include <fcntl.h>
#include <signal.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <string.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>
#include <thread>

#include "common/metrics/metrics_endpoint.h"
#include "worker/capabilities.h"
#include "worker/link_probe_runner.h"
#include "worker/link_probe_server.h"
#include "worker/outbox.h"
#include "worker/task_command.h"
#include "worker/task_end.h"
#include "worker/task_supervisor.h"
#include "worker/wakeup.h"
#include "worker/worker_flags.h"
#include "worker/worker_metrics.h"
#include "worker/worker_session.h"

namespace {

using namespace geotrain::worker;  // NOLINT: main wires this module's parts only

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

int ParseError(const CLI::App& app, const CLI::ParseError& e) {
  return app.exit(e) == 0 ? 0 : kExitUsage;
}

int TaskMain(int argc, char** argv) {
  // No colours: the daemon reads these lines from a pipe and forwards them.
  spdlog::set_default_logger(spdlog::stderr_logger_mt("geotrain-task"));
  spdlog::set_pattern(geotrain::worker::kTaskLogPattern);
  CLI::App app{"geotrain-worker task: one training task (started by the daemon)"};
  TaskCommandOptions options;
  AddTaskFlags(&app, &options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return ParseError(app, e);
  }
  if (geotrain::Status ok = CheckTaskFlags(options); !ok.ok()) {
    spdlog::error("{}", ok.message());
    return kExitUsage;
  }
  return RunTaskCommand(options);
}

// SIGINT/SIGTERM: the first asks for an orderly shutdown, a second ends the process at once
// (the children die with it: PR_SET_PDEATHSIG). A handler, not a blocked mask and sigwait:
// libraries start threads before main, and any of them could otherwise take the signal's default
// action. The handler only writes the signal's number to a pipe the watcher thread reads.
int g_signal_pipe[2] = {-1, -1};

void OnSignal(int sig) {
  const int saved = errno;
  const unsigned char byte = static_cast<unsigned char>(sig);
  ssize_t ignored = ::write(g_signal_pipe[1], &byte, 1);
  (void)ignored;
  errno = saved;
}

class SignalWatcher {
 public:
  explicit SignalWatcher(WorkerSession* session) : session_(session) {
    if (::pipe2(g_signal_pipe, O_CLOEXEC) != 0) {
      spdlog::warn("no signal pipe ({}); SIGINT/SIGTERM will end the worker abruptly",
                   std::strerror(errno));
      return;
    }
    struct sigaction action = {};
    action.sa_handler = OnSignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    ::sigaction(SIGINT, &action, nullptr);
    ::sigaction(SIGTERM, &action, nullptr);
    thread_ = std::thread([this] { Watch(); });
  }
  ~SignalWatcher() {
    if (!thread_.joinable()) return;
    OnSignal(0);  // 0: the watcher's own "stop watching"
    thread_.join();
  }

 private:
  void Watch() {
    int received = 0;
    while (true) {
      unsigned char sig = 0;
      const ssize_t n = ::read(g_signal_pipe[0], &sig, 1);
      if (n < 0 && errno == EINTR) continue;
      if (n != 1 || sig == 0) return;
      if (++received == 1) {
        spdlog::info(
            "received SIG{}: stopping the tasks and closing the session (again to exit "
            "at once)",
            sigabbrev_np(sig));
        session_->RequestShutdown();
      } else {
        spdlog::warn("received SIG{} again: exiting now", sigabbrev_np(sig));
        std::_Exit(kExitFailure);
      }
    }
  }

  WorkerSession* const session_;
  std::thread thread_;
};

int DaemonMain(int argc, char** argv) {
  CLI::App app{"geotrain-worker: runs a coordinator's training tasks on this machine"};
  DaemonFlags flags;
  AddDaemonFlags(&app, &flags);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return ParseError(app, e);
  }
  if (geotrain::Status ok = FinishDaemonFlags(&flags); !ok.ok()) {
    std::cerr << "geotrain-worker: " << ok.message() << "\n";
    return kExitUsage;
  }
  spdlog::set_default_logger(spdlog::stderr_color_mt("geotrain-worker"));
  spdlog::set_level(spdlog::level::from_str(flags.log_level));

  // Before registering, so a scrape can already tell a worker that cannot reach its coordinator
  // (connected 0), and a busy port ends the daemon at once.
  std::unique_ptr<WorkerMetrics> metrics;
  std::unique_ptr<geotrain::MetricsEndpoint> metrics_endpoint;
  if (!flags.metrics_listen.empty()) {
    auto endpoint = geotrain::MetricsEndpoint::Start(flags.metrics_listen, "--metrics-listen");
    if (!endpoint.ok()) {
      spdlog::error("{}", endpoint.status().message());
      return kExitFailure;
    }
    metrics_endpoint = std::move(endpoint).value();
    metrics = std::make_unique<WorkerMetrics>();
    metrics_endpoint->Register(metrics->registry());
    std::cout << "metrics on " << metrics_endpoint->address() << std::endl;
    spdlog::info("metrics on {}", metrics_endpoint->address());
  } else {
    spdlog::info("metrics off (--metrics-listen is empty)");
  }

  // Peers probe this worker at --advertise's host and the port bound here.
  std::unique_ptr<LinkProbeServer> probe_server;
  if (!flags.probe_listen.empty()) {
    auto server = LinkProbeServer::Start(flags.probe_listen, "--probe-listen");
    if (!server.ok()) {
      spdlog::error("{}", server.status().message());
      return kExitFailure;
    }
    probe_server = std::move(server).value();
    std::cout << "probes on " << probe_server->address() << std::endl;
    spdlog::info("link probes answered on {}", probe_server->address());
  } else {
    spdlog::info(
        "link probes off (--probe-listen is empty): the coordinator measures this "
        "worker's links from training traffic only");
  }

  CapabilityFlags capability_flags;
  capability_flags.advertise_address = flags.advertise;
  capability_flags.region = flags.region;
  capability_flags.data_port_min = static_cast<uint32_t>(flags.port_min);
  capability_flags.data_port_max = static_cast<uint32_t>(flags.port_max);
  capability_flags.probe_port =
      probe_server != nullptr ? static_cast<uint32_t>(probe_server->port()) : 0;
  // Read here, so a missing or unreadable certificate or token ends the daemon at once; the
  // session reads the files again whenever it rebuilds its channel.
  auto credentials = geotrain::auth::MakeChannelCredentials(flags.credentials);
  if (!credentials.ok()) {
    spdlog::error("{}", credentials.status().message());
    return kExitUsage;
  }
  SessionOptions session_options;
  session_options.coordinator = flags.coordinator;
  session_options.credential_files = flags.credentials;
  session_options.work_dir = flags.work_dir;
  session_options.capabilities = DetectCapabilities(capability_flags);
  session_options.metrics = metrics.get();
  spdlog::info("coordinator {} over {}", flags.coordinator,
               !flags.credentials.ca.given()    ? "plain gRPC (no --tls-ca)"
               : flags.credentials.cert.given() ? "TLS with a client certificate"
                                                : "TLS without a client certificate");
  spdlog::info("geotrain-worker {} on {} ({}, {} CPUs), work dir {}, data root {}", WorkerVersion(),
               session_options.capabilities.host(), session_options.capabilities.device_kind(),
               session_options.capabilities.cpu_count(), flags.work_dir, flags.data_root);
  for (const std::string& dir : flags.allowed_paths) {
    spdlog::info("job paths may also name {} (--allow-path)", dir);
  }

  SupervisorOptions supervisor_options;
  supervisor_options.coordinator = flags.coordinator;
  supervisor_options.credential_files = flags.credentials;
  supervisor_options.advertise = flags.advertise;
  supervisor_options.work_dir = flags.work_dir;
  supervisor_options.metrics = metrics.get();
  supervisor_options.data_root = flags.data_root;
  supervisor_options.allowed_paths = flags.allowed_paths;
  supervisor_options.threads = flags.threads;
  supervisor_options.stop_grace =
      std::chrono::milliseconds(static_cast<int64_t>(flags.stop_grace_seconds * 1000));

  Wakeup wakeup;
  Outbox outbox(OutboxLimits{}, [&wakeup] { wakeup.Notify(); });
  TaskSupervisor supervisor(supervisor_options, &outbox, [&wakeup] { wakeup.Notify(); });
  // Declared after the wakeup and before the session: destroyed (its probe cancelled and its
  // thread joined) once the session has returned.
  LinkProbeRunner probes(LinkProbeRunnerOptions{}, [&wakeup] { wakeup.Notify(); });
  session_options.probes = &probes;
  WorkerSession session(session_options, &supervisor, &outbox, &wakeup);
  SignalWatcher watcher(&session);
  const geotrain::Status status = session.Run();
  if (!status.ok()) {
    spdlog::error("{}", status.message());
    return kExitFailure;
  }
  spdlog::info("stopped");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "task") == 0) return TaskMain(argc - 1, argv + 1);
  return DaemonMain(argc, argv);
}
