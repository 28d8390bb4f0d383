#include "runtime/step_ledger.h"

namespace geotrain::runtime {
namespace {

template <typename LinkEnd>
LinkTotals TotalsOf(const std::unique_ptr<LinkEnd>& end) {
  return end ? end->totals() : LinkTotals{};
}

}  // namespace

StepLedger::StepLedger(const StageParts& parts)
    : assignment_(parts.assignment),
      ends_(parts.ends),
      data_parallel_(*parts.data_parallel),
      compressed_embedding_(parts.compressed_embedding != nullptr),
      meter_(parts.assignment, parts.links) {}

StepLedger::EndTotals StepLedger::ReadEnds() const {
  return {TotalsOf(ends_.to_next), TotalsOf(ends_.to_prev), TotalsOf(ends_.from_prev),
          TotalsOf(ends_.from_next)};
}

void StepLedger::BeginSchedule() { schedule_start_ = ReadEnds(); }

void StepLedger::EndSchedule(double schedule_seconds, StepResult* result) {
  const EndTotals now = ReadEnds();
  const LinkTotals fwd = now.to_next - schedule_start_.to_next;
  const LinkTotals bwd = now.to_prev - schedule_start_.to_prev;
  const LinkTotals in_prev = now.from_prev - schedule_start_.from_prev;
  const LinkTotals in_next = now.from_next - schedule_start_.from_next;
  result->raw_bytes.forward = fwd.raw_bytes;
  result->wire_bytes.forward = fwd.wire_bytes;
  result->raw_bytes.backward = bwd.raw_bytes;
  result->wire_bytes.backward = bwd.wire_bytes;
  result->forward_relative_error = fwd.frames ? fwd.relative_error_sum / fwd.frames : 0;
  result->backward_relative_error = bwd.frames ? bwd.relative_error_sum / bwd.frames : 0;
  StepPhases& phases = result->phases;
  phases.encode = fwd.codec_seconds + bwd.codec_seconds;
  phases.decode = in_prev.codec_seconds + in_next.codec_seconds;
  phases.send = fwd.wait_seconds + bwd.wait_seconds;
  phases.recv = in_prev.wait_seconds + in_next.wait_seconds;
  result->codec_seconds =
      fwd.codec_seconds + bwd.codec_seconds + in_prev.codec_seconds + in_next.codec_seconds;
  result->comm_seconds =
      fwd.wait_seconds + bwd.wait_seconds + in_prev.wait_seconds + in_next.wait_seconds;
  result->compute_seconds = schedule_seconds - result->codec_seconds - result->comm_seconds;
}

void StepLedger::AddEmbedding(uint64_t raw, uint64_t wire) {
  embedding_.raw_bytes += raw;
  embedding_.wire_bytes += wire;
}

void StepLedger::EndStep(StepResult* result) {
  // Everything the sync sent since the last step ended, the overlapped exchange included.
  const DataParallelTraffic dp = data_parallel_.traffic();
  result->raw_bytes.dp = dp.raw_bytes - data_parallel_reported_.raw_bytes;
  result->wire_bytes.dp = dp.wire_bytes - data_parallel_reported_.wire_bytes;
  data_parallel_reported_ = dp;
  result->raw_bytes.embedding = embedding_.raw_bytes - embedding_reported_.raw_bytes;
  result->wire_bytes.embedding = embedding_.wire_bytes - embedding_reported_.wire_bytes;
  embedding_reported_ = embedding_;
}

void StepLedger::EndReport(const DataParallelSettings& data_parallel, StepResult* result) {
  const CompressionSettings& compression = assignment_.compression;
  // The step's codecs; an evaluation in the same period sends float32 whatever they are.
  const bool compressed = result->compressed;
  TrafficPeriod period;
  // Sent: the codecs as adaptive compression left them. Received: the job's settings, since a
  // peer's own changes are not told to this rank (its frames carry them; its report shows them).
  period.activation_bits =
      compressed ? CodecBits(ends_.to_next ? ends_.to_next->codec_config() : compression.forward)
                 : 32;
  period.gradient_bits =
      compressed ? CodecBits(ends_.to_prev ? ends_.to_prev->codec_config() : compression.backward)
                 : 32;
  period.received_activation_bits = compressed ? CodecBits(compression.forward) : 32;
  period.received_gradient_bits = compressed ? CodecBits(compression.backward) : 32;
  period.data_parallel_bits = compressed ? DataParallelBits(data_parallel, assignment_.stage) : 32;
  period.embedding_bits =
      compressed && compressed_embedding_ ? CodecBits(compression.data_parallel.codec) : 32;
  period.activation_relative_error = result->forward_relative_error;
  period.gradient_relative_error = result->backward_relative_error;
  period.data_parallel = data_parallel_.traffic();
  period.embedding = embedding_;
  meter_.Measure(period, &result->traffic);
}

}  // namespace geotrain::runtime
