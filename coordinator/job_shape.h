// What the placement planner needs to know about a job's step (planner::JobShape), from what the
// coordinator knows: the measured figures of its ranks' step reports once it ran, else the
// model's dimensions (ModelShape, read from config.json by `geotrain submit`) and the job spec's
// codecs, else GPT-2 small's dimensions. docs/placement.md says how each figure is made.
//
// StepShapeMeter is a plain value the core keeps per job (under its mutex); the free functions
// are pure.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/planner/step_cost_model.h"
#include "geotrain/v1/job.pb.h"
#include "geotrain/v1/worker.pb.h"
#include "runtime/job_spec.h"

namespace geotrain::coordinator {

// The measured figures of a job's steps, per stage, as medians of the recent compressed steps of
// every replica (one noisy step moves nothing).
class StepShapeMeter {
 public:
  StepShapeMeter() = default;
  StepShapeMeter(int num_stages, int micro_batches);

  // A step report of the job (any generation); uncompressed warm-up steps and steps that
  // evaluated or checkpointed are skipped, since their times are not a training step's.
  // `worker_speed`: WorkerSpeed of the worker that ran it (the figures are kept for speed 1).
  void Add(const v1::StepReport& report, double worker_speed);
  // Every stage has at least one step measured.
  bool complete() const;
  // Overwrites the compute and byte figures of `shape` (whose S and M must match) with the
  // measured ones. Precondition: complete().
  void ApplyTo(planner::JobShape& shape) const;

 private:
  struct StageFigures {
    std::vector<double> forward, backward;           // seconds per micro-batch
    std::vector<double> activation, gradient, sync;  // wire bytes
  };
  int num_stages_ = 0;
  int micro_batches_ = 1;
  std::vector<StageFigures> stages_;
};

// Wire bytes per raw byte of a codec as configured (fixpoint 8 bits: 0.25), for nominal shapes.
double NominalWireRatio(const compression::CodecConfig& codec);

// The shape of `spec` from the model's dimensions (`model`; all zero: GPT-2 small's) and the
// spec's codecs, with every compute figure for a worker of speed 1 (WorkerSpeed's reference).
planner::JobShape NominalShapeOf(const runtime::JobSpec& spec, const v1::ModelShape& model);

// A worker's compute speed relative to the reference (one CPU core, 1e10 FLOP/s) for a job on
// its CUDA device (`on_cuda`: a fixed 1e14 FLOP/s, no finer figure is known before it runs) or on
// its CPUs (by their count; a CPU job on a GPU worker never touches the GPU).
constexpr double kReferenceFlopsPerSecond = 1e10;
constexpr double kCudaWorkerSpeed = 1e14 / kReferenceFlopsPerSecond;
double WorkerSpeed(const v1::WorkerCapabilities& capabilities, bool on_cuda);

// The CUDA devices each worker of `spec` needs: 0 for model.device cpu (any worker runs it),
// N + 1 for cuda:N. 0 too for a device that does not parse (the spec was checked at submission).
int CudaDevicesNeeded(const runtime::JobSpec& spec);
// The CUDA devices a worker offers: cuda_device_count, or 1 from a worker too old to report the
// count whose device_kind is a CUDA one.
int CudaDevicesOf(const v1::WorkerCapabilities& capabilities);

}  // namespace geotrain::coordinator
