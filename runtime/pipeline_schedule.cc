#include "runtime/pipeline_schedule.h"

#include <algorithm>
#include <string>

namespace geotrain::runtime {
namespace {

using Kind = PipelineOp::Kind;

PipelineOp Forward(int micro_batch) { return {Kind::kForward, micro_batch, false}; }
PipelineOp Backward(int micro_batch) { return {Kind::kBackward, micro_batch, false}; }

std::vector<PipelineOp> GPipeOps(int num_micro_batches) {
  std::vector<PipelineOp> ops;
  for (int i = 0; i < num_micro_batches; ++i) ops.push_back(Forward(i));
  for (int i = 0; i < num_micro_batches; ++i) ops.push_back(Backward(i));
  return ops;
}

std::vector<PipelineOp> OneFOneBOps(int stage, int num_stages, int num_micro_batches) {
  const int warmup = std::min(num_stages - stage - 1, num_micro_batches);
  std::vector<PipelineOp> ops;
  for (int i = 0; i < warmup; ++i) ops.push_back(Forward(i));
  for (int i = 0; i < num_micro_batches - warmup; ++i) {
    ops.push_back(Forward(warmup + i));
    ops.push_back(Backward(i));
  }
  for (int i = num_micro_batches - warmup; i < num_micro_batches; ++i) ops.push_back(Backward(i));
  return ops;
}

// One send or receive of a stage, posted before one of its ops (or after the last).
struct Transfer {
  bool is_send;
  int peer;
  int micro_batch;
  bool matched = false;
};

// Forwards flow up the stage numbers, backwards down.
int Downstream(Kind kind, int stage) { return kind == Kind::kForward ? stage + 1 : stage - 1; }
int Upstream(Kind kind, int stage) { return kind == Kind::kForward ? stage - 1 : stage + 1; }

// Phase k (0 <= k <= ops.size()) of a stage: the send of op k-1's output and the receive of op
// k's input, each only where the peer stage exists.
std::vector<Transfer> PhaseTransfers(const std::vector<PipelineOp>& ops, size_t k, int stage,
                                     int num_stages) {
  auto exists = [&](int peer) { return peer >= 0 && peer < num_stages; };
  std::vector<Transfer> transfers;
  if (k > 0) {
    const PipelineOp& done = ops[k - 1];
    const int peer = Downstream(done.kind, stage);
    if (exists(peer)) transfers.push_back({true, peer, done.micro_batch});
  }
  if (k < ops.size()) {
    const PipelineOp& next = ops[k];
    const int peer = Upstream(next.kind, stage);
    if (exists(peer)) transfers.push_back({false, peer, next.micro_batch});
  }
  return transfers;
}

// "the activation" flows from the lower stage to the higher, "the gradient" the other way.
std::string Payload(int from, int to) { return from < to ? "the activation" : "the gradient"; }

std::string Describe(int stage, const Transfer& t) {
  const int from = t.is_send ? stage : t.peer;
  const int to = t.is_send ? t.peer : stage;
  return "stage " + std::to_string(stage) + (t.is_send ? " sends " : " receives ") +
         Payload(from, to) + " of micro-batch " + std::to_string(t.micro_batch) +
         (t.is_send ? " to" : " from") + " stage " + std::to_string(t.peer);
}

struct StageProgress {
  size_t phase = 0;  // ops.size() + 1 once finished
  std::vector<Transfer> pending;
};

}  // namespace

std::vector<PipelineOp> BuildPipelineSchedule(ScheduleKind kind, int stage, int num_stages,
                                              int num_micro_batches) {
  if (stage < 0 || stage >= num_stages || num_micro_batches < 1) return {};
  std::vector<PipelineOp> ops = kind == ScheduleKind::kGPipe
                                    ? GPipeOps(num_micro_batches)
                                    : OneFOneBOps(stage, num_stages, num_micro_batches);
  // Epilogue: every backward after the last forward.
  for (auto op = ops.rbegin(); op != ops.rend() && op->kind == Kind::kBackward; ++op) {
    op->epilogue = true;
  }
  return ops;
}

Status CheckPipelineSchedules(const std::vector<std::vector<PipelineOp>>& schedules) {
  const int num_stages = static_cast<int>(schedules.size());
  if (num_stages == 0) return InvalidArgument("pipeline schedules: no stages");
  std::vector<StageProgress> stages(num_stages);
  for (int s = 0; s < num_stages; ++s) {
    stages[s].pending = PhaseTransfers(schedules[s], 0, s, num_stages);
  }
  auto finished = [&](int s) { return stages[s].phase > schedules[s].size(); };
  bool progress = true;
  while (progress) {
    progress = false;
    // Move every stage past the phases whose transfers have all completed.
    for (int s = 0; s < num_stages; ++s) {
      StageProgress& stage = stages[s];
      while (!finished(s) && std::all_of(stage.pending.begin(), stage.pending.end(),
                                         [](const Transfer& t) { return t.matched; })) {
        ++stage.phase;
        stage.pending = finished(s) ? std::vector<Transfer>()
                                    : PhaseTransfers(schedules[s], stage.phase, s, num_stages);
        progress = true;
      }
    }
    // Rendezvous: a posted send completes with the peer's posted receive on the same link.
    for (int s = 0; s < num_stages; ++s) {
      for (Transfer& send : stages[s].pending) {
        if (!send.is_send || send.matched) continue;
        for (Transfer& recv : stages[send.peer].pending) {
          if (recv.is_send || recv.matched || recv.peer != s) continue;
          if (recv.micro_batch != send.micro_batch) {
            return InvalidArgument("pipeline schedules: " + Describe(send.peer, recv) +
                                   ", which sends micro-batch " + std::to_string(send.micro_batch));
          }
          send.matched = recv.matched = true;
          progress = true;
        }
      }
    }
  }
  std::string waits;
  for (int s = 0; s < num_stages; ++s) {
    for (const Transfer& t : stages[s].pending) {
      if (!t.matched) waits += (waits.empty() ? "" : "; ") + Describe(s, t);
    }
  }
  if (!waits.empty()) return FailedPrecondition("pipeline schedules deadlock, blocked: " + waits);
  return OkStatus();
}

}  // namespace geotrain::runtime
