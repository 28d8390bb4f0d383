// CoreTest: the fixture of the tests that drive CoordinatorCore directly (coordinator_core_test,
// state_store_failure_test, worker_identity_test): real SQLite state in a temp dir, the real
// KvStore, a ManualClock starting at kStart, and RecordingSessions in place of the gRPC streams.
//
// A test that puts something around the SQLite store (a fault-injecting one) overrides WrapStore;
// one that keeps more beside the core (a CoordinatorService) extends StartCore and StopCore.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "coordinator/coordinator_core.h"
#include "coordinator/kv_store.h"
#include "coordinator/kv_store_scopes.h"
#include "tests/coordinator/coordinator_test_support.h"
#include "tests/testing/manual_clock.h"

namespace geotrain::coordinator::testing {

// The Unix time the core tests' clocks start at.
inline constexpr int64_t kStart = geotrain::testing::ManualClock::kDefaultStartUnixMs;

class CoreTest : public ::testing::Test {
 protected:
  void SetUp() override { StartCore(); }
  // Stops the core before the members a derived fixture keeps for it go.
  void TearDown() override { StopCore(); }

  // The store the core writes to, given the SQLite store under dir_ (store_).
  virtual StateStore* WrapStore(StateStore* sqlite) { return sqlite; }

  // Opens the SQLite store under dir_ and starts a core on it: heartbeats every 1 s, a worker
  // dead after 10 s, reattach_grace_ms_ to reattach.
  virtual void StartCore() {
    auto store = OpenSqliteStateStore(dir_.path());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(*store);
    scopes_ = KvStoreScopes(&kv_);
    CoordinatorOptions options;
    options.heartbeat_interval_ms = 1000;
    options.heartbeat_timeout_ms = 10000;
    options.stop_timeout_ms = 30000;
    options.reattach_grace_ms = reattach_grace_ms_;
    auto core = CoordinatorCore::Create(options, WrapStore(store_.get()), scopes_.get(), &clock_);
    ASSERT_TRUE(core.ok()) << core.status().ToString();
    core_ = std::move(*core);
  }
  // What a killed coordinator leaves behind: the state dir. Sessions die with it.
  virtual void StopCore() {
    core_.reset();
    store_.reset();
    sessions_.clear();
    session_ids_.clear();
  }
  void RestartCore() {
    StopCore();
    StartCore();
  }

  // Opens `worker_id`'s session, reporting `tasks`; on success the session is sessions_'s and
  // its id session_ids_'s.
  StatusOr<uint64_t> OpenSession(const std::string& worker_id,
                                 const std::vector<v1::TaskStatus>& tasks = {}) {
    v1::SessionHello hello;
    hello.set_worker_id(worker_id);
    for (const v1::TaskStatus& task : tasks) *hello.add_tasks() = task;
    auto session = std::make_shared<RecordingSession>();
    StatusOr<uint64_t> id = core_->OpenSession(hello, session);
    if (id.ok()) {
      sessions_[worker_id] = session;
      session_ids_[worker_id] = *id;
    }
    return id;
  }

  Status Send(const std::string& worker_id, const v1::WorkerMessage& message) {
    return core_->HandleWorkerMessage(worker_id, session_ids_[worker_id], message);
  }

  // Assignment `a`'s task in `state`.
  static v1::TaskStatus Task(const v1::Assignment& a, v1::TaskState state) {
    v1::TaskStatus task;
    task.set_job_id(a.job_id());
    task.set_generation(a.generation());
    task.set_stage(a.stage());
    task.set_replica(a.replica());
    task.set_state(state);
    return task;
  }

  // A step report of assignment `a`'s rank that took 0.5 s, without a loss.
  static v1::WorkerMessage StepReportMessage(const v1::Assignment& a, int64_t step) {
    v1::WorkerMessage message;
    v1::StepReport* report = message.mutable_steps()->add_reports();
    report->set_job_id(a.job_id());
    report->set_generation(a.generation());
    report->set_stage(a.stage());
    report->set_replica(a.replica());
    report->set_step(step);
    report->set_step_seconds(0.5);
    return message;
  }

  TempDir dir_;
  geotrain::testing::ManualClock clock_{kStart};
  KvStore kv_;
  std::unique_ptr<RendezvousScopes> scopes_;
  std::unique_ptr<StateStore> store_;  // the SQLite store
  std::unique_ptr<CoordinatorCore> core_;
  std::map<std::string, std::shared_ptr<RecordingSession>> sessions_;
  std::map<std::string, uint64_t> session_ids_;
  int64_t reattach_grace_ms_ = 10000;  // = the heartbeat timeout unless a test raises it
};

}  // namespace geotrain::coordinator::testing
