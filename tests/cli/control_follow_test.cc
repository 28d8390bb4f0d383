// FollowJob against a scripted JobUpdateSource: resuming after breaks, back-off, giving up.
#include "cli/control_follow.h"

#include <gtest/gtest.h>

#include <deque>
#include <vector>

#include "tests/testing/manual_clock.h"

namespace geotrain::cli {
namespace {

// Time moves only when FollowJob sleeps.
using geotrain::testing::ManualClock;

v1::JobUpdate JobUpdate(v1::JobState state, int64_t step) {
  v1::JobUpdate update;
  update.mutable_job()->set_id("job-1");
  update.mutable_job()->set_state(state);
  update.mutable_job()->mutable_progress()->set_step(step);
  return update;
}

v1::JobUpdate Event(int64_t sequence) {
  v1::JobUpdate update;
  update.mutable_event()->set_job_id("job-1");
  update.mutable_event()->set_sequence(sequence);
  update.mutable_event()->set_text("event " + std::to_string(sequence));
  return update;
}

v1::JobUpdate Log(int64_t sequence) {
  v1::JobUpdate update;
  update.mutable_log()->set_sequence(sequence);
  update.mutable_log()->mutable_line()->set_text("line " + std::to_string(sequence));
  return update;
}

// One scripted WatchJob call: these updates, then this end.
struct ScriptedCall {
  std::vector<v1::JobUpdate> updates;
  Status end;
};

class ScriptedStream final : public JobUpdateStream {
 public:
  explicit ScriptedStream(ScriptedCall call) : call_(std::move(call)) {}
  bool Next(v1::JobUpdate* update) override {
    if (next_ >= call_.updates.size()) return false;
    *update = call_.updates[next_++];
    return true;
  }
  Status Finish() override { return call_.end; }

 private:
  ScriptedCall call_;
  size_t next_ = 0;
};

class ScriptedSource final : public JobUpdateSource {
 public:
  std::unique_ptr<JobUpdateStream> WatchJob(const v1::WatchJobRequest& request) override {
    requests.push_back(request);
    if (calls.empty())
      return std::make_unique<ScriptedStream>(ScriptedCall{{}, Unavailable("down")});
    ScriptedCall call = std::move(calls.front());
    calls.pop_front();
    return std::make_unique<ScriptedStream>(std::move(call));
  }
  StatusOr<v1::Job> GetJob(const std::string& job_id) override {
    ++get_job_calls;
    return get_job;
  }

  std::deque<ScriptedCall> calls;
  std::vector<v1::WatchJobRequest> requests;
  StatusOr<v1::Job> get_job = Unavailable("down");
  int get_job_calls = 0;
};

class RecordingHandler final : public JobUpdateHandler {
 public:
  void OnJob(const v1::Job& job) override {
    seen.push_back("job " + std::to_string(job.progress().step()));
  }
  void OnEvent(const v1::JobEvent& event) override { seen.push_back(event.text()); }
  void OnLog(const v1::SequencedLogLine& line) override { seen.push_back(line.line().text()); }
  void OnStreamBroken(const Status& why, int64_t give_up_after_ms) override {
    seen.push_back("broken for up to " + std::to_string(give_up_after_ms) + ": " + why.message());
  }
  std::vector<std::string> seen;
};

FollowOptions Following() {
  FollowOptions options;
  options.request.set_job_id("job-1");
  options.request.set_follow(true);
  options.request.set_include_events(true);
  options.request.set_include_logs(true);
  options.reconnect_ms = 10'000;
  options.backoff.initial = std::chrono::milliseconds(500);
  options.backoff.max = std::chrono::milliseconds(2'000);
  return options;
}

TEST(FollowJobTest, ReadsUntilTheJobEnds) {
  ScriptedSource source;
  source.calls.push_back({{JobUpdate(v1::JOB_STATE_RUNNING, 1), Event(1), Log(1),
                           JobUpdate(v1::JOB_STATE_SUCCEEDED, 2)},
                          OkStatus()});
  RecordingHandler handler;
  ManualClock clock;
  const StatusOr<FollowResult> result = FollowJob(source, Following(), handler, clock);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->job->state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(result->last_event_sequence, 1);
  EXPECT_EQ(result->last_log_sequence, 1);
  EXPECT_EQ(handler.seen, (std::vector<std::string>{"job 1", "event 1", "line 1", "job 2"}));
  EXPECT_EQ(source.requests.size(), 1u);
  EXPECT_EQ(source.get_job_calls, 0);
  EXPECT_TRUE(clock.sleeps().empty());
}

TEST(FollowJobTest, ResumesAfterTheLastSequenceSeenAndSkipsRepeats) {
  ScriptedSource source;
  source.calls.push_back({{Event(1), Log(1), Event(2)}, Unavailable("socket closed")});
  // The restarted coordinator repeats event 2 and log 1: they are not handed over twice.
  source.calls.push_back(
      {{Event(2), Log(1), Event(3), Log(2), JobUpdate(v1::JOB_STATE_FAILED, 5)}, OkStatus()});
  RecordingHandler handler;
  ManualClock clock;
  const StatusOr<FollowResult> result = FollowJob(source, Following(), handler, clock);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->job->state(), v1::JOB_STATE_FAILED);
  ASSERT_EQ(source.requests.size(), 2u);
  EXPECT_EQ(source.requests[0].after_event_sequence(), 0);
  EXPECT_EQ(source.requests[1].after_event_sequence(), 2);
  EXPECT_EQ(source.requests[1].after_log_sequence(), 1);
  EXPECT_TRUE(source.requests[1].follow());
  EXPECT_TRUE(source.requests[1].include_logs());
  EXPECT_EQ(handler.seen, (std::vector<std::string>{"event 1", "line 1", "event 2",
                                                    "broken for up to 10000: socket closed",
                                                    "event 3", "line 2", "job 5"}));
}

TEST(FollowJobTest, BacksOffExponentiallyAndGivesUpAfterTheReconnectWindow) {
  ScriptedSource source;  // every call fails with Unavailable
  RecordingHandler handler;
  ManualClock clock;
  const StatusOr<FollowResult> result = FollowJob(source, Following(), handler, clock);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(result.status().message().find("job-1"), std::string::npos);
  EXPECT_NE(result.status().message().find("10 s"), std::string::npos);
  // 500, 1000, 2000 (capped) ... and the last pause ends exactly at the 10 s deadline.
  EXPECT_EQ(clock.sleeps(), (std::vector<int64_t>{500, 1000, 2000, 2000, 2000, 2000, 500}));
  EXPECT_EQ(source.requests.size(), 8u);
  // One notice for the break, not one per attempt.
  EXPECT_EQ(handler.seen, (std::vector<std::string>{"broken for up to 10000: down"}));
}

TEST(FollowJobTest, AStreamThatDeliversResetsTheWindow) {
  ScriptedSource source;
  source.calls.push_back({{}, Unavailable("down")});
  source.calls.push_back({{}, Unavailable("down")});
  source.calls.push_back({{Event(1)}, Unavailable("down again")});
  source.calls.push_back({{JobUpdate(v1::JOB_STATE_SUCCEEDED, 9)}, OkStatus()});
  RecordingHandler handler;
  ManualClock clock;
  const StatusOr<FollowResult> result = FollowJob(source, Following(), handler, clock);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(clock.sleeps(), (std::vector<int64_t>{500, 1000, 500}));
  EXPECT_EQ(handler.seen,
            (std::vector<std::string>{"broken for up to 10000: down", "event 1",
                                      "broken for up to 10000: down again", "job 9"}));
}

TEST(FollowJobTest, ErrorsThatRetryingCannotFixAreReturnedAtOnce) {
  ScriptedSource source;
  source.calls.push_back({{}, NotFound("job job-1: no such job")});
  RecordingHandler handler;
  ManualClock clock;
  const StatusOr<FollowResult> result = FollowJob(source, Following(), handler, clock);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(clock.sleeps().empty());
}

TEST(FollowJobTest, ACleanEndBeforeTheJobFinishedIsCheckedWithGetJob) {
  ScriptedSource source;
  source.calls.push_back({{JobUpdate(v1::JOB_STATE_RUNNING, 3)}, OkStatus()});
  v1::Job finished;
  finished.set_id("job-1");
  finished.set_state(v1::JOB_STATE_CANCELLED);
  source.get_job = finished;
  RecordingHandler handler;
  ManualClock clock;
  const StatusOr<FollowResult> result = FollowJob(source, Following(), handler, clock);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->job->state(), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(source.get_job_calls, 1);
  EXPECT_EQ(source.requests.size(), 1u);
}

TEST(FollowJobTest, ACleanEndWhileTheJobStillRunsIsABreak) {
  ScriptedSource source;
  source.calls.push_back({{JobUpdate(v1::JOB_STATE_RUNNING, 3)}, OkStatus()});
  source.calls.push_back({{JobUpdate(v1::JOB_STATE_SUCCEEDED, 4)}, OkStatus()});
  v1::Job running;
  running.set_id("job-1");
  running.set_state(v1::JOB_STATE_RUNNING);
  source.get_job = running;
  RecordingHandler handler;
  ManualClock clock;
  const StatusOr<FollowResult> result = FollowJob(source, Following(), handler, clock);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->job->progress().step(), 4);
  EXPECT_EQ(source.requests.size(), 2u);
  EXPECT_EQ(clock.sleeps(), (std::vector<int64_t>{500}));
}

TEST(FollowJobTest, WithoutFollowOneCleanStreamIsEnough) {
  ScriptedSource source;
  source.calls.push_back({{Log(1), Log(2)}, OkStatus()});
  FollowOptions options = Following();
  options.request.set_follow(false);
  options.request.set_after_log_sequence(0);
  RecordingHandler handler;
  ManualClock clock;
  const StatusOr<FollowResult> result = FollowJob(source, options, handler, clock);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_FALSE(result->job.has_value());
  EXPECT_EQ(handler.seen, (std::vector<std::string>{"line 1", "line 2"}));
  EXPECT_EQ(source.get_job_calls, 0);
}

}  // namespace
}  // namespace geotrain::cli
