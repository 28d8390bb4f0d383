// TraceWriter: one rank's timeline as a Chrome trace (--profile FILE), for Perfetto or
// chrome://tracing.
//
// The file is the Trace Event Format's JSON object form:
//   {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {"dropped_events": N}}
// with "M" metadata events naming the process (process_name, and process_sort_index = pid so a
// merged trace lists ranks in order) and each thread that recorded or was named (thread_name),
// then one "X" (complete) event per recorded span: name, cat, ph, pid, tid, ts, dur, args.
//
// pid is the rank's global rank; tid a small number per thread, in order of first use. ts is
// microseconds since the Unix epoch by the system clock, so the traces of several ranks (hosts
// synchronised by NTP) line up when MergeTraces puts them in one file; dur is the difference of
// the two truncated timestamps, so a span recorded inside another stays inside it.
//
// Events stay in memory until Flush, which rewrites the whole file atomically (a temporary file
// renamed into place), so it may run periodically and a reader never sees half a trace. At most
// max_events are kept; later ones are counted as dropped. A writer built with an empty path is
// disabled: Complete, TraceScope and Flush return at once without reading the clock.
//
// Thread-safety: every method may be called from any thread; Flush holds recorders off while it
// serialises. TraceScope belongs to the thread that created it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/status.h"

namespace geotrain::runtime {

class TraceWriter {
 public:
  using Clock = std::chrono::system_clock;
  static constexpr size_t kDefaultMaxEvents = size_t{1} << 20;  // ~150 MB of JSON

  // `path` empty: disabled. `pid`: the global rank; `process_name`: "stage 1 replica 0".
  TraceWriter(std::string path, int pid, std::string process_name,
              size_t max_events = kDefaultMaxEvents);
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  bool enabled() const { return !path_.empty(); }

  // Records a span of the calling thread; `args` (an object, or null for none) shows in the
  // viewer's details. A span ending before it starts (the clock stepped back) gets dur 0.
  void Complete(std::string_view name, std::string_view category, Clock::time_point start,
                Clock::time_point end, nlohmann::json args = nullptr);
  // Names the calling thread ("compute", "send to stage 2"); the last name given wins.
  void SetThreadName(std::string_view name);

  // Writes everything recorded so far; errors name the path. OK at once when disabled.
  Status Flush();

 private:
  struct Event {
    std::string name;
    std::string category;
    int64_t ts_us;
    int64_t dur_us;
    int tid;
    nlohmann::json args;
  };
  int ThreadIdLocked();  // mu_ held
  std::string SerializeLocked() const;

  const std::string path_;
  const int pid_;
  const std::string process_name_;
  const size_t max_events_;

  std::mutex mu_;
  std::vector<Event> events_;
  std::map<std::thread::id, int> thread_ids_;
  std::map<int, std::string> thread_names_;
  uint64_t dropped_ = 0;
};

// Records [construction, destruction) as one span of the writer. A null or disabled writer makes
// it do nothing (no clock reads, no copies).
class TraceScope {
 public:
  TraceScope(TraceWriter* writer, std::string_view name, std::string_view category,
             nlohmann::json args = nullptr);
  ~TraceScope();
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

  // Replaces the span's args, for what is known only at its end (bytes sent, a ratio).
  void set_args(nlohmann::json args) {
    if (writer_ != nullptr) args_ = std::move(args);
  }

 private:
  TraceWriter* writer_;  // null when there is nothing to record
  std::string name_;
  std::string category_;
  nlohmann::json args_;
  TraceWriter::Clock::time_point start_;
};

// Concatenates the traceEvents of `inputs` (TraceWriter files, typically one per rank) into
// `output`, written atomically; dropped_events are summed. Errors name the file at fault: missing,
// not JSON, or without a traceEvents array; INVALID_ARGUMENT when `inputs` is empty.
Status MergeTraces(const std::vector<std::string>& inputs, const std::string& output);

}  // namespace geotrain::runtime
