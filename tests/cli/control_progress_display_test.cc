// ProgressDisplay and the line printers: what a user sees while following a job.
#include "cli/control_progress_display.h"

#include <gtest/gtest.h>

#include <sstream>

#include "cli/control_line_printers.h"
#include "tests/testing/manual_clock.h"

namespace geotrain::cli {
namespace {

using geotrain::testing::ManualClock;

// 2024-03-01 12:01:03 UTC.
constexpr int64_t kNoonMs = 1709294463000;

v1::Job Job(v1::JobState state, int64_t step) {
  v1::Job job;
  job.set_id("job-3");
  job.set_state(state);
  job.mutable_progress()->set_step(step);
  job.mutable_progress()->set_total_steps(200);
  job.mutable_progress()->set_loss(3.0);
  job.mutable_progress()->set_first_loss(4.0);
  return job;
}

v1::JobEvent Event(const std::string& text) {
  v1::JobEvent event;
  event.set_job_id("job-3");
  event.set_sequence(1);
  event.set_unix_ms(kNoonMs);
  event.set_state(v1::JOB_STATE_RECOVERING);
  event.set_text(text);
  return event;
}

TEST(ProgressDisplayTest, OnATerminalOneLineIsRewrittenAndEventsGoAboveIt) {
  std::ostringstream out;
  ManualClock clock{kNoonMs};
  ProgressDisplayOptions options;
  options.terminal = true;
  options.zone = TimeZone::kUtc;
  ProgressDisplay display(out, options, clock);
  display.OnJob(Job(v1::JOB_STATE_RUNNING, 1));
  display.OnJob(Job(v1::JOB_STATE_RUNNING, 2));
  display.OnEvent(Event("worker w-2 died"));
  display.Finish(Job(v1::JOB_STATE_SUCCEEDED, 200));
  EXPECT_EQ(out.str(),
            "\r\x1b[Kjob-3 running step 1/200 loss 3.000"
            "\r\x1b[Kjob-3 running step 2/200 loss 3.000"
            "\r\x1b[K[12:01:03] job-3 recovering: worker w-2 died\n"
            "job-3 running step 2/200 loss 3.000"
            "\r\x1b[Kjob-3 succeeded: step 200/200, loss 4.000 -> 3.000\n");
}

TEST(ProgressDisplayTest, TheLiveLineIsCutToTheTerminalWidth) {
  std::ostringstream out;
  ManualClock clock{kNoonMs};
  ProgressDisplayOptions options;
  options.terminal = true;
  options.columns = 11;
  ProgressDisplay display(out, options, clock);
  display.OnJob(Job(v1::JOB_STATE_RUNNING, 1));
  EXPECT_EQ(out.str(), "\r\x1b[Kjob-3 runn");
}

TEST(ProgressDisplayTest, WithoutATerminalProgressLinesAreThrottledButEventsAreNot) {
  std::ostringstream out;
  ManualClock clock{kNoonMs};
  ProgressDisplayOptions options;
  options.min_line_interval_ms = 10'000;
  options.zone = TimeZone::kUtc;
  ProgressDisplay display(out, options, clock);
  display.OnJob(Job(v1::JOB_STATE_RUNNING, 1));  // printed: the first
  clock.AdvanceMs(9'999);
  display.OnJob(Job(v1::JOB_STATE_RUNNING, 2));  // too soon
  display.OnEvent(Event("worker w-2 died"));     // events always
  clock.AdvanceMs(1);
  display.OnJob(Job(v1::JOB_STATE_RUNNING, 3));  // printed
  display.OnStreamBroken(Unavailable("socket closed"), 60'000);
  display.Finish(Job(v1::JOB_STATE_FAILED, 3));
  EXPECT_EQ(out.str(),
            "job-3 running step 1/200 loss 3.000\n"
            "[12:01:03] job-3 recovering: worker w-2 died\n"
            "job-3 running step 3/200 loss 3.000\n"
            "[12:01:13] lost the stream (UNAVAILABLE: socket closed); reconnecting for up to 1:00\n"
            "job-3 failed: step 3/200, loss 4.000 -> 3.000\n");
}

TEST(LogPrinterTest, TableLinesAndJsonUpdates) {
  v1::SequencedLogLine line;
  line.set_sequence(7);
  line.mutable_line()->set_worker_id("w-2");
  line.mutable_line()->set_stage(1);
  line.mutable_line()->set_unix_ms(kNoonMs);
  line.mutable_line()->set_text("hello");
  ManualClock clock{kNoonMs};

  std::ostringstream out, err;
  LogPrinter table(out, err, OutputFormat::kTable, TimeZone::kUtc, clock);
  table.OnJob(Job(v1::JOB_STATE_RUNNING, 1));  // not a log line
  table.OnLog(line);
  table.OnEvent(Event("worker w-2 died"));
  table.OnStreamBroken(Unavailable("gone"), 1000);
  EXPECT_EQ(out.str(),
            "[12:01:03] w-2 s1r0: hello\n"
            "[12:01:03] job-3 recovering: worker w-2 died\n");
  EXPECT_EQ(err.str(),
            "[12:01:03] lost the stream (UNAVAILABLE: gone); reconnecting for up to 0:01\n");

  std::ostringstream json_out, json_err;
  LogPrinter json(json_out, json_err, OutputFormat::kJson, TimeZone::kUtc, clock);
  json.OnLog(line);
  EXPECT_EQ(json_out.str().rfind("{\"log\":{\"sequence\":\"7\",\"line\":{", 0), 0u)
      << json_out.str();
  EXPECT_TRUE(json.status().ok());
}

TEST(JobJsonPrinterTest, PrintsEverySnapshotOnItsOwnLine) {
  std::ostringstream out, err;
  ManualClock clock{kNoonMs};
  JobJsonPrinter printer(out, err, TimeZone::kUtc, clock);
  printer.OnJob(Job(v1::JOB_STATE_RUNNING, 1));
  printer.OnEvent(Event("ignored"));
  printer.OnJob(Job(v1::JOB_STATE_SUCCEEDED, 2));
  const std::string text = out.str();
  ASSERT_EQ(std::count(text.begin(), text.end(), '\n'), 2) << text;
  EXPECT_EQ(text.rfind("{\"id\":\"job-3\"", 0), 0u) << text;
  EXPECT_NE(text.find("\"state\":\"JOB_STATE_SUCCEEDED\""), std::string::npos) << text;
}

}  // namespace
}  // namespace geotrain::cli
