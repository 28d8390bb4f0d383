// StepLedger: the one place a step report's bytes (and the link seconds that come with them) are
// read and differenced. Nothing else in the step loop keeps a baseline or subtracts counters.
//
// Its one counter (traffic_counter.h) holds a TrafficCount per (peer, kind, direction), read from
// the sources that count as the transfers happen, each at the level that knows it:
//   pipeline link ends (tensor_link.h)       the schedule's frames, per peer: raw and wire bytes,
//                                            codec and wait seconds, relative errors
//   the data-parallel sync (traffic())       its raw (float32 ring all-reduce equivalent) and
//                                            wire bytes, under kEveryPeer
//   the tied-embedding sync (AddEmbedding)   the same, counted here: the sync is stateless
// and the transports' own counters (net/link_stats.h) are read by the StepTrafficMeter
// (step_traffic.h) into the report's `traffic`, per peer. The views differ because the step
// line's figures are defined on them: the pipeline bytes of StepBytes are the schedule's frames
// alone, while a link's traffic entry also holds the gradient-norm frames and an evaluation's
// activations; a sync's raw bytes are what plain float32 would have sent, which no frame shows.
//
// Three periods, closed in this order in every step:
//   BeginSchedule .. EndSchedule   forward / backward bytes and errors, encode / decode / send /
//                                  recv seconds, and the compute left of the schedule's time
//   EndStep                        data-parallel and embedding bytes since the last step's end
//                                  (the overlapped exchange of the step before included)
//   EndReport                      `traffic`, since the previous report: Step() reports at its
//                                  end, Run() after the step's evaluation and checkpoint
//
// Not thread-safe: the runtime thread calls it. The link ends, the sync and the transports it
// reads must outlive it.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/data_parallel_sync.h"
#include "runtime/stage_assignment.h"
#include "runtime/stage_links.h"
#include "runtime/stage_parts.h"
#include "runtime/step_result.h"
#include "runtime/step_traffic.h"
#include "runtime/tensor_link.h"
#include "runtime/traffic_counter.h"

namespace geotrain::runtime {

class StepLedger {
 public:
  // The transports' counters as they are now are the first baseline of EndReport.
  explicit StepLedger(const StageParts& parts);

  void BeginSchedule();
  // Fills the schedule's part of `result` (see above); `schedule_seconds` is the wall time of
  // the schedule, of which compute_seconds is what the links' codec and wait seconds leave.
  void EndSchedule(double schedule_seconds, StepResult* result);

  // The tied-embedding sync sent `wire` bytes standing for `raw` float32 bytes.
  void AddEmbedding(uint64_t raw, uint64_t wire);
  void EndStep(StepResult* result);

  // `data_parallel` is the sync's settings as adaptive compression left them (the sent bits).
  void EndReport(const DataParallelSettings& data_parallel, StepResult* result);

 private:
  // The link ends' and the data-parallel sync's totals into counter_ (the embedding's are
  // added as they come).
  void Read();

  const StageAssignment& assignment_;
  const PipelineLinkEnds& ends_;
  const DataParallelSync& data_parallel_;
  const bool compressed_embedding_;
  StepTrafficMeter meter_;
  // The keys of the link ends' frames.
  const TrafficKey to_next_, to_prev_, from_prev_, from_next_;
  TrafficCounter counter_;         // cumulative
  TrafficCounter schedule_start_;  // counter_ at BeginSchedule
  TrafficCounter step_reported_;   // counter_ at the last EndStep
};

}  // namespace geotrain::runtime
