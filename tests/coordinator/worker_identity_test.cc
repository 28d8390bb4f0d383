// Per-worker identity in the coordinator core (docs/security.md): worker ids bound to the
// identity that registered them, one live session per worker, and rendezvous scopes open only
// to the identities of the job's placed workers. Real SQLite state, the real KvStore, a
// ManualClock and recording sessions.
#include <gtest/gtest.h>

#include "coordinator/coordinator_core.h"
#include "coordinator/kv_store.h"
#include "coordinator/kv_store_scopes.h"
#include "tests/coordinator/coordinator_test_support.h"
#include "tests/coordinator/core_test_fixture.h"
#include "tests/testing/manual_clock.h"

namespace geotrain::coordinator {
namespace {

using testing::CoreTest;
using testing::RecordingSession;
using testing::TinyJobYaml;

CallerIdentity Identity(const std::string& name) { return {true, name}; }

// The core of CoreTest (core_test_fixture.h), called by workers with certificate identities.
class WorkerIdentityTest : public CoreTest {
 protected:
  StatusOr<v1::RegisterResponse> Register(const CallerIdentity& caller, const std::string& id) {
    v1::RegisterRequest request;
    request.set_worker_id(id);
    request.mutable_capabilities()->set_region("eu");
    return core_->Register(request, caller);
  }

  StatusOr<uint64_t> Open(const CallerIdentity& caller, const std::string& id,
                          std::shared_ptr<RecordingSession>* sink = nullptr) {
    v1::SessionHello hello;
    hello.set_worker_id(id);
    auto session = std::make_shared<RecordingSession>();
    if (sink != nullptr) *sink = session;
    return core_->OpenSession(hello, session, caller);
  }

  // Registers and connects worker `name`; returns its id.
  std::string Join(const std::string& name, std::shared_ptr<RecordingSession>* sink) {
    auto registered = Register(Identity(name), "");
    EXPECT_TRUE(registered.ok()) << registered.status().ToString();
    auto session = Open(Identity(name), registered->worker_id(), sink);
    EXPECT_TRUE(session.ok()) << session.status().ToString();
    return registered->worker_id();
  }
};

TEST_F(WorkerIdentityTest, AnotherIdentityCannotClaimABoundWorkerEvenAfterARestart) {
  std::shared_ptr<RecordingSession> real;
  const std::string id = Join("alice", &real);
  for (int restart = 0; restart < 2; ++restart) {
    auto stolen = Register(Identity("mallory"), id);
    ASSERT_FALSE(stolen.ok());
    EXPECT_EQ(stolen.status().code(), StatusCode::kPermissionDenied) << stolen.status().ToString();
    EXPECT_NE(stolen.status().message().find("worker " + id + " is bound to another identity"),
              std::string::npos)
        << stolen.status().message();
    // Silence long enough that a takeover would be allowed for the right identity.
    clock_.AdvanceMs(5000);
    auto session = Open(Identity("mallory"), id);
    ASSERT_FALSE(session.ok());
    EXPECT_EQ(session.status().code(), StatusCode::kPermissionDenied)
        << session.status().ToString();
    // Without any certificate (a shared-certificate or development caller) neither.
    EXPECT_FALSE(Open(CallerIdentity{}, id).ok());
    if (restart == 0) EXPECT_FALSE(real->closed());
    // The binding is on record: a restarted coordinator keeps it.
    RestartCore();
  }
  // The worker itself comes back.
  auto again = Register(Identity("alice"), id);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->worker_id(), id);
  EXPECT_TRUE(Open(Identity("alice"), id).ok());
}

TEST_F(WorkerIdentityTest, ALiveSessionIsNotTakenOverButABrokenOneIs) {
  std::shared_ptr<RecordingSession> first;
  const std::string id = Join("alice", &first);
  clock_.AdvanceMs(500);
  auto second = Open(Identity("alice"), id);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(second.status().message().find("already has a live session"), std::string::npos)
      << second.status().message();
  EXPECT_FALSE(first->closed());
  // Two heartbeat intervals of silence: the old connection is taken for broken.
  clock_.AdvanceMs(1600);
  // The daemon registers again before each session; that is no sign of the old stream's life.
  ASSERT_TRUE(Register(Identity("alice"), id).ok());
  auto third = Open(Identity("alice"), id);
  ASSERT_TRUE(third.ok()) << third.status().ToString();
  EXPECT_TRUE(first->closed());
  EXPECT_FALSE(Open(Identity("alice"), id).ok());
  // A stream that closed frees the worker at once.
  core_->CloseSession(id, *third);
  EXPECT_TRUE(Open(Identity("alice"), id).ok());
}

TEST_F(WorkerIdentityTest, DevelopmentCallersKeepTheOldRules) {
  auto registered = Register(CallerIdentity{}, "");
  ASSERT_TRUE(registered.ok());
  const std::string id = registered->worker_id();
  ASSERT_TRUE(Open(CallerIdentity{}, id).ok());
  EXPECT_TRUE(Open(CallerIdentity{}, id).ok());  // replaces, as before identities
  EXPECT_TRUE(core_->AuthorizeRendezvous(CallerIdentity{}, "job-9", 4).ok());
  // A worker registered without identity is bound to the first identity that registers it.
  auto adopted = Register(Identity("alice"), id);
  ASSERT_TRUE(adopted.ok()) << adopted.status().ToString();
  EXPECT_FALSE(Register(Identity("bob"), id).ok());
}

TEST_F(WorkerIdentityTest, RendezvousScopesAreOpenOnlyToThePlacedWorkersLiveGeneration) {
  std::shared_ptr<RecordingSession> a, b;
  const std::string wa = Join("alice", &a);
  const std::string wb = Join("bob", &b);
  v1::SubmitJobRequest request;
  request.set_spec_yaml(TinyJobYaml(1, 1));
  auto job = core_->SubmitJob(request);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  core_->Tick();
  std::string placed, spare;
  for (const auto& [name, sink] : {std::pair{"alice", a}, std::pair{"bob", b}}) {
    bool assigned = false;
    for (const v1::CoordinatorMessage& m : sink->Take()) {
      if (m.has_assign()) {
        assigned = true;
        // The frame key goes with the assignment, to the placed worker only.
        EXPECT_EQ(m.assign().frame_key().size(), 32u);
      }
    }
    (assigned ? placed : spare) = name;
  }
  ASSERT_FALSE(placed.empty());
  ASSERT_FALSE(spare.empty());
  EXPECT_TRUE(core_->AuthorizeRendezvous(Identity(placed), job->id(), 1).ok());
  for (const auto& [who, generation] :
       {std::pair{spare, 1u}, std::pair{placed, 2u}, std::pair{placed, 0u}}) {
    const Status refused = core_->AuthorizeRendezvous(Identity(who), job->id(), generation);
    EXPECT_EQ(refused.code(), StatusCode::kPermissionDenied) << who << " " << generation;
    EXPECT_NE(refused.message().find("rendezvous scope job '" + job->id() + "' generation " +
                                     std::to_string(generation)),
              std::string::npos)
        << refused.message();
  }
  // A job not submitted yet (ids are sequential) is nobody's.
  EXPECT_FALSE(core_->AuthorizeRendezvous(Identity(placed), "job-2", 1).ok());
  // Once the job is cancelled, its scope closes.
  ASSERT_TRUE(core_->CancelJob(job->id()).ok());
  core_->Tick();
  EXPECT_FALSE(core_->AuthorizeRendezvous(Identity(placed), job->id(), 1).ok());
}

}  // namespace
}  // namespace geotrain::coordinator
