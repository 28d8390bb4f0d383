// WorkerSession: the daemon's link to the coordinator and its main loop. Registers (presenting
// the id kept in WORK_DIR/worker-id), opens the Session stream, says hello with every task it
// knows, then sends a heartbeat every heartbeat_interval_ms and delivers the Outbox (statuses at
// once, step reports and log lines at each heartbeat or when a batch is full), and hands every
// order that comes down to the TaskSupervisor, but ProbeOrders, which go to the LinkProbeRunner;
// the probes' results go back up as WorkerMessage{probes} as soon as each order is done.
//
// When the stream breaks (coordinator down or restarting) the tasks keep running and the outbox
// keeps filling (bounded); the loop re-registers with the same id and reopens the session with
// exponential back-off and jitter (200 ms doubling to 5 s). It never gives up: an unreachable
// coordinator is not a reason to stop training.
//
// Each Register waits for a connection (wait_for_ready, up to register_timeout), so the loop's
// thread drives the TLS handshake instead of failing at once while gRPC backs off
// (coordinator_channel.h says why that matters). The channel is rebuilt, its credential files
// read again (so rotated certificates and tokens are picked up), at the first failed
// registration after a session had been up and after every rebuild_every failures in a row; a
// rebuild that cannot read the files keeps the old channel and says why.
//
// Threads: Run() is the main loop, on the thread that must outlive the tasks (it forks them via
// the supervisor). While a session is open a reader thread receives CoordinatorMessages and
// queues them for the main loop. Everything else (task monitors, the probe runner, signal
// handling) reaches the loop through the Wakeup. RequestShutdown may be called from any thread.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <string>

#include "common/auth/channel_credentials.h"
#include "common/backoff.h"
#include "common/status.h"
#include "geotrain/v1/coordinator.grpc.pb.h"
#include "worker/link_probe_runner.h"
#include "worker/outbox.h"
#include "worker/task_supervisor.h"
#include "worker/wakeup.h"
#include "worker/worker_metrics.h"

namespace geotrain::worker {

struct SessionOptions {
  std::string coordinator;  // HOST:PORT
  // TLS and the join token (auth::MakeChannelCredentials), read at each channel rebuild; none
  // given: insecure.
  auth::ClientCredentialFiles credential_files;
  std::string work_dir;  // holds worker-id
  geotrain::v1::WorkerCapabilities capabilities;
  BackoffOptions backoff;  // between attempts to register / open the session
  std::chrono::milliseconds register_timeout{10000};  // one Register call, connecting included
  // Failed registrations in a row after which the channel is rebuilt (>= 1).
  int rebuild_every = 3;
  // After closing our side at shutdown, how long the coordinator may take to end the stream.
  std::chrono::milliseconds close_timeout{2000};
  // Used when the coordinator's RegisterResponse names no heartbeat interval.
  std::chrono::milliseconds default_heartbeat{1000};
  // Told the worker's identity after each registration and whether a session is up; null: no
  // metrics. Must outlive the session.
  WorkerMetrics* metrics = nullptr;
  // Runs the coordinator's ProbeOrders; must notify the session's Wakeup when results are ready
  // and outlive the session. Null: probe orders are ignored (logged).
  LinkProbeRunner* probes = nullptr;
};

class WorkerSession {
 public:
  // `supervisor`, `outbox` and `wakeup` must outlive the session; the supervisor and outbox must
  // notify `wakeup` when a task ends or something urgent is queued.
  WorkerSession(SessionOptions options, TaskSupervisor* supervisor, Outbox* outbox, Wakeup* wakeup);

  // Runs until RequestShutdown: then stops every task, reports the stops if a session is up,
  // closes it and returns OK. Returns an error only for a local problem that retrying cannot
  // fix: an unreadable or corrupt worker id file.
  Status Run();

  void RequestShutdown();

 private:
  // A new channel and stub from the credential files as they are now; keeps the old ones (and
  // logs why) when the files cannot be read.
  void RebuildChannel(const std::string& why);
  // Registers; on success stores the id and hands it to the supervisor.
  StatusOr<geotrain::v1::RegisterResponse> Register();
  // One session, from hello to the stream's end. Returns whether the hello went through.
  bool RunSession(std::chrono::milliseconds heartbeat_interval);
  // Writes what the outbox holds; false when the stream broke.
  bool Flush(grpc::ClientReaderWriter<geotrain::v1::WorkerMessage,
                                      geotrain::v1::CoordinatorMessage>* stream);
  // Sends the results of every finished probe order; false when the stream broke.
  bool SendProbeResults(grpc::ClientReaderWriter<geotrain::v1::WorkerMessage,
                                                 geotrain::v1::CoordinatorMessage>* stream);
  // Shutdown while no session is up: stop the tasks and wait for them, reporting nothing.
  void StopTasksOffline();
  // Sleeps `delay` (or until shutdown), reaping ended tasks on the way.
  void Pause(std::chrono::milliseconds delay);

  const SessionOptions options_;
  TaskSupervisor* const supervisor_;
  Outbox* const outbox_;
  Wakeup* const wakeup_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<geotrain::v1::Coordinator::Stub> stub_;
  int channel_builds_ = 0;
  std::string worker_id_;
  std::atomic<bool> shutdown_{false};
  // The Register call in flight, cancelled by RequestShutdown (it may wait register_timeout for
  // a connection).
  std::mutex register_mu_;
  grpc::ClientContext* register_call_ = nullptr;

  // Filled by the reader thread, drained by the main loop.
  std::mutex inbox_mu_;
  std::deque<geotrain::v1::CoordinatorMessage> inbox_;
  bool reader_done_ = false;
};

}  // namespace geotrain::worker
