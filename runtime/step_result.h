// StepResult: what one step of one rank reports, as plain values: the loss, the learning rate,
// seconds per phase, bytes per direction and the traffic of each link. StageRuntime fills it;
// step_line.h writes it as the step line and reads it back.
//
// LibTorch-free (library geotrain_runtime_config), so the worker daemon, the coordinator and the
// CLI can read step reports without the training loop. Plain structs; thread-compatible.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/classification_metrics.h"

namespace geotrain::runtime {

// Bytes of one step, from this rank's sends.
struct StepBytes {
  uint64_t forward = 0;    // activations sent downstream
  uint64_t backward = 0;   // gradients sent upstream
  uint64_t dp = 0;         // data-parallel sync
  uint64_t embedding = 0;  // tied-embedding sync between the first and last stages
};

// Seconds of one step by phase (and of the evaluation and checkpoint Run() did after it). Each
// is measured on its own, so they sum to about step_seconds plus eval and checkpoint.
struct StepPhases {
  double forward = 0;     // stage compute of the forwards and the loss
  double backward = 0;    // autograd of the backwards
  double encode = 0;      // pipeline links' codecs, sending side
  double decode = 0;      // pipeline links' codecs, receiving side
  double send = 0;        // blocked flushing queued pipeline sends
  double recv = 0;        // blocked waiting for a pipeline tensor
  double sync = 0;        // embedding sync, data-parallel hooks, gradient-norm all-reduce
  double optimizer = 0;   // AdamW moments and update, zeroing the gradients
  double data = 0;        // reading batches (first stage) and labels (last stage)
  double eval = 0;        // the evaluation Run() did after the step
  double checkpoint = 0;  // the checkpoint Run() wrote after the step
};

enum class TrafficKind { kActivation, kGradient, kDataParallel, kEmbedding };

// The step line's spelling of each kind, in the order of the enum (and of the proto's values
// after UNSPECIFIED).
inline constexpr std::pair<const char*, TrafficKind> kTrafficKindNames[] = {
    {"activation", TrafficKind::kActivation},
    {"gradient", TrafficKind::kGradient},
    {"data_parallel", TrafficKind::kDataParallel},
    {"embedding", TrafficKind::kEmbedding}};

// "activation", "gradient", "data_parallel", "embedding".
const char* TrafficKindName(TrafficKind kind);

// Traffic between this rank and one peer of one kind in one direction, over one report period
// (step_traffic.h measures it).
struct LinkTraffic {
  int peer_stage = 0;
  int peer_replica = 0;
  TrafficKind kind = TrafficKind::kActivation;
  bool sent = false;        // false: received
  uint64_t raw_bytes = 0;   // before compression
  uint64_t wire_bytes = 0;  // frame bytes
  double seconds = 0;       // posting to completion of the transfers (a lower bound on throughput)
  uint32_t bits = 0;        // bits per value of the codec (32: float32; 0: no single bit width)
  double relative_error = 0;  // mean of the frames sent (sent activations and gradients only)
  std::optional<double> latency_seconds;  // fastest recent frame of <= 4 KiB with this peer
};

struct StepResult {
  int64_t step = 0;  // 1-based: the number of steps done after this one
  double loss = std::numeric_limits<double>::quiet_NaN();  // mean micro-batch loss; last stage
  double lr = 0;
  double grad_norm = 0;     // before clipping, over the whole replica
  bool compressed = false;  // false during the uncompressed warm-up
  double step_seconds = 0;
  double compute_seconds = 0;  // forward, backward, optimizer
  double codec_seconds = 0;    // encoding and decoding pipeline tensors
  double comm_seconds = 0;     // blocked on a link or a collective
  StepBytes raw_bytes;
  StepBytes wire_bytes;
  double forward_relative_error = 0;  // mean over this step's activation frames sent
  std::optional<double> eval_loss;    // when the step ended with an evaluation (last stage)
  // A classifier's evaluation scores, with eval_loss (data.task sequence_classification).
  std::optional<ClassificationMetrics> eval_metrics;
  bool checkpointed = false;  // this rank wrote its part of the checkpoint of `step`
  // Why this rank's part of the checkpoint of `step` could not be written (disk full, storage
  // gone); empty when it was written or none was due. Training went on: see Run().
  std::string checkpoint_error;
  int64_t total_steps = 0;  // training.total_steps (known once the data is open)
  StepPhases phases;
  int64_t tokens = 0;                  // micro_batches x micro_batch_size x seq_length
  double backward_relative_error = 0;  // mean over this step's gradient frames sent upstream
  // Per peer, kind and direction since the previous report (Step() or Run()'s on_step), so an
  // evaluation's activations and a checkpoint's data-parallel flush count in their step.
  std::vector<LinkTraffic> traffic;
  // The rank process's peak resident memory up to the end of the step (getrusage ru_maxrss):
  // the most host memory it held at any time so far, so it never falls. Filled by RunRank, which
  // owns the process; unset where the runtime runs inside another (tests).
  std::optional<uint64_t> peak_host_memory_bytes;
};

}  // namespace geotrain::runtime
