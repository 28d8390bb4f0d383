// StepLedger: the one place a step report's bytes (and the link seconds that come with them) are
// read and differenced. Nothing else in the step loop keeps a baseline or subtracts counters.
//
// It reads the counters the transfers keep as they happen, each at the level that knows it:
//   pipeline link ends (tensor_link.h LinkTotals)   the schedule's frames: raw and wire bytes,
//                                                   codec and wait seconds, relative errors
//   the data-parallel sync (DataParallelTraffic)    its own raw (float32 ring all-reduce
//                                                   equivalent) and wire bytes
//   the tied-embedding sync (AddEmbedding)          the same, kept here: the sync is stateless
//   each transport's LinkStats (StepTrafficMeter)   every frame per (peer, kind, direction)
// They stay apart because they count different things, and the step line's figures are defined
// on them: the pipeline bytes of StepBytes are the schedule's frames alone, while a link's
// traffic entry also holds the gradient-norm frames and an evaluation's activations; a sync's
// raw bytes are what plain float32 would have sent, which no frame shows.
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
  // A link end's cumulative totals (zeros where the stage has no such link).
  struct EndTotals {
    LinkTotals to_next, to_prev, from_prev, from_next;
  };
  EndTotals ReadEnds() const;

  const StageAssignment& assignment_;
  const PipelineLinkEnds& ends_;
  const DataParallelSync& data_parallel_;
  const bool compressed_embedding_;
  StepTrafficMeter meter_;
  EndTotals schedule_start_;
  DataParallelTraffic embedding_;               // cumulative
  DataParallelTraffic data_parallel_reported_;  // at the last EndStep
  DataParallelTraffic embedding_reported_;      // at the last EndStep
};

}  // namespace geotrain::runtime
