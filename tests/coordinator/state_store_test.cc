#include "coordinator/state_store.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "coordinator/sqlite_db.h"
#include "tests/coordinator/coordinator_test_support.h"

namespace geotrain::coordinator {
namespace {

using testing::TempDir;

std::unique_ptr<StateStore> Open(const std::string& dir) {
  auto store = OpenSqliteStateStore(dir);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return store.ok() ? std::move(*store) : nullptr;
}

v1::Job MakeJob(int number, v1::JobState state) {
  v1::Job job;
  job.set_id("job-" + std::to_string(number));
  job.set_name("tiny");
  job.set_state(state);
  job.set_spec_yaml("name: tiny\n");
  job.set_generation(2);
  job.mutable_progress()->set_step(41);
  v1::Placement* p = job.add_placements();
  p->set_worker_id("w-3");
  p->set_region("eu");
  return job;
}

v1::JobEvent MakeEvent(const std::string& job_id, int64_t sequence, const std::string& text) {
  v1::JobEvent event;
  event.set_job_id(job_id);
  event.set_sequence(sequence);
  event.set_unix_ms(1000 + sequence);
  event.set_text(text);
  return event;
}

TEST(StateStoreTest, EverythingSurvivesAReopen) {
  TempDir dir;
  {
    auto store = Open(dir.path());
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(*store->NextWorkerNumber(), 1u);
    EXPECT_EQ(*store->NextWorkerNumber(), 2u);
    EXPECT_EQ(*store->NextJobNumber(), 1u);

    v1::Worker worker;
    worker.set_id("w-1");
    worker.set_state(v1::WORKER_STATE_BUSY);
    worker.mutable_capabilities()->set_region("us-east1");
    ASSERT_TRUE(store->PutWorker(worker).ok());
    worker.set_state(v1::WORKER_STATE_IDLE);  // a later write replaces the record
    ASSERT_TRUE(store->PutWorker(worker).ok());

    // Inserted out of number order: the load order is submission (number) order.
    ASSERT_TRUE(store->PutJob(MakeJob(10, v1::JOB_STATE_QUEUED), {}).ok());
    ASSERT_TRUE(store
                    ->PutJob(MakeJob(9, v1::JOB_STATE_RUNNING),
                             {MakeEvent("job-9", 1, "submitted"), MakeEvent("job-9", 2, "placed")})
                    .ok());

    v1::SequencedLogLine line;
    line.set_sequence(1);
    line.mutable_line()->set_text("hello");
    line.mutable_line()->set_unix_ms(5);
    ASSERT_TRUE(store->AppendLogLines("job-9", {line}).ok());

    v1::JobStep step;
    step.set_step(1);
    step.set_generation(1);
    step.set_loss(5.0);
    ASSERT_TRUE(store->PutStep("job-9", step).ok());
    step.set_step(2);
    ASSERT_TRUE(store->PutStep("job-9", step).ok());
    // Step 2 redone by generation 2 replaces the first run's row.
    step.set_generation(2);
    step.set_loss(4.0);
    ASSERT_TRUE(store->PutStep("job-9", step).ok());
  }

  auto store = Open(dir.path());
  ASSERT_NE(store, nullptr);
  StatusOr<StoredState> state = store->Load();
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  ASSERT_EQ(state->workers.size(), 1u);
  EXPECT_EQ(state->workers[0].state(), v1::WORKER_STATE_IDLE);
  EXPECT_EQ(state->workers[0].capabilities().region(), "us-east1");
  ASSERT_EQ(state->jobs.size(), 2u);
  EXPECT_EQ(state->jobs[0].id(), "job-9");
  EXPECT_EQ(state->jobs[1].id(), "job-10");
  EXPECT_EQ(state->jobs[0].progress().step(), 41);
  EXPECT_EQ(state->jobs[0].placements(0).worker_id(), "w-3");
  EXPECT_EQ(state->last_event_sequence["job-9"], 2);
  EXPECT_EQ(state->last_log_sequence["job-9"], 1);
  EXPECT_EQ(state->last_event_sequence.count("job-10"), 0u);

  auto events = store->EventsAfter("job-9", 1, 100);
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].text(), "placed");
  auto lines = store->LogLinesAfter("job-9", 0, 100);
  ASSERT_TRUE(lines.ok());
  ASSERT_EQ(lines->size(), 1u);
  EXPECT_EQ((*lines)[0].line().text(), "hello");
  auto steps = store->StepsAfter("job-9", 0);
  ASSERT_TRUE(steps.ok());
  ASSERT_EQ(steps->size(), 2u);
  EXPECT_EQ((*steps)[1].generation(), 2u);
  EXPECT_DOUBLE_EQ((*steps)[1].loss(), 4.0);

  // Counters continue where they were: ids are never handed out twice.
  EXPECT_EQ(*store->NextWorkerNumber(), 3u);
  EXPECT_EQ(*store->NextJobNumber(), 2u);
}

TEST(StateStoreTest, NothingWrittenIsLostWhenTheProcessIsKilled) {
  TempDir dir;
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // No destructor, no checkpoint, no close: the WAL is all there is.
    auto store = OpenSqliteStateStore(dir.path());
    if (!store.ok()) _exit(3);
    if (!(*store)->NextJobNumber().ok()) _exit(4);
    if (!(*store)
             ->PutJob(MakeJob(1, v1::JOB_STATE_RUNNING), {MakeEvent("job-1", 1, "placed")})
             .ok()) {
      _exit(5);
    }
    raise(SIGKILL);
    _exit(6);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << WEXITSTATUS(status);
  ASSERT_EQ(WTERMSIG(status), SIGKILL);

  auto store = Open(dir.path());
  ASSERT_NE(store, nullptr);
  StatusOr<StoredState> state = store->Load();
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  ASSERT_EQ(state->jobs.size(), 1u);
  EXPECT_EQ(state->jobs[0].state(), v1::JOB_STATE_RUNNING);
  EXPECT_EQ(state->last_event_sequence["job-1"], 1);
  EXPECT_EQ(*store->NextJobNumber(), 2u);
}

TEST(StateStoreTest, KeepsOnlyTheNewestLogLinesOfAJob) {
  TempDir dir;
  auto store = Open(dir.path());
  ASSERT_NE(store, nullptr);
  const int64_t total = StateStore::kMaxLogLinesPerJob + 5;
  std::vector<v1::SequencedLogLine> batch;
  for (int64_t seq = 1; seq <= total; ++seq) {
    v1::SequencedLogLine line;
    line.set_sequence(seq);
    line.mutable_line()->set_text("line " + std::to_string(seq));
    batch.push_back(std::move(line));
  }
  ASSERT_TRUE(store->AppendLogLines("job-1", batch).ok());
  ASSERT_TRUE(store->AppendLogLines("job-2", {batch.front()}).ok());
  auto lines = store->LogLinesAfter("job-1", 0, 3);
  ASSERT_TRUE(lines.ok());
  ASSERT_EQ(lines->size(), 3u);
  EXPECT_EQ((*lines)[0].sequence(), 6);
  EXPECT_EQ((*lines)[0].line().text(), "line 6");
  auto all = store->LogLinesAfter("job-1", 0, 1 << 30);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(static_cast<int64_t>(all->size()), StateStore::kMaxLogLinesPerJob);
  // Another job's lines are not touched.
  EXPECT_EQ(store->LogLinesAfter("job-2", 0, 10)->size(), 1u);
}

TEST(StateStoreTest, RefusesAFileThatIsNotADatabase) {
  TempDir dir;
  std::ofstream(dir.path() + "/coordinator.db") << std::string(4096, 'x');
  auto store = OpenSqliteStateStore(dir.path());
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(store.status().message().find("coordinator.db"), std::string::npos)
      << store.status().message();
  EXPECT_NE(store.status().message().find("not a geotrain coordinator database"), std::string::npos)
      << store.status().message();
}

TEST(StateStoreTest, RefusesAnotherProgramsDatabase) {
  TempDir dir;
  {
    auto db = SqliteDb::Open(dir.path() + "/coordinator.db");
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->Exec("CREATE TABLE songs (title TEXT)").ok());
  }
  auto store = OpenSqliteStateStore(dir.path());
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("not a geotrain coordinator database"), std::string::npos)
      << store.status().message();
  EXPECT_NE(store.status().message().find("songs"), std::string::npos);
}

TEST(StateStoreTest, RefusesANewerSchema) {
  TempDir dir;
  ASSERT_NE(Open(dir.path()), nullptr);
  {
    auto db = SqliteDb::Open(dir.path() + "/coordinator.db");
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(
        (*db)->Exec("UPDATE geotrain_meta SET value = '7' WHERE key = 'schema_version'").ok());
  }
  auto store = OpenSqliteStateStore(dir.path());
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(store.status().message().find("schema version 7 is newer"), std::string::npos)
      << store.status().message();
}

TEST(StateStoreTest, OneCoordinatorPerDirectory) {
  TempDir dir;
  auto first = Open(dir.path());
  ASSERT_NE(first, nullptr);
  auto second = OpenSqliteStateStore(dir.path());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(second.status().message().find("another geotrain-coordinator"), std::string::npos);
  first.reset();
  EXPECT_NE(Open(dir.path()), nullptr);
}

TEST(StateStoreTest, CreatesTheDirectory) {
  TempDir dir;
  const std::string nested = dir.path() + "/a/b";
  EXPECT_NE(Open(nested), nullptr);
  EXPECT_TRUE(std::filesystem::exists(nested + "/coordinator.db"));
  // A file where the directory should be is a clear error.
  std::ofstream(dir.path() + "/file") << "x";
  auto store = OpenSqliteStateStore(dir.path() + "/file");
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find(dir.path() + "/file"), std::string::npos);
}

}  // namespace
}  // namespace geotrain::coordinator
