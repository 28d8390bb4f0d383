// TraceWriter and MergeTraces: the Chrome trace fields, nesting, concurrent recording, the event
// cap, the disabled writer, and merging files of several ranks.
#include "runtime/trace_writer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "tests/testing/temp_dir.h"

namespace geotrain::runtime {
namespace {

using nlohmann::json;
using std::chrono::microseconds;

json ReadJson(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
}

std::vector<json> EventsOfPhase(const json& trace, const std::string& phase) {
  std::vector<json> out;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == phase) out.push_back(e);
  }
  return out;
}

int64_t Micros(TraceWriter::Clock::time_point t) {
  return std::chrono::duration_cast<microseconds>(t.time_since_epoch()).count();
}

TEST(TraceWriterTest, CompleteEventsAndMetadataHaveChromeFields) {
  testing::TempDir dir;
  TraceWriter writer(dir.File("trace.json"), 3, "stage 1 replica 0");
  ASSERT_TRUE(writer.enabled());
  writer.SetThreadName("compute");
  const TraceWriter::Clock::time_point start = TraceWriter::Clock::now();
  writer.Complete("forward", "compute", start, start + microseconds(1500), {{"micro_batch", 2}});
  ASSERT_TRUE(writer.Flush().ok());

  const json trace = ReadJson(dir.File("trace.json"));
  ASSERT_FALSE(trace.is_discarded());
  EXPECT_EQ(trace["displayTimeUnit"], "ms");
  EXPECT_EQ(trace["otherData"]["dropped_events"], 0);

  const std::vector<json> metadata = EventsOfPhase(trace, "M");
  ASSERT_EQ(metadata.size(), 3u);
  EXPECT_EQ(metadata[0]["name"], "process_name");
  EXPECT_EQ(metadata[0]["pid"], 3);
  EXPECT_EQ(metadata[0]["args"]["name"], "stage 1 replica 0");
  EXPECT_EQ(metadata[1]["name"], "process_sort_index");
  EXPECT_EQ(metadata[1]["args"]["sort_index"], 3);
  EXPECT_EQ(metadata[2]["name"], "thread_name");
  EXPECT_EQ(metadata[2]["args"]["name"], "compute");

  const std::vector<json> spans = EventsOfPhase(trace, "X");
  ASSERT_EQ(spans.size(), 1u);
  const json& span = spans[0];
  EXPECT_EQ(span["name"], "forward");
  EXPECT_EQ(span["cat"], "compute");
  EXPECT_EQ(span["pid"], 3);
  EXPECT_EQ(span["tid"], metadata[2]["tid"]);
  EXPECT_EQ(span["ts"].get<int64_t>(), Micros(start));  // Unix-epoch microseconds
  EXPECT_EQ(span["dur"], 1500);
  EXPECT_EQ(span["args"]["micro_batch"], 2);
}

TEST(TraceWriterTest, NestedScopesStayInsideEachOtherOnOneThread) {
  testing::TempDir dir;
  TraceWriter writer(dir.File("trace.json"), 0, "stage 0 replica 0");
  {
    TraceScope outer(&writer, "step", "train");
    {
      TraceScope inner(&writer, "send", "link", {{"peer", 1}});
      inner.set_args({{"bytes", 1234}});
    }
  }
  ASSERT_TRUE(writer.Flush().ok());
  const std::vector<json> spans = EventsOfPhase(ReadJson(dir.File("trace.json")), "X");
  ASSERT_EQ(spans.size(), 2u);
  const json& inner = spans[0];  // recorded first: it ends first
  const json& outer = spans[1];
  EXPECT_EQ(inner["name"], "send");
  EXPECT_EQ(inner["args"], json({{"bytes", 1234}}));
  EXPECT_EQ(outer["name"], "step");
  EXPECT_FALSE(outer.contains("args"));
  EXPECT_EQ(inner["tid"], outer["tid"]);
  const int64_t outer_ts = outer["ts"], outer_dur = outer["dur"];
  const int64_t inner_ts = inner["ts"], inner_dur = inner["dur"];
  EXPECT_GE(inner_ts, outer_ts);
  EXPECT_LE(inner_ts + inner_dur, outer_ts + outer_dur);
}

TEST(TraceWriterTest, FourThreadsRecordConcurrently) {
  testing::TempDir dir;
  TraceWriter writer(dir.File("trace.json"), 1, "stage 1 replica 0");
  constexpr int kThreads = 4, kSpans = 500;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&writer, t] {
      writer.SetThreadName("worker " + std::to_string(t));
      for (int i = 0; i < kSpans; ++i) TraceScope scope(&writer, "op", "test", {{"i", i}});
    });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_TRUE(writer.Flush().ok());

  const json trace = ReadJson(dir.File("trace.json"));
  ASSERT_FALSE(trace.is_discarded());
  const std::vector<json> spans = EventsOfPhase(trace, "X");
  EXPECT_EQ(spans.size(), static_cast<size_t>(kThreads * kSpans));
  std::set<int> tids;
  for (const json& span : spans) tids.insert(span["tid"].get<int>());
  EXPECT_EQ(tids, std::set<int>({1, 2, 3, 4}));
  std::set<std::string> names;
  for (const json& m : EventsOfPhase(trace, "M")) {
    if (m["name"] == "thread_name") names.insert(m["args"]["name"].get<std::string>());
  }
  EXPECT_EQ(names, std::set<std::string>({"worker 0", "worker 1", "worker 2", "worker 3"}));
}

TEST(TraceWriterTest, EventsBeyondTheCapAreCountedAsDropped) {
  testing::TempDir dir;
  TraceWriter writer(dir.File("trace.json"), 0, "p", /*max_events=*/3);
  const auto now = TraceWriter::Clock::now();
  for (int i = 0; i < 5; ++i) writer.Complete("e", "c", now, now);
  ASSERT_TRUE(writer.Flush().ok());
  const json trace = ReadJson(dir.File("trace.json"));
  EXPECT_EQ(EventsOfPhase(trace, "X").size(), 3u);
  EXPECT_EQ(trace["otherData"]["dropped_events"], 2);
}

TEST(TraceWriterTest, FlushRewritesTheWholeFileAndLeavesNoTemporaries) {
  testing::TempDir dir;
  TraceWriter writer(dir.File("trace.json"), 0, "p");
  const auto now = TraceWriter::Clock::now();
  writer.Complete("a", "c", now, now);
  ASSERT_TRUE(writer.Flush().ok());
  writer.Complete("b", "c", now, now);
  ASSERT_TRUE(writer.Flush().ok());
  EXPECT_EQ(EventsOfPhase(ReadJson(dir.File("trace.json")), "X").size(), 2u);
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    (void)entry;
    ++files;
  }
  EXPECT_EQ(files, 1);
}

TEST(TraceWriterTest, FlushErrorNamesThePath) {
  testing::TempDir dir;
  const std::string path = dir.File("missing/trace.json");
  TraceWriter writer(path, 0, "p");
  const Status status = writer.Flush();
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find(path), std::string::npos) << status.ToString();
}

TEST(TraceWriterTest, DisabledWriterRecordsNothingAndFlushSucceeds) {
  TraceWriter writer("", 0, "p");
  EXPECT_FALSE(writer.enabled());
  writer.SetThreadName("t");
  const auto now = TraceWriter::Clock::now();
  writer.Complete("a", "c", now, now);
  { TraceScope scope(&writer, "a", "c"); }
  { TraceScope scope(nullptr, "a", "c"); }
  EXPECT_TRUE(writer.Flush().ok());
}

TEST(TraceWriterTest, MergeKeepsEveryEventOfEveryRank) {
  testing::TempDir dir;
  const auto now = TraceWriter::Clock::now();
  std::vector<std::string> inputs;
  size_t total_events = 0;
  for (int rank = 0; rank < 3; ++rank) {
    inputs.push_back(dir.File("rank" + std::to_string(rank) + ".json"));
    TraceWriter writer(inputs.back(), rank, "stage " + std::to_string(rank) + " replica 0",
                       /*max_events=*/2);
    writer.SetThreadName("compute");
    for (int i = 0; i <= rank; ++i) writer.Complete("op", "c", now, now + microseconds(rank));
    ASSERT_TRUE(writer.Flush().ok());
    total_events += ReadJson(inputs.back())["traceEvents"].size();
  }
  const std::string merged_path = dir.File("merged.json");
  ASSERT_TRUE(MergeTraces(inputs, merged_path).ok());

  const json merged = ReadJson(merged_path);
  ASSERT_FALSE(merged.is_discarded());
  EXPECT_EQ(merged["displayTimeUnit"], "ms");
  EXPECT_EQ(merged["traceEvents"].size(), total_events);
  EXPECT_EQ(EventsOfPhase(merged, "X").size(), 1u + 2u + 2u);
  EXPECT_EQ(merged["otherData"]["dropped_events"], 1);  // rank 2's third span
  std::set<int> pids;
  for (const json& e : merged["traceEvents"]) pids.insert(e["pid"].get<int>());
  EXPECT_EQ(pids, std::set<int>({0, 1, 2}));
}

TEST(TraceWriterTest, MergeErrorsNameTheFile) {
  testing::TempDir dir;
  const std::string good = dir.File("good.json");
  TraceWriter writer(good, 0, "p");
  ASSERT_TRUE(writer.Flush().ok());
  const std::string not_json = dir.Write("bad.json", "{\"traceEvents\": [");
  const std::string no_events = dir.Write("other.json", "{\"events\": []}");
  const std::string missing = dir.File("absent.json");
  for (const std::string& bad : {not_json, no_events, missing}) {
    const Status status = MergeTraces({good, bad}, dir.File("merged.json"));
    EXPECT_FALSE(status.ok());
    EXPECT_NE(status.message().find(bad), std::string::npos) << status.ToString();
  }
  EXPECT_FALSE(std::filesystem::exists(dir.File("merged.json")));
  EXPECT_EQ(MergeTraces({}, dir.File("merged.json")).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace geotrain::runtime
