// StepAggregator: turns the per-rank StepReports of one job into complete steps (JobStep rows,
// the loss curve) and the job's JobProgress figures.
//
// A step is complete when every rank of the current placement (generation) reported it. Reports
// arrive over different workers' sessions in any interleaving, but each rank reports its steps
// in order and no rank finishes step k+1 before every rank finished step k (the pipeline and the
// data-parallel sync tie them together), so when step k completes, any partial step before k can
// never complete (its reports were lost, e.g. across a coordinator restart) and is dropped.
//
// Not thread-safe: the coordinator core calls it under its mutex.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <vector>

#include "geotrain/v1/coordinator.pb.h"
#include "geotrain/v1/job.pb.h"

namespace geotrain::coordinator {

// What the progress figures need from the job's spec.
struct StepFigures {
  int num_stages = 1;
  int replicas = 1;
  // micro_batch_size * micro_batches * seq_length * replicas: tokens trained per step.
  int64_t tokens_per_step = 0;
  // training.steps when the length is given in steps; 0 when given in epochs (then the ranks'
  // reported total_steps tells).
  int64_t total_steps = 0;
};

class StepAggregator {
 public:
  // Steps behind the recent means (step_seconds, tokens and wire bytes per second).
  static constexpr size_t kRecentSteps = 10;
  // Incomplete steps kept at most; a misbehaving rank cannot grow the map without bound.
  static constexpr size_t kMaxPendingSteps = 256;

  StepAggregator(StepFigures figures, uint32_t generation);

  // A new placement: partial steps of the old one can never complete and are dropped.
  void StartGeneration(uint32_t generation);

  // Adds one rank's report. When it completes its step, updates `progress` and returns the
  // step's row. Ignored (nullopt): another generation, a rank outside the job, a step the job
  // already has (progress->step or before), or a second report of one rank for one step.
  std::optional<v1::JobStep> Add(const v1::StepReport& report, int64_t now_unix_ms,
                                 v1::JobProgress* progress);

  // At a recovery the ranks resume from the newest complete checkpoint: the job's step drops
  // back to it. Returns the steps lost (done but not checkpointed).
  static int64_t RollBackToCheckpoint(v1::JobProgress* progress);

  size_t pending_steps() const { return pending_.size(); }

 private:
  struct PartialStep {
    std::vector<bool> reported;  // by rank
    int reports = 0;
    int checkpointed = 0;
    double loss_sum = 0;
    int losses = 0;
    double eval_loss_sum = 0;
    int eval_losses = 0;
    v1::EvalScores eval_scores_sum;
    int eval_scores = 0;
    double max_step_seconds = 0;
    double lr = 0;
    int64_t total_steps = 0;
    uint64_t raw[4] = {0, 0, 0, 0};  // forward, backward, dp, embedding
    uint64_t wire[4] = {0, 0, 0, 0};
  };
  struct RecentStep {
    double seconds = 0;
    uint64_t wire_bytes = 0;
  };

  int num_ranks() const { return figures_.num_stages * figures_.replicas; }
  v1::JobStep Complete(int64_t step, const PartialStep& partial, int64_t now_unix_ms,
                       v1::JobProgress* progress);

  StepFigures figures_;
  uint32_t generation_;
  std::map<int64_t, PartialStep> pending_;
  std::deque<RecentStep> recent_;
};

}  // namespace geotrain::coordinator
