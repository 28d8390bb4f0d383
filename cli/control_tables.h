// The table views of the control commands' answers (`-o table`): plain functions over the
// response messages; each returns whole lines ending in '\n'.
#pragma once

#include <cstdint>
#include <string>

#include "geotrain/v1/coordinator.pb.h"

namespace geotrain::cli {

// `geotrain status`: one "key  value" line per figure, the bytes per direction as a small table,
// then the placements.
std::string FormatJobStatus(const v1::Job& job);
// `geotrain jobs`: ID NAME STATE STEP LOSS AGE; ages relative to `now_unix_ms`. Both lists start
// with "coordinator: state store failed: REASON; no changes accepted" when the response says so.
std::string FormatJobList(const v1::ListJobsResponse& jobs, int64_t now_unix_ms);
// `geotrain workers`: ID STATE REGION ADDRESS DEVICE MEMORY CPUS TASK HEARTBEAT.
std::string FormatWorkerList(const v1::ListWorkersResponse& workers, int64_t now_unix_ms);
// `geotrain links`: throughput and one-way latency ("118 MB/s 12ms") by source (rows) and
// destination (columns), each labelled "w-1 (us-east1)"; "-" where a link (or one of its two
// figures) was not measured.
std::string FormatLinkMatrix(const v1::LinkMatrix& links);

}  // namespace geotrain::cli
