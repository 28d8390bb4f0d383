// Pipeline schedules: the order in which one stage runs the forward and backward passes of a
// step's micro-batches, and a check that the stages' orders fit together.
//
// Both schedules run backwards in ascending micro-batch order on every stage, so each link
// carries micro-batches in the order its receiver expects them (net::Transport links are FIFO
// without tags: a stage that wanted another order would read the wrong micro-batch's gradient).
//
//   GPipe  F0 F1 .. F(M-1) B0 B1 .. B(M-1) on every stage. Any one order would do for the last
//          stage; ascending everywhere makes every stage take the gradients in the order its
//          downstream neighbour produces them, and matches 1F1B's order.
//   1F1B   PipeDream-flush, Megatron's non-interleaved schedule: w = min(S - s - 1, M) warm-up
//          forwards F0..F(w-1); then M - w steady pairs F(w+i) B(i); then the cool-down
//          backwards B(M-w)..B(M-1). Stages 0 and 3 of 4 with M = 6:
//            s0  F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5
//            s3  F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5
//
// `epilogue` marks the backward ops that run after the stage's last forward: the drain phase,
// whose gradient sends are on the step's critical path (Optimus-CC's epilogue-only compression
// compresses exactly these sends; its Megatron code passes flush=True to them). In GPipe that is
// every backward; in 1F1B the cool-down backwards plus the last steady-state backward, so also
// the final backward of the last stage, which has no cool-down. The flag concerns the op's send
// upstream; frames are self-describing, so receivers need not know it.
//
// How a stage executes its schedule (what CheckPipelineSchedules simulates): before computing op
// k it posts together the send of op k-1's output and the receive of op k's input and waits for
// both (Megatron's send_forward_recv_backward; net::Transport lets a Send to and a Recv from the
// same peer run at once); after its last op it sends that op's output. A forward receives the
// activation from stage s-1 and sends its output to s+1; a backward receives the gradient from
// s+1 and sends its input gradient to s-1 (none beyond the first and last stages). Running the
// send and the next receive one after the other instead deadlocks 1F1B whenever S, M >= 2: the
// two stages of a link would both be sending. A runner that queues its sends and lets them finish
// in the background only blocks less, so a set of schedules that passes the check runs there too.
//
// Pure functions; thread-safe.
#pragma once

#include <vector>

#include "common/status.h"
#include "runtime/stage_assignment.h"

namespace geotrain::runtime {

struct PipelineOp {
  enum class Kind { kForward, kBackward } kind;
  int micro_batch;
  bool epilogue;  // backward after the stage's last forward (see above); false for forwards
};

// Stage `stage`'s ops for one step of `num_micro_batches` micro-batches: each micro-batch's
// forward and backward exactly once. Empty when 0 <= stage < num_stages and num_micro_batches >= 1
// do not hold (StageAssignment::Validate rejects such settings earlier).
std::vector<PipelineOp> BuildPipelineSchedule(ScheduleKind kind, int stage, int num_stages,
                                              int num_micro_batches);

// Runs schedules[s] as stage s of a pipeline of schedules.size() stages, with the execution above
// over rendezvous links (a send completes only together with its peer's receive). OK when every
// stage finishes. INVALID_ARGUMENT when a link's two ends disagree on the next micro-batch
// ("stage 1 receives the activation of micro-batch 2 from stage 0, which sends micro-batch 3"),
// or there are no stages; FAILED_PRECONDITION on a deadlock, naming what every unfinished stage
// waits for.
Status CheckPipelineSchedules(const std::vector<std::vector<PipelineOp>>& schedules);

}  // namespace geotrain::runtime
