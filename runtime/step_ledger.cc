#include "runtime/step_ledger.h"

namespace geotrain::runtime {
namespace {

const TrafficKey kDataParallelSync = TrafficKey::Sync(TrafficKind::kDataParallel);
const TrafficKey kEmbeddingSync = TrafficKey::Sync(TrafficKind::kEmbedding);

// One part of the step's raw and wire bytes.
void SetBytes(uint64_t StepBytes::*part, const TrafficCount& count, StepResult* result) {
  result->raw_bytes.*part = count.raw_bytes;
  result->wire_bytes.*part = count.wire_bytes;
}

template <typename LinkEnd>
void ReadEnd(const std::unique_ptr<LinkEnd>& end, const TrafficKey& key, TrafficCounter* counter) {
  if (end) counter->Set(key, end->totals());
}

}  // namespace

StepLedger::StepLedger(const StageParts& parts)
    : assignment_(parts.assignment),
      ends_(parts.ends),
      data_parallel_(*parts.data_parallel),
      compressed_embedding_(parts.compressed_embedding != nullptr),
      meter_(parts.assignment, parts.links),
      to_next_{parts.assignment.stage + 1, parts.assignment.dp_rank, TrafficKind::kActivation,
               true},
      to_prev_{parts.assignment.stage - 1, parts.assignment.dp_rank, TrafficKind::kGradient, true},
      from_prev_{parts.assignment.stage - 1, parts.assignment.dp_rank, TrafficKind::kActivation,
                 false},
      from_next_{parts.assignment.stage + 1, parts.assignment.dp_rank, TrafficKind::kGradient,
                 false} {}

void StepLedger::Read() {
  ReadEnd(ends_.to_next, to_next_, &counter_);
  ReadEnd(ends_.to_prev, to_prev_, &counter_);
  ReadEnd(ends_.from_prev, from_prev_, &counter_);
  ReadEnd(ends_.from_next, from_next_, &counter_);
  counter_.Set(kDataParallelSync, data_parallel_.traffic());
}

void StepLedger::BeginSchedule() {
  Read();
  schedule_start_ = counter_;
}

void StepLedger::EndSchedule(double schedule_seconds, StepResult* result) {
  Read();
  const TrafficCount fwd = counter_.Since(schedule_start_, to_next_);
  const TrafficCount bwd = counter_.Since(schedule_start_, to_prev_);
  const TrafficCount in_prev = counter_.Since(schedule_start_, from_prev_);
  const TrafficCount in_next = counter_.Since(schedule_start_, from_next_);
  SetBytes(&StepBytes::forward, fwd, result);
  SetBytes(&StepBytes::backward, bwd, result);
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
  TrafficCount count;
  count.raw_bytes = raw;
  count.wire_bytes = wire;
  counter_.Add(kEmbeddingSync, count);
}

void StepLedger::EndStep(StepResult* result) {
  // Everything the syncs sent since the last step ended, the overlapped exchange included.
  Read();
  SetBytes(&StepBytes::dp, counter_.Since(step_reported_, kDataParallelSync), result);
  SetBytes(&StepBytes::embedding, counter_.Since(step_reported_, kEmbeddingSync), result);
  step_reported_ = counter_;
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
  Read();
  period.data_parallel = counter_.Total(kDataParallelSync);
  period.embedding = counter_.Total(kEmbeddingSync);
  meter_.Measure(period, &result->traffic);
}

}  // namespace geotrain::runtime
