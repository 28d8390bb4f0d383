// The job's data-plane frame key: generated at submission, sent in every Assignment, stored
// apart from the Job record (never returned by the API), kept across restarts, and generated for
// jobs of databases that predate keys.
#include "coordinator/frame_key.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "coordinator/coordinator_core.h"
#include "coordinator/kv_store.h"
#include "coordinator/kv_store_scopes.h"
#include "coordinator/sqlite_db.h"
#include "coordinator/state_store.h"
#include "tests/coordinator/coordinator_test_support.h"
#include "tests/testing/manual_clock.h"

namespace geotrain::coordinator {
namespace {

using geotrain::testing::ManualClock;
using testing::RecordingSession;
using testing::TempDir;
using testing::TinyJobYaml;

class FrameKeyTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(); }

  void Start() {
    auto store = OpenSqliteStateStore(dir_.path());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(*store);
    scopes_ = KvStoreScopes(&kv_);
    auto core = CoordinatorCore::Create(CoordinatorOptions(), store_.get(), scopes_.get(), &clock_);
    ASSERT_TRUE(core.ok()) << core.status().ToString();
    core_ = std::move(*core);
  }

  void Stop() {
    core_.reset();
    store_.reset();
  }

  std::string Submit(int stages) {
    v1::SubmitJobRequest request;
    request.set_spec_yaml(TinyJobYaml(stages, 1));
    auto job = core_->SubmitJob(request);
    EXPECT_TRUE(job.ok()) << job.status().ToString();
    return job.ok() ? job->id() : "";
  }

  // Connects `n` workers and returns what each is assigned by the next Tick.
  std::vector<v1::Assignment> PlaceOnNewWorkers(int n) {
    std::vector<std::shared_ptr<RecordingSession>> sessions;
    for (int i = 0; i < n; ++i) {
      v1::RegisterRequest request;
      request.mutable_capabilities()->set_region("us");
      request.mutable_capabilities()->set_host("host");
      auto registered = core_->Register(request);
      EXPECT_TRUE(registered.ok()) << registered.status().ToString();
      v1::SessionHello hello;
      hello.set_worker_id(registered->worker_id());
      sessions.push_back(std::make_shared<RecordingSession>());
      EXPECT_TRUE(core_->OpenSession(hello, sessions.back()).ok());
    }
    core_->Tick();
    std::vector<v1::Assignment> assignments;
    for (auto& session : sessions) {
      for (const v1::CoordinatorMessage& m : session->Take()) {
        if (m.has_assign()) assignments.push_back(m.assign());
      }
    }
    return assignments;
  }

  std::map<std::string, std::string> StoredKeys() {
    auto state = store_->Load();
    EXPECT_TRUE(state.ok()) << state.status().ToString();
    return state.ok() ? state->frame_keys : std::map<std::string, std::string>{};
  }

  TempDir dir_;
  ManualClock clock_{1'700'000'000'000};
  KvStore kv_;
  std::unique_ptr<RendezvousScopes> scopes_;
  std::unique_ptr<StateStore> store_;
  std::unique_ptr<CoordinatorCore> core_;
};

TEST(NewFrameKeyTest, KeysAreThirtyTwoFreshBytes) {
  std::set<std::string> keys;
  for (int i = 0; i < 16; ++i) {
    auto key = NewFrameKey();
    ASSERT_TRUE(key.ok()) << key.status().ToString();
    EXPECT_EQ(key->size(), kFrameKeyBytes);
    keys.insert(*key);
  }
  EXPECT_EQ(keys.size(), 16u);
}

TEST_F(FrameKeyTest, EveryRankOfAJobGetsTheJobsKeyAndNoApiShowsIt) {
  const std::string first = Submit(2);
  const std::string second = Submit(1);
  const std::map<std::string, std::string> keys = StoredKeys();
  ASSERT_EQ(keys.size(), 2u);
  ASSERT_EQ(keys.at(first).size(), 32u);
  EXPECT_NE(keys.at(first), keys.at(second));

  const std::vector<v1::Assignment> assignments = PlaceOnNewWorkers(3);
  ASSERT_EQ(assignments.size(), 3u);
  for (const v1::Assignment& a : assignments) {
    EXPECT_EQ(a.frame_key(), keys.at(a.job_id())) << a.job_id() << " stage " << a.stage();
  }
  // Nothing that returns a Job carries the key, in any field.
  for (const std::string& id : {first, second}) {
    auto job = core_->GetJob(id);
    ASSERT_TRUE(job.ok());
    EXPECT_EQ(job->SerializeAsString().find(keys.at(id)), std::string::npos);
    EXPECT_EQ(job->DebugString().find(keys.at(id)), std::string::npos);
  }
  for (const v1::Job& job : core_->ListJobs(true)) {
    EXPECT_EQ(job.SerializeAsString().find(keys.at(job.id())), std::string::npos);
  }
}

TEST_F(FrameKeyTest, TheKeySurvivesARestart) {
  const std::string id = Submit(1);
  const std::string key = StoredKeys().at(id);
  Stop();
  Start();
  EXPECT_EQ(StoredKeys().at(id), key);
  const std::vector<v1::Assignment> assignments = PlaceOnNewWorkers(1);
  ASSERT_EQ(assignments.size(), 1u);
  EXPECT_EQ(assignments[0].frame_key(), key);
}

TEST_F(FrameKeyTest, AJobOfAnOlderDatabaseGetsAKeyThatIsSaved) {
  const std::string id = Submit(1);
  Stop();
  {
    // What a database written before keys existed looks like.
    auto db = SqliteDb::Open(dir_.path() + "/coordinator.db");
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    ASSERT_TRUE((*db)->Exec("DROP TABLE job_keys").ok());
  }
  Start();
  const std::map<std::string, std::string> keys = StoredKeys();
  ASSERT_EQ(keys.count(id), 1u);
  EXPECT_EQ(keys.at(id).size(), 32u);
  Stop();
  Start();
  EXPECT_EQ(StoredKeys().at(id), keys.at(id));
  const std::vector<v1::Assignment> assignments = PlaceOnNewWorkers(1);
  ASSERT_EQ(assignments.size(), 1u);
  EXPECT_EQ(assignments[0].frame_key(), keys.at(id));
}

// Issue 20: a key must not outlive its job. Ending it (here: cancelling, which shares the end
// path with success and failure) deletes the stored key; a key an older coordinator left for an
// ended job is deleted at the next start.
TEST_F(FrameKeyTest, TheKeyOfAnEndedJobIsDeleted) {
  const std::string placed = Submit(1);
  const std::string queued = Submit(1);
  const std::string kept = Submit(1);
  ASSERT_EQ(PlaceOnNewWorkers(1).size(), 1u);  // `placed` runs, the others wait
  const std::string kept_key = StoredKeys().at(kept);
  ASSERT_TRUE(core_->CancelJob(placed).ok());
  ASSERT_TRUE(core_->CancelJob(queued).ok());
  std::map<std::string, std::string> keys = StoredKeys();
  EXPECT_EQ(keys.count(placed), 0u);
  EXPECT_EQ(keys.count(queued), 0u);
  EXPECT_EQ(keys.at(kept), kept_key);

  // A key left behind for an ended job (written before this rule, or a delete that failed).
  ASSERT_TRUE(store_->PutFrameKey(placed, std::string(32, 'k')).ok());
  Stop();
  Start();
  keys = StoredKeys();
  EXPECT_EQ(keys.count(placed), 0u);
  EXPECT_EQ(keys.count(queued), 0u);
  EXPECT_EQ(keys.at(kept), kept_key);
}

}  // namespace
}  // namespace geotrain::coordinator
