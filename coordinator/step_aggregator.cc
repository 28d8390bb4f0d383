#include "coordinator/step_aggregator.h"

#include <algorithm>

namespace geotrain::coordinator {

StepAggregator::StepAggregator(StepFigures figures, uint32_t generation)
    : figures_(figures), generation_(generation) {}

void StepAggregator::StartGeneration(uint32_t generation) {
  generation_ = generation;
  pending_.clear();
}

std::optional<v1::JobStep> StepAggregator::Add(const v1::StepReport& report, int64_t now_unix_ms,
                                               v1::JobProgress* progress) {
  if (report.generation() != generation_) return std::nullopt;
  if (report.stage() < 0 || report.stage() >= figures_.num_stages || report.replica() < 0 ||
      report.replica() >= figures_.replicas) {
    return std::nullopt;
  }
  if (report.step() <= progress->step()) return std::nullopt;
  const int rank = report.replica() * figures_.num_stages + report.stage();

  auto it = pending_.find(report.step());
  if (it == pending_.end()) {
    if (pending_.size() >= kMaxPendingSteps) pending_.erase(pending_.begin());
    it = pending_.emplace(report.step(), PartialStep{}).first;
    it->second.reported.assign(num_ranks(), false);
  }
  PartialStep& partial = it->second;
  if (partial.reported[rank]) return std::nullopt;
  partial.reported[rank] = true;
  ++partial.reports;
  if (report.checkpointed()) ++partial.checkpointed;
  if (report.stage() == figures_.num_stages - 1) {
    if (report.has_loss()) {
      partial.loss_sum += report.loss();
      ++partial.losses;
    }
    if (report.has_eval_loss()) {
      partial.eval_loss_sum += report.eval_loss();
      ++partial.eval_losses;
    }
    if (report.has_eval_scores()) {
      v1::EvalScores& sum = partial.eval_scores_sum;
      sum.set_accuracy(sum.accuracy() + report.eval_scores().accuracy());
      sum.set_f1(sum.f1() + report.eval_scores().f1());
      sum.set_mcc(sum.mcc() + report.eval_scores().mcc());
      ++partial.eval_scores;
    }
  }
  partial.max_step_seconds = std::max(partial.max_step_seconds, report.step_seconds());
  // Every rank follows the same schedule; rank 0's value stands for all.
  if (rank == 0) partial.lr = report.lr();
  partial.total_steps = std::max(partial.total_steps, report.total_steps());
  partial.raw[0] += report.raw_bytes_forward();
  partial.raw[1] += report.raw_bytes_backward();
  partial.raw[2] += report.raw_bytes_dp();
  partial.raw[3] += report.raw_bytes_embedding();
  partial.wire[0] += report.wire_bytes_forward();
  partial.wire[1] += report.wire_bytes_backward();
  partial.wire[2] += report.wire_bytes_dp();
  partial.wire[3] += report.wire_bytes_embedding();
  if (partial.reports < num_ranks()) return std::nullopt;

  const int64_t step = it->first;
  v1::JobStep row = Complete(step, partial, now_unix_ms, progress);
  // This step and every older partial one are done with (see the header comment).
  pending_.erase(pending_.begin(), std::next(it));
  return row;
}

v1::JobStep StepAggregator::Complete(int64_t step, const PartialStep& partial, int64_t now_unix_ms,
                                     v1::JobProgress* progress) {
  uint64_t raw_bytes = 0;
  uint64_t wire_bytes = 0;
  for (int d = 0; d < 4; ++d) {
    raw_bytes += partial.raw[d];
    wire_bytes += partial.wire[d];
  }

  v1::JobStep row;
  row.set_step(step);
  row.set_generation(generation_);
  if (partial.losses > 0) row.set_loss(partial.loss_sum / partial.losses);
  if (partial.eval_losses > 0) row.set_eval_loss(partial.eval_loss_sum / partial.eval_losses);
  if (partial.eval_scores > 0) {
    // Every replica scores the predictions of all of them, so the mean is each one's figure.
    const double n = partial.eval_scores;
    v1::EvalScores* scores = row.mutable_eval_scores();
    scores->set_accuracy(partial.eval_scores_sum.accuracy() / n);
    scores->set_f1(partial.eval_scores_sum.f1() / n);
    scores->set_mcc(partial.eval_scores_sum.mcc() / n);
  }
  row.set_step_seconds(partial.max_step_seconds);
  row.set_raw_bytes(raw_bytes);
  row.set_wire_bytes(wire_bytes);
  row.set_lr(partial.lr);
  row.set_unix_ms(now_unix_ms);

  progress->set_step(step);
  const int64_t total = partial.total_steps > 0 ? partial.total_steps : figures_.total_steps;
  progress->set_total_steps(total);
  if (partial.losses > 0) {
    progress->set_loss(row.loss());
    // A training loss of exactly 0 does not happen, so 0 can mean "not yet" (kept across
    // restarts without a field of its own).
    if (progress->first_loss() == 0.0) progress->set_first_loss(row.loss());
  }
  if (row.has_eval_loss()) {
    progress->set_eval_loss(row.eval_loss());
    progress->set_eval_step(step);
    if (row.has_eval_scores()) {
      *progress->mutable_eval_scores() = row.eval_scores();
    } else {
      progress->clear_eval_scores();
    }
  }
  if (partial.checkpointed == num_ranks()) progress->set_checkpoint_step(step);

  progress->set_raw_bytes(progress->raw_bytes() + raw_bytes);
  progress->set_wire_bytes(progress->wire_bytes() + wire_bytes);
  progress->set_raw_bytes_forward(progress->raw_bytes_forward() + partial.raw[0]);
  progress->set_raw_bytes_backward(progress->raw_bytes_backward() + partial.raw[1]);
  progress->set_raw_bytes_dp(progress->raw_bytes_dp() + partial.raw[2]);
  progress->set_raw_bytes_embedding(progress->raw_bytes_embedding() + partial.raw[3]);
  progress->set_wire_bytes_forward(progress->wire_bytes_forward() + partial.wire[0]);
  progress->set_wire_bytes_backward(progress->wire_bytes_backward() + partial.wire[1]);
  progress->set_wire_bytes_dp(progress->wire_bytes_dp() + partial.wire[2]);
  progress->set_wire_bytes_embedding(progress->wire_bytes_embedding() + partial.wire[3]);

  recent_.push_back({partial.max_step_seconds, wire_bytes});
  while (recent_.size() > kRecentSteps) recent_.pop_front();
  double seconds = 0;
  uint64_t recent_wire = 0;
  for (const RecentStep& r : recent_) {
    seconds += r.seconds;
    recent_wire += r.wire_bytes;
  }
  const double mean_seconds = seconds / static_cast<double>(recent_.size());
  progress->set_step_seconds(mean_seconds);
  if (seconds > 0) {
    progress->set_tokens_per_second(static_cast<double>(figures_.tokens_per_step) / mean_seconds);
    progress->set_wire_bytes_per_second(static_cast<double>(recent_wire) / seconds);
  }
  progress->set_eta_seconds(total > step ? static_cast<double>(total - step) * mean_seconds : 0.0);
  return row;
}

int64_t StepAggregator::RollBackToCheckpoint(v1::JobProgress* progress) {
  const int64_t lost = std::max<int64_t>(0, progress->step() - progress->checkpoint_step());
  progress->set_step(progress->checkpoint_step());
  return lost;
}

}  // namespace geotrain::coordinator
