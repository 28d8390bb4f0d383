// The control commands' number, time and one-line formats.
#include "cli/control_format.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace geotrain::cli {
namespace {

// 2024-03-01 12:01:03 UTC.
constexpr int64_t kNoonMs = 1709294463000;

v1::Job RunningJob() {
  v1::Job job;
  job.set_id("job-3");
  job.set_state(v1::JOB_STATE_RUNNING);
  v1::JobProgress& p = *job.mutable_progress();
  p.set_step(120);
  p.set_total_steps(200);
  p.set_loss(3.4123);
  p.set_first_loss(4.1019);
  p.set_eval_loss(3.5);
  p.set_eval_step(100);
  p.set_tokens_per_second(5120);
  p.set_wire_bytes_per_second(1.2e6);
  p.set_eta_seconds(42);
  return job;
}

TEST(ControlFormatTest, BytesUsePowersOfAThousandWithOneDecimalBelowAHundred) {
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(999), "999 B");
  EXPECT_EQ(FormatBytes(1000), "1.0 kB");
  EXPECT_EQ(FormatBytes(12500), "12.5 kB");
  EXPECT_EQ(FormatBytes(1.2e6), "1.2 MB");
  EXPECT_EQ(FormatBytes(99.96e6), "100 MB");
  EXPECT_EQ(FormatBytes(340e9), "340 GB");
  EXPECT_EQ(FormatBytes(999.7e6), "1.0 GB");
  EXPECT_EQ(FormatBytes(2.5e12), "2.5 TB");
  EXPECT_EQ(FormatBytes(5e15), "5000 TB");
  EXPECT_EQ(FormatBytes(std::numeric_limits<double>::quiet_NaN()), "-");
  EXPECT_EQ(FormatByteRate(1.2e6), "1.2 MB/s");
}

TEST(ControlFormatTest, CountsUseSuffixes) {
  EXPECT_EQ(FormatCount(950), "950");
  EXPECT_EQ(FormatCount(5120), "5.1k");
  EXPECT_EQ(FormatCount(51200), "51.2k");
  EXPECT_EQ(FormatCount(512000), "512k");
  EXPECT_EQ(FormatCount(1.2e6), "1.2M");
}

TEST(ControlFormatTest, DurationsAreMinutesSecondsOrHoursMinutesSeconds) {
  EXPECT_EQ(FormatDuration(0), "0:00");
  EXPECT_EQ(FormatDuration(42), "0:42");
  EXPECT_EQ(FormatDuration(41.6), "0:42");
  EXPECT_EQ(FormatDuration(725), "12:05");
  EXPECT_EQ(FormatDuration(3723), "1:02:03");
  EXPECT_EQ(FormatDuration(100 * 3600), "100:00:00");
  EXPECT_EQ(FormatDuration(-1), "-");
  EXPECT_EQ(FormatDuration(std::numeric_limits<double>::infinity()), "-");
}

TEST(ControlFormatTest, AgesUseTheLargestWholeUnit) {
  EXPECT_EQ(FormatAge(kNoonMs - 42'000, kNoonMs), "42s");
  EXPECT_EQ(FormatAge(kNoonMs - 5 * 60'000 - 59'000, kNoonMs), "5m");
  EXPECT_EQ(FormatAge(kNoonMs - 3 * 3'600'000, kNoonMs), "3h");
  EXPECT_EQ(FormatAge(kNoonMs - 2 * 86'400'000, kNoonMs), "2d");
  EXPECT_EQ(FormatAge(kNoonMs + 5'000, kNoonMs), "0s");  // a clock slightly ahead
  EXPECT_EQ(FormatAge(0, kNoonMs), "-");
}

TEST(ControlFormatTest, ClockTimeAndRatios) {
  EXPECT_EQ(FormatClockTime(kNoonMs, TimeZone::kUtc), "12:01:03");
  EXPECT_EQ(FormatCompressionRatio(8000, 1000), "8.0x");
  EXPECT_EQ(FormatCompressionRatio(1000, 0), "-");
  v1::JobProgress progress;
  progress.set_step(7);
  EXPECT_EQ(FormatStepOfTotal(progress), "7/?");
  progress.set_total_steps(10);
  EXPECT_EQ(FormatStepOfTotal(progress), "7/10");
}

TEST(ControlFormatTest, ProgressLineHasEveryKnownFigure) {
  EXPECT_EQ(FormatProgressLine(RunningJob()),
            "job-3 running step 120/200 loss 3.412 eval 3.50 | 5.1k tok/s | wire 1.2 MB/s | "
            "ETA 0:42");
}

TEST(ControlFormatTest, ProgressLineLeavesOutWhatIsNotKnownYet) {
  v1::Job job;
  job.set_id("job-4");
  job.set_state(v1::JOB_STATE_QUEUED);
  EXPECT_EQ(FormatProgressLine(job), "job-4 queued");
  job.set_waiting_for("4 idle workers; 2 are idle now");
  EXPECT_EQ(FormatProgressLine(job), "job-4 queued | waiting for 4 idle workers; 2 are idle now");
  job.clear_waiting_for();

  job.set_state(v1::JOB_STATE_RUNNING);
  job.mutable_progress()->set_step(3);
  job.mutable_progress()->set_loss(9.87654);
  EXPECT_EQ(FormatProgressLine(job), "job-4 running step 3/? loss 9.877");

  v1::Job finished = RunningJob();
  finished.set_state(v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(FormatProgressLine(finished).find("ETA"), std::string::npos);
}

TEST(ControlFormatTest, EventAndLogLines) {
  v1::JobEvent event;
  event.set_job_id("job-3");
  event.set_unix_ms(kNoonMs);
  event.set_state(v1::JOB_STATE_RECOVERING);
  event.set_text("worker w-2 died");
  EXPECT_EQ(FormatEventLine(event, TimeZone::kUtc), "[12:01:03] job-3 recovering: worker w-2 died");
  event.set_state(v1::JOB_STATE_UNSPECIFIED);
  EXPECT_EQ(FormatEventLine(event, TimeZone::kUtc), "[12:01:03] job-3: worker w-2 died");

  v1::LogLine line;
  line.set_worker_id("w-2");
  line.set_stage(1);
  line.set_replica(0);
  line.set_unix_ms(kNoonMs);
  line.set_text("loaded 12 layers");
  EXPECT_EQ(FormatLogLine(line, TimeZone::kUtc), "[12:01:03] w-2 s1r0: loaded 12 layers");
}

TEST(ControlFormatTest, SummaryOfASucceededJob) {
  v1::Job job = RunningJob();
  job.set_state(v1::JOB_STATE_SUCCEEDED);
  job.mutable_progress()->set_step(200);
  job.mutable_progress()->set_raw_bytes(1'900'000'000);
  job.mutable_progress()->set_wire_bytes(240'000'000);
  job.set_submitted_unix_ms(kNoonMs - 4'000'000);
  job.set_started_unix_ms(kNoonMs - 3'723'000);
  job.set_finished_unix_ms(kNoonMs);
  job.set_restarts(1);
  job.set_steps_lost(20);
  EXPECT_EQ(FormatJobSummary(job),
            "job-3 succeeded after 1:02:03: step 200/200, loss 4.102 -> 3.412, eval 3.50, wire "
            "240 MB of 1.9 GB raw (7.9x), 1 restart, 20 steps lost");
}

TEST(ControlFormatTest, AClassifiersScoresFollowItsEvalLoss) {
  v1::Job job = RunningJob();
  v1::EvalScores* scores = job.mutable_progress()->mutable_eval_scores();
  scores->set_accuracy(0.875);
  scores->set_f1(0.5);
  scores->set_mcc(-0.25);
  EXPECT_EQ(FormatProgressLine(job),
            "job-3 running step 120/200 loss 3.412 eval 3.50 acc 0.875 | 5.1k tok/s | wire "
            "1.2 MB/s | ETA 0:42");
  job.set_state(v1::JOB_STATE_SUCCEEDED);
  job.clear_started_unix_ms();
  EXPECT_NE(FormatJobSummary(job).find(", eval 3.50 (accuracy 0.875, F1 0.500, MCC -0.250)"),
            std::string::npos)
      << FormatJobSummary(job);
}

TEST(ControlFormatTest, SummaryOfAJobThatFailedBeforeItsFirstStep) {
  v1::Job job;
  job.set_id("job-9");
  job.set_state(v1::JOB_STATE_FAILED);
  job.set_submitted_unix_ms(kNoonMs - 5'000);
  job.set_finished_unix_ms(kNoonMs);
  EXPECT_EQ(FormatJobSummary(job), "job-9 failed after 0:05: step 0/?");
}

TEST(ControlFormatTest, ReconnectNotice) {
  EXPECT_EQ(
      FormatStreamBrokenNotice(Unavailable("socket closed"), 120'000, kNoonMs, TimeZone::kUtc),
      "[12:01:03] lost the stream (UNAVAILABLE: socket closed); reconnecting for up to 2:00");
}

}  // namespace
}  // namespace geotrain::cli
