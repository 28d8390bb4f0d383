// Global gradient-norm clipping, split in three so the squared norms of all stages can be summed
// across the pipeline between the steps (each stage holds only its own parameters):
//
//   local = SquaredGradNorm(params)            on every stage
//   total = sqrt(sum of local over the stages) the runtime's all-reduce
//   ScaleGrads(params, ClipCoefficient(total, max_norm))
//
// Together they equal torch.nn.utils.clip_grad_norm_(params, max_norm) with norm_type 2 over the
// whole model. Sums run in double so the result does not depend on the stage split more than
// rounding of double allows. Not thread-safe with anything that writes the gradients.
#pragma once

#include <vector>

#include "models/transformer/parameter_table.h"

namespace geotrain::runtime {

// Sum of the squares of every defined gradient's elements, accumulated in double whatever the
// gradients' dtype (half-precision squares would overflow). Parameters without a grad add 0.
double SquaredGradNorm(const std::vector<models::NamedParameter>& parameters);

// torch's clip_grad_norm_ factor: min(1, max_norm / (total_norm + 1e-6)); 1 when max_norm <= 0
// (clipping off). As in torch, an infinite norm gives 0 and a NaN norm gives NaN.
double ClipCoefficient(double total_norm, double max_norm);

// Multiplies every defined gradient by `coefficient` in place; nothing to do when it is 1.
void ScaleGrads(const std::vector<models::NamedParameter>& parameters, double coefficient);

}  // namespace geotrain::runtime
