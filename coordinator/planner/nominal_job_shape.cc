#include "coordinator/planner/nominal_job_shape.h"

#include <algorithm>
#include <cmath>

namespace geotrain::planner {
namespace {

double NonNegative(double v) { return std::isfinite(v) && v > 0 ? v : 0; }

}  // namespace

JobShape NominalJobShape(int num_stages, int replicas, int micro_batches, int64_t micro_batch_size,
                         int64_t seq_length, int64_t hidden_size, int64_t layers,
                         int64_t vocab_size, double forward_wire_ratio, double backward_wire_ratio,
                         double sync_wire_ratio, double flops_per_second_at_speed_1) {
  JobShape shape;
  shape.num_stages = std::max(num_stages, 1);
  shape.replicas = std::max(replicas, 1);
  shape.micro_batches = std::max(micro_batches, 1);
  const size_t s_count = static_cast<size_t>(shape.num_stages);
  const double h = NonNegative(static_cast<double>(hidden_size));
  const double seq = NonNegative(static_cast<double>(seq_length));
  const double tokens = NonNegative(static_cast<double>(micro_batch_size)) * seq;
  const double vocab = NonNegative(static_cast<double>(vocab_size));
  const double flops = flops_per_second_at_speed_1 > 0 && std::isfinite(flops_per_second_at_speed_1)
                           ? flops_per_second_at_speed_1
                           : 1;
  const int64_t total_layers = std::max<int64_t>(layers, 0);

  const double layer_params = 12.0 * h * h;
  const double embedding_params = vocab * h;
  for (size_t s = 0; s < s_count; ++s) {
    const int64_t stage_layers =
        total_layers / shape.num_stages +
        (static_cast<int64_t>(s) < total_layers % shape.num_stages ? 1 : 0);
    // Parameters whose gradients the stage group syncs, and the FLOPs of one micro-batch.
    double params = layer_params * static_cast<double>(stage_layers);
    double compute_params = params;
    if (s == 0) params += embedding_params + seq * h;  // lookups: no matmul FLOPs
    if (s + 1 == s_count) {
      if (s_count > 1) params += embedding_params;  // the tied LM head's copy
      compute_params += embedding_params;           // the logits matmul
    }
    shape.forward_seconds.push_back(2.0 * compute_params * tokens / flops);
    shape.backward_seconds.push_back(4.0 * compute_params * tokens / flops);
    shape.sync_bytes.push_back(params * 4.0 * NonNegative(sync_wire_ratio));
  }
  const double boundary_raw = tokens * h * 4.0;
  for (size_t s = 0; s + 1 < s_count; ++s) {
    shape.activation_bytes.push_back(boundary_raw * NonNegative(forward_wire_ratio));
    shape.gradient_bytes.push_back(boundary_raw * NonNegative(backward_wire_ratio));
  }
  return shape;
}

}  // namespace geotrain::planner
