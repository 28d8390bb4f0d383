// How the control commands write numbers, times and one-line views of a job. Plain functions
// over proto messages, so every format is unit-tested without a coordinator.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "geotrain/v1/coordinator.pb.h"
#include "geotrain/v1/job.pb.h"

namespace geotrain::cli {

// Clock times in messages: the user's local time, or UTC (tests, and scripts that compare).
enum class TimeZone { kLocal, kUtc };

// printf of one number: FormatNumber("%.3f", x).
std::string FormatNumber(const char* format, double value);
// Powers of 1000, one decimal below 100 of a unit: "512 B", "12.5 kB", "1.2 MB", "340 GB".
std::string FormatBytes(double bytes);
// FormatBytes per second: "1.2 MB/s".
std::string FormatByteRate(double bytes_per_second);
// Counts with k/M/G suffixes like FormatBytes: "950", "5.1k", "512k", "1.2M".
std::string FormatCount(double value);
// Whole seconds as M:SS or H:MM:SS ("0:42", "12:05", "1:02:03"); "-" when negative or not finite.
std::string FormatDuration(double seconds);
// How long ago, in the largest whole unit: "42s", "5m", "3h", "2d"; "-" when then_unix_ms is 0.
std::string FormatAge(int64_t then_unix_ms, int64_t now_unix_ms);
// "12:01:03".
std::string FormatClockTime(int64_t unix_ms, TimeZone zone);
// raw / wire as "8.0x"; "-" when nothing was sent.
std::string FormatCompressionRatio(uint64_t raw_bytes, uint64_t wire_bytes);
// "120/200", or "120/?" while the total is unknown.
std::string FormatStepOfTotal(const v1::JobProgress& progress);

// The live progress line: "job-3 running step 120/200 loss 3.412 eval 3.50 | 5.1k tok/s |
// wire 1.2 MB/s | ETA 0:42", or "job-4 queued step 0/40 | waiting for 4 idle workers; 2 are idle
// now"; parts not known yet are left out.
std::string FormatProgressLine(const v1::Job& job);
// "[12:01:03] job-3 recovering: worker w-2 died".
std::string FormatEventLine(const v1::JobEvent& event, TimeZone zone);
// "[12:01:03] w-2 s1r0: text".
std::string FormatLogLine(const v1::LogLine& line, TimeZone zone);
// One line for the end of a job: "job-3 succeeded after 1:02:03: step 200/200, loss 4.102 ->
// 3.412, eval 3.50, wire 240 MB of 1.9 GB raw (8.0x), 1 restart, 20 steps lost".
std::string FormatJobSummary(const v1::Job& job);

// "[12:01:03] lost the stream (UNAVAILABLE: ...); reconnecting for up to 2:00".
std::string FormatStreamBrokenNotice(const Status& why, int64_t give_up_after_ms,
                                     int64_t now_unix_ms, TimeZone zone);

}  // namespace geotrain::cli
