// SumOverPipeline: adds one number (or a vector) over the stages of a replica along the pipeline
// links.
//
// Global-norm gradient clipping needs Σ‖g‖² over every stage. The stages of a replica share no
// group of their own (only adjacent pairs), so the partial sum travels down the chain and the
// total comes back up: 2 (S - 1) small messages, once per step. The links must be idle (every
// tensor send of the step flushed, every expected message received), since these frames follow
// the step's traffic in order.
#pragma once

#include "common/status.h"
#include "net/transport.h"

namespace geotrain::runtime {

// `upstream` / `downstream` are the stage's pair links (null at the ends of the pipeline).
StatusOr<double> SumOverPipeline(double local, net::Transport* upstream, net::Transport* downstream,
                                 net::Timeout timeout);

// The same for a vector, in place: every stage ends with the element-wise total, bit for bit
// the same on every stage (one order of additions, stage 0 first). The gradients of a tensor
// every stage holds a copy of (DeBERTa's relative embeddings) add up this way. Every stage must
// pass as many values.
Status SumOverPipeline(Span<float> values, net::Transport* upstream, net::Transport* downstream,
                       net::Timeout timeout);

}  // namespace geotrain::runtime
