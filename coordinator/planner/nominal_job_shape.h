// A JobShape from model dimensions, for a job whose steps nothing has measured yet.
//
// GPT-2-style decoder: each layer holds 12*h^2 parameters, forward + backward cost 6 FLOPs per
// parameter per token (forward 2, backward 4), the tied token embedding (vocab*h, plus seq*h
// positions) sits on stage 0 and again as the LM head on the last stage, whose logits cost
// 6*vocab*h FLOPs per token. A boundary carries mbs*seq*h float32 values (4 bytes each) times
// the codec's wire/raw ratio. The formulas are in docs/placement.md. Thread-safe.
#pragma once

#include <cstdint>

#include "coordinator/planner/step_cost_model.h"

namespace geotrain::planner {

// Layers split as evenly as possible, the first (layers % num_stages) stages taking one more.
// Preconditions: num_stages, replicas, micro_batches, micro_batch_size, seq_length, hidden_size,
// flops_per_second_at_speed_1 > 0; layers, vocab_size >= 0; wire ratios in (0, 1] or so (they
// scale bytes). Values outside are clamped (counts to 1, ratios and sizes to 0) so the result
// always passes CheckJobShape.
JobShape NominalJobShape(int num_stages, int replicas, int micro_batches, int64_t micro_batch_size,
                         int64_t seq_length, int64_t hidden_size, int64_t layers,
                         int64_t vocab_size, double forward_wire_ratio, double backward_wire_ratio,
                         double sync_wire_ratio, double flops_per_second_at_speed_1);

}  // namespace geotrain::planner
