#include "worker/worker_session.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

#include "common/clock.h"
#include "worker/coordinator_channel.h"
#include "worker/worker_identity.h"

namespace geotrain::worker {
namespace {

using Clock = std::chrono::steady_clock;
using Stream =
    grpc::ClientReaderWriter<geotrain::v1::WorkerMessage, geotrain::v1::CoordinatorMessage>;

// Attempts between reminders that the coordinator is still unreachable (about a minute at the
// back-off's 5 s ceiling); the attempts in between log at debug level.
constexpr int kReminderEvery = 12;

}  // namespace

WorkerSession::WorkerSession(SessionOptions options, TaskSupervisor* supervisor, Outbox* outbox,
                             Wakeup* wakeup)
    : options_(std::move(options)), supervisor_(supervisor), outbox_(outbox), wakeup_(wakeup) {
  RebuildChannel("");
}

void WorkerSession::RebuildChannel(const std::string& why) {
  StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      auth::MakeChannelCredentials(options_.credential_files);
  if (!credentials.ok()) {
    if (stub_ == nullptr) {
      // No channel yet (main.cc checked the files a moment ago): a channel that fails every call
      // says so at each attempt, and the next rebuild reads the files again.
      spdlog::error("{}; retrying", credentials.status().message());
      channel_ = CoordinatorChannel(options_.coordinator, grpc::InsecureChannelCredentials());
      stub_ = geotrain::v1::Coordinator::NewStub(channel_);
    } else {
      spdlog::warn("keeping the channel to the coordinator at {}: {}", options_.coordinator,
                   credentials.status().message());
    }
    return;
  }
  channel_ = CoordinatorChannel(options_.coordinator, *std::move(credentials));
  stub_ = geotrain::v1::Coordinator::NewStub(channel_);
  if (++channel_builds_ > 1) {
    spdlog::info("new channel to the coordinator at {} ({}; credential files read again)",
                 options_.coordinator, why);
  }
}

void WorkerSession::RequestShutdown() {
  shutdown_ = true;
  {
    std::lock_guard<std::mutex> lock(register_mu_);
    if (register_call_ != nullptr) register_call_->TryCancel();
  }
  wakeup_->Notify();
}

Status WorkerSession::Run() {
  GEOTRAIN_ASSIGN_OR_RETURN(worker_id_, LoadWorkerId(WorkerIdPath(options_.work_dir)));
  if (!worker_id_.empty()) supervisor_->SetWorkerId(worker_id_);
  Backoff backoff(options_.backoff);
  int failures = 0;
  bool connected_since_rebuild = false;  // a session was up on the current channel
  const int rebuild_every = std::max(1, options_.rebuild_every);
  while (!shutdown_) {
    StatusOr<geotrain::v1::RegisterResponse> registered = Register();
    if (!registered.ok()) {
      if (shutdown_) break;  // the call was cancelled
      const std::chrono::milliseconds delay = backoff.Next();
      ++failures;
      if (connected_since_rebuild || failures % rebuild_every == 0) {
        RebuildChannel(connected_since_rebuild
                           ? std::string("the first registration since the session ended failed")
                           : std::to_string(failures) + " registrations in a row failed");
        connected_since_rebuild = false;
      }
      const auto level = failures == 1 || failures % kReminderEvery == 0 ? spdlog::level::warn
                                                                         : spdlog::level::debug;
      spdlog::log(level, "{} (attempt {}); trying again in {} ms", registered.status().message(),
                  failures, delay.count());
      Pause(delay);
      continue;
    }
    failures = 0;
    std::chrono::milliseconds heartbeat(registered->heartbeat_interval_ms());
    if (heartbeat.count() == 0) {
      spdlog::warn("the coordinator named no heartbeat interval; sending one every {} ms",
                   options_.default_heartbeat.count());
      heartbeat = options_.default_heartbeat;
    }
    if (RunSession(heartbeat)) {
      backoff.Reset();
      connected_since_rebuild = true;
    }
    if (!shutdown_) Pause(backoff.Next());
  }
  StopTasksOffline();
  supervisor_->ReapEnded();
  return OkStatus();
}

StatusOr<geotrain::v1::RegisterResponse> WorkerSession::Register() {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + options_.register_timeout);
  WaitForReady(context);
  geotrain::v1::RegisterRequest request;
  request.set_worker_id(worker_id_);
  *request.mutable_capabilities() = options_.capabilities;
  geotrain::v1::RegisterResponse response;
  {
    std::lock_guard<std::mutex> lock(register_mu_);
    if (shutdown_) return Unavailable("shutting down");
    register_call_ = &context;
  }
  const grpc::Status status = stub_->Register(&context, request, &response);
  {
    std::lock_guard<std::mutex> lock(register_mu_);
    register_call_ = nullptr;
  }
  if (!status.ok()) {
    if (status.error_code() == grpc::StatusCode::NOT_FOUND && !worker_id_.empty()) {
      // The coordinator lost its record of us (a new state directory): become a new worker
      // rather than knock on the same door forever.
      spdlog::warn("the coordinator does not know worker id {} ({}); registering as a new worker",
                   worker_id_, status.error_message());
      worker_id_.clear();
    }
    if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED &&
        channel_->GetState(false) != GRPC_CHANNEL_READY) {
      return Unavailable("registering with the coordinator at " + options_.coordinator +
                         ": no connection within " +
                         std::to_string(options_.register_timeout.count()) +
                         " ms (down, unreachable, or the TLS handshake failed)");
    }
    return Unavailable("registering with the coordinator at " + options_.coordinator + ": " +
                       DescribeRpcError(status));
  }
  if (!IsValidWorkerId(response.worker_id())) {
    return Unavailable("the coordinator at " + options_.coordinator +
                       " answered the registration with an invalid worker id \"" +
                       response.worker_id() + "\"");
  }
  if (response.worker_id() != worker_id_) {
    if (!worker_id_.empty()) {
      spdlog::warn("the coordinator replaced worker id {} with {}", worker_id_,
                   response.worker_id());
    }
    const std::string path = WorkerIdPath(options_.work_dir);
    if (Status saved = SaveWorkerId(path, response.worker_id()); !saved.ok()) {
      // Not fatal: the id is known for this daemon's life; the next registration tries again.
      spdlog::error("{}; a restarted daemon would register as a new worker", saved.message());
    }
    worker_id_ = response.worker_id();
  }
  supervisor_->SetWorkerId(worker_id_);
  if (options_.metrics != nullptr) {
    options_.metrics->SetIdentity(worker_id_, options_.capabilities.region(),
                                  DeviceLabel(options_.capabilities.device_kind()));
  }
  spdlog::info("registered with the coordinator at {} as worker {} (heartbeat every {} ms)",
               options_.coordinator, worker_id_, response.heartbeat_interval_ms());
  return response;
}

bool WorkerSession::RunSession(std::chrono::milliseconds heartbeat_interval) {
  grpc::ClientContext context;
  std::unique_ptr<Stream> stream = stub_->Session(&context);
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    inbox_.clear();
    reader_done_ = false;
  }
  geotrain::v1::WorkerMessage hello;
  *hello.mutable_hello() = supervisor_->Hello();
  const int tasks = hello.hello().tasks_size();
  if (!stream->Write(hello)) {
    context.TryCancel();
    geotrain::v1::CoordinatorMessage ignored;
    while (stream->Read(&ignored)) {
    }
    spdlog::warn("opening the session with the coordinator at {} failed: {}", options_.coordinator,
                 DescribeRpcError(stream->Finish()));
    return false;
  }
  spdlog::info("session open ({} task(s) reported in the hello)", tasks);
  if (options_.metrics != nullptr) options_.metrics->SetConnected(true);

  std::thread reader([this, &stream] {
    geotrain::v1::CoordinatorMessage message;
    while (stream->Read(&message)) {
      {
        std::lock_guard<std::mutex> lock(inbox_mu_);
        inbox_.push_back(std::move(message));
      }
      wakeup_->Notify();
      message.Clear();
    }
    {
      std::lock_guard<std::mutex> lock(inbox_mu_);
      reader_done_ = true;
    }
    wakeup_->Notify();
  });

  bool healthy = false;  // a heartbeat went through after the hello
  bool broken = false;
  bool stopping = false;
  Clock::time_point next_heartbeat = Clock::now() + heartbeat_interval;
  while (true) {
    std::deque<geotrain::v1::CoordinatorMessage> orders;
    bool reader_done;
    {
      std::lock_guard<std::mutex> lock(inbox_mu_);
      orders.swap(inbox_);
      reader_done = reader_done_;
    }
    for (const geotrain::v1::CoordinatorMessage& order : orders) {
      if (order.body_case() != geotrain::v1::CoordinatorMessage::kProbe) {
        supervisor_->Handle(order);
      } else if (options_.probes != nullptr) {
        options_.probes->Submit(order.probe());
      } else {
        spdlog::warn("ignoring a link probe order: this worker runs no probe runner");
      }
    }
    supervisor_->ReapEnded();
    if (shutdown_ && !stopping) {
      spdlog::info("shutting down: stopping the tasks");
      supervisor_->StopAll();
      stopping = true;
    }

    const Clock::time_point now = Clock::now();
    const bool heartbeat_due = now >= next_heartbeat;
    if (heartbeat_due) {
      geotrain::v1::WorkerMessage beat;
      beat.mutable_heartbeat()->set_unix_ms(RealClock().NowUnixMs());
      if (!stream->Write(beat)) {
        broken = true;
        break;
      }
      healthy = true;
      next_heartbeat = now + heartbeat_interval;
    }
    if (!SendProbeResults(stream.get())) {
      broken = true;
      break;
    }
    const bool tasks_done = stopping && !supervisor_->AnyActive();
    if (heartbeat_due || tasks_done || outbox_->Urgent()) {
      if (!Flush(stream.get())) {
        broken = true;
        break;
      }
    }
    if (reader_done) {
      broken = true;
      break;
    }
    if (tasks_done && outbox_->Empty()) break;
    wakeup_->WaitUntil(next_heartbeat);
  }

  if (!broken) {
    // Shutdown with every stop reported: close our side and let the coordinator end the call.
    stream->WritesDone();
    const Clock::time_point deadline = Clock::now() + options_.close_timeout;
    while (Clock::now() < deadline) {
      {
        std::lock_guard<std::mutex> lock(inbox_mu_);
        if (reader_done_) break;
      }
      wakeup_->WaitUntil(deadline);
    }
  }
  if (options_.metrics != nullptr) options_.metrics->SetConnected(false);
  context.TryCancel();
  reader.join();
  const grpc::Status status = stream->Finish();
  if (broken && !shutdown_) {
    spdlog::warn(
        "session with the coordinator at {} ended ({}); the tasks keep running, "
        "reconnecting",
        options_.coordinator, DescribeRpcError(status));
  } else if (!broken) {
    spdlog::info("session closed");
  }
  return healthy;
}

bool WorkerSession::Flush(Stream* stream) {
  // Bounded rounds: children that print faster than the link carries cannot keep us here.
  constexpr int kMaxRounds = 64;
  for (int round = 0; round < kMaxRounds; ++round) {
    const std::vector<Outbox::Message> messages = outbox_->Peek(16);
    if (messages.empty()) break;
    for (const Outbox::Message& message : messages) {
      if (!stream->Write(message.message)) return false;
      outbox_->Commit(message.through);
    }
  }
  const Outbox::Dropped dropped = outbox_->TakeDropped();
  if (dropped.steps > 0 || dropped.logs > 0) {
    spdlog::warn(
        "dropped {} step report(s) and {} log line(s) the coordinator could not take in "
        "time (the newest were kept)",
        dropped.steps, dropped.logs);
  }
  return true;
}

bool WorkerSession::SendProbeResults(Stream* stream) {
  if (options_.probes == nullptr) return true;
  for (geotrain::v1::ProbeResults& results : options_.probes->TakeResults()) {
    geotrain::v1::WorkerMessage message;
    *message.mutable_probes() = std::move(results);
    if (!stream->Write(message)) {
      // Measurements go stale: the coordinator orders new ones rather than wait for these.
      spdlog::debug("the results of a link probe order were lost with the session");
      return false;
    }
  }
  return true;
}

void WorkerSession::StopTasksOffline() {
  if (!supervisor_->AnyActive()) return;
  spdlog::info("stopping the tasks (no session, so their end goes unreported)");
  supervisor_->StopAll();
  while (supervisor_->AnyActive()) {
    wakeup_->WaitUntil(Clock::now() + std::chrono::milliseconds(200));
    supervisor_->ReapEnded();
  }
}

void WorkerSession::Pause(std::chrono::milliseconds delay) {
  const Clock::time_point deadline = Clock::now() + delay;
  while (!shutdown_ && Clock::now() < deadline) {
    wakeup_->WaitUntil(deadline);
    supervisor_->ReapEnded();
  }
}

}  // namespace geotrain::worker
