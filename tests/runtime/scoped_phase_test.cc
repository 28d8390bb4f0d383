// ScopedPhase: one interval adds to its sums and, given a trace, is the span recorded there.
#include "runtime/scoped_phase.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/testing/temp_dir.h"

namespace geotrain::runtime {
namespace {

using nlohmann::json;

json ReadJson(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
}

TEST(ScopedPhaseTest, AddsTheSameSecondsToThePhaseAndTheTotal) {
  double phase = 1.0;  // sums accumulate: a phase is timed once per micro-batch
  double total = 2.0;
  {
    const ScopedPhase timer(&phase, &total);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_GE(phase - 1.0, 0.004);
  EXPECT_LT(phase - 1.0, 5.0);
  // The same seconds were added to both; subtracting different starting sums rounds differently.
  EXPECT_NEAR(phase - 1.0, total - 2.0, 1e-12);
}

TEST(ScopedPhaseTest, ANullSumIsSkipped) {
  double phase = 0;
  { const ScopedPhase timer(nullptr, &phase); }
  { const ScopedPhase timer(nullptr); }
  EXPECT_GE(phase, 0);
}

TEST(ScopedPhaseTest, RecordsItsIntervalAsATraceSpan) {
  geotrain::testing::TempDir dir;
  TraceWriter writer(dir.File("trace.json"), 0, "stage 0 replica 0");
  double phase = 0;
  {
    const ScopedPhase timer(TraceSpan{&writer, "forward", "compute", {{"micro_batch", 3}}}, &phase);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  { const ScopedPhase span_only(TraceSpan{&writer, "evaluate", "compute"}, nullptr); }
  ASSERT_TRUE(writer.Flush().ok());

  const json trace = ReadJson(dir.File("trace.json"));
  ASSERT_FALSE(trace.is_discarded());
  std::vector<json> spans;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == "X") spans.push_back(e);
  }
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0]["name"], "forward");
  EXPECT_EQ(spans[0]["cat"], "compute");
  EXPECT_EQ(spans[0]["args"]["micro_batch"], 3);
  // The span and the phase are one measurement (the span's microseconds are truncated).
  EXPECT_NEAR(spans[0]["dur"].get<double>() * 1e-6, phase, 2e-6);
  EXPECT_EQ(spans[1]["name"], "evaluate");
}

TEST(ScopedPhaseTest, ADisabledTraceRecordsNothingButStillTimes) {
  TraceWriter disabled("", 0, "stage 0 replica 0");
  double phase = 0;
  {
    const ScopedPhase timer(TraceSpan{&disabled, "forward", "compute"}, &phase);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_GT(phase, 0);
  EXPECT_TRUE(disabled.Flush().ok());
}

}  // namespace
}  // namespace geotrain::runtime
