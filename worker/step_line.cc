#include "worker/step_line.h"

#include <cmath>

#include "runtime/step_line.h"

namespace geotrain::worker {
namespace {

v1::TrafficKind TrafficKindOf(runtime::TrafficKind kind) {
  switch (kind) {
    case runtime::TrafficKind::kActivation:
      return v1::TRAFFIC_KIND_ACTIVATION;
    case runtime::TrafficKind::kGradient:
      return v1::TRAFFIC_KIND_GRADIENT;
    case runtime::TrafficKind::kDataParallel:
      return v1::TRAFFIC_KIND_DATA_PARALLEL;
    case runtime::TrafficKind::kEmbedding:
      return v1::TRAFFIC_KIND_EMBEDDING;
  }
  return v1::TRAFFIC_KIND_UNSPECIFIED;
}

void CopyPhases(const runtime::StepPhases& from, v1::StepPhases* to) {
  to->set_forward(from.forward);
  to->set_backward(from.backward);
  to->set_encode(from.encode);
  to->set_decode(from.decode);
  to->set_send(from.send);
  to->set_recv(from.recv);
  to->set_sync(from.sync);
  to->set_optimizer(from.optimizer);
  to->set_data(from.data);
  to->set_eval(from.eval);
  to->set_checkpoint(from.checkpoint);
}

void CopyTraffic(const runtime::LinkTraffic& from, v1::LinkTraffic* to) {
  to->set_peer_stage(from.peer_stage);
  to->set_peer_replica(from.peer_replica);
  to->set_kind(TrafficKindOf(from.kind));
  to->set_sent(from.sent);
  to->set_raw_bytes(from.raw_bytes);
  to->set_wire_bytes(from.wire_bytes);
  to->set_seconds(from.seconds);
  to->set_bits(from.bits);
  to->set_relative_error(from.relative_error);
  if (from.latency_seconds) to->set_latency_seconds(*from.latency_seconds);
}

v1::StepReport StepReportOf(const runtime::StepLine& line) {
  const runtime::StepResult& r = line.result;
  v1::StepReport report;
  report.set_step(r.step);
  report.set_total_steps(r.total_steps);
  if (!std::isnan(r.loss)) report.set_loss(r.loss);  // a line has it only when finite
  if (r.eval_loss) report.set_eval_loss(*r.eval_loss);
  if (r.eval_metrics) {
    v1::EvalScores* scores = report.mutable_eval_scores();
    scores->set_accuracy(r.eval_metrics->accuracy);
    scores->set_f1(r.eval_metrics->f1);
    scores->set_mcc(r.eval_metrics->mcc);
  }
  report.set_lr(r.lr);
  report.set_grad_norm(r.grad_norm);
  report.set_compressed(r.compressed);
  report.set_checkpointed(r.checkpointed);
  report.set_forward_relative_error(r.forward_relative_error);
  report.set_backward_relative_error(r.backward_relative_error);
  report.set_tokens(r.tokens);
  report.set_step_seconds(r.step_seconds);
  report.set_compute_seconds(r.compute_seconds);
  report.set_codec_seconds(r.codec_seconds);
  report.set_comm_seconds(r.comm_seconds);
  if (r.peak_host_memory_bytes) report.set_peak_host_memory_bytes(*r.peak_host_memory_bytes);
  report.set_raw_bytes_forward(r.raw_bytes.forward);
  report.set_raw_bytes_backward(r.raw_bytes.backward);
  report.set_raw_bytes_dp(r.raw_bytes.dp);
  report.set_raw_bytes_embedding(r.raw_bytes.embedding);
  report.set_wire_bytes_forward(r.wire_bytes.forward);
  report.set_wire_bytes_backward(r.wire_bytes.backward);
  report.set_wire_bytes_dp(r.wire_bytes.dp);
  report.set_wire_bytes_embedding(r.wire_bytes.embedding);
  if (line.has_phases) CopyPhases(r.phases, report.mutable_phases());
  for (const runtime::LinkTraffic& traffic : r.traffic) CopyTraffic(traffic, report.add_traffic());
  return report;
}

}  // namespace

StatusOr<v1::StepReport> ParseStepLine(const std::string& line) {
  GEOTRAIN_ASSIGN_OR_RETURN(runtime::StepLine step_line, runtime::ParseStepLine(line));
  return StepReportOf(step_line);
}

}  // namespace geotrain::worker
