#include "runtime/trace_writer.h"

#include <algorithm>

#include "common/io/atomic_file_writer.h"
#include "common/io/file_contents.h"
#include "common/io/strict_json.h"

namespace geotrain::runtime {
namespace {

using nlohmann::json;

// Traces are read whole; a full TraceWriter file is ~150 MB.
constexpr size_t kMaxTraceBytes = size_t{4} << 30;

int64_t MicrosSinceEpoch(TraceWriter::Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

json Metadata(const char* name, int pid, int tid, json args) {
  return {{"name", name}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", std::move(args)}};
}

// Event names come from callers and may hold invalid UTF-8; replace rather than throw.
std::string Dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

Status WriteAtomically(const std::string& path, const std::string& contents) {
  GEOTRAIN_ASSIGN_OR_RETURN(auto writer, io::AtomicFileWriter::Create(path));
  GEOTRAIN_RETURN_IF_ERROR(writer->Append(contents.data(), contents.size()));
  return writer->Commit();
}

json TraceFile(json events, uint64_t dropped) {
  return {{"traceEvents", std::move(events)},
          {"displayTimeUnit", "ms"},
          {"otherData", {{"dropped_events", dropped}}}};
}

}  // namespace

TraceWriter::TraceWriter(std::string path, int pid, std::string process_name, size_t max_events)
    : path_(std::move(path)),
      pid_(pid),
      process_name_(std::move(process_name)),
      max_events_(max_events) {}

int TraceWriter::ThreadIdLocked() {
  auto [it, inserted] =
      thread_ids_.emplace(std::this_thread::get_id(), static_cast<int>(thread_ids_.size()) + 1);
  return it->second;
}

void TraceWriter::Complete(std::string_view name, std::string_view category,
                           Clock::time_point start, Clock::time_point end, json args) {
  if (!enabled()) return;
  const int64_t ts = MicrosSinceEpoch(start);
  const int64_t dur = std::max<int64_t>(0, MicrosSinceEpoch(end) - ts);
  std::lock_guard<std::mutex> lock(mu_);
  if (events_.size() >= max_events_) {
    ++dropped_;
    return;
  }
  events_.push_back(
      {std::string(name), std::string(category), ts, dur, ThreadIdLocked(), std::move(args)});
}

void TraceWriter::SetThreadName(std::string_view name) {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(mu_);
  thread_names_[ThreadIdLocked()] = std::string(name);
}

std::string TraceWriter::SerializeLocked() const {
  json events = json::array();
  events.push_back(Metadata("process_name", pid_, 0, {{"name", process_name_}}));
  events.push_back(Metadata("process_sort_index", pid_, 0, {{"sort_index", pid_}}));
  for (const auto& [tid, name] : thread_names_) {
    events.push_back(Metadata("thread_name", pid_, tid, {{"name", name}}));
  }
  for (const Event& e : events_) {
    json event = {{"name", e.name}, {"cat", e.category}, {"ph", "X"}, {"pid", pid_}};
    event["tid"] = e.tid;
    event["ts"] = e.ts_us;
    event["dur"] = e.dur_us;
    if (!e.args.is_null()) event["args"] = e.args;
    events.push_back(std::move(event));
  }
  return Dump(TraceFile(std::move(events), dropped_));
}

Status TraceWriter::Flush() {
  if (!enabled()) return OkStatus();
  std::string contents;
  {
    std::lock_guard<std::mutex> lock(mu_);
    contents = SerializeLocked();
  }
  return WriteAtomically(path_, contents).WithContext("writing trace");
}

TraceScope::TraceScope(TraceWriter* writer, std::string_view name, std::string_view category,
                       json args)
    : writer_(writer != nullptr && writer->enabled() ? writer : nullptr) {
  if (writer_ == nullptr) return;
  name_ = name;
  category_ = category;
  args_ = std::move(args);
  start_ = TraceWriter::Clock::now();
}

TraceScope::~TraceScope() {
  if (writer_ != nullptr) {
    writer_->Complete(name_, category_, start_, TraceWriter::Clock::now(), std::move(args_));
  }
}

Status MergeTraces(const std::vector<std::string>& inputs, const std::string& output) {
  if (inputs.empty()) return InvalidArgument("merging traces: no input files");
  json events = json::array();
  uint64_t dropped = 0;
  for (const std::string& input : inputs) {
    GEOTRAIN_ASSIGN_OR_RETURN(std::string text, io::ReadFileContents(input, kMaxTraceBytes));
    GEOTRAIN_ASSIGN_OR_RETURN(json trace, io::ParseStrictJson(text, input));
    if (!trace.is_object() || !trace.contains("traceEvents") || !trace["traceEvents"].is_array()) {
      return InvalidArgument(input + ": not a trace: expected an object with a traceEvents array");
    }
    for (json& event : trace["traceEvents"]) events.push_back(std::move(event));
    const json* other = trace.contains("otherData") ? &trace["otherData"] : nullptr;
    if (other != nullptr && other->is_object() && other->contains("dropped_events") &&
        (*other)["dropped_events"].is_number_unsigned()) {
      dropped += (*other)["dropped_events"].get<uint64_t>();
    }
  }
  return WriteAtomically(output, Dump(TraceFile(std::move(events), dropped)))
      .WithContext("writing merged trace");
}

}  // namespace geotrain::runtime
