// ChooseDataParallelBackend: which collective carries a stage's data-parallel gradient
// all-reduce, NCCL on the GPUs or the Gloo transport's ring over TCP.
//
// NCCL only where it is safe and pays: the stage computes on CUDA (the gradients are already on
// the device), the mode is a plain all-reduce (every other mode compresses on the host, where
// the codecs run), and every replica of the stage is known to run in one region (NCCL has no
// per-operation deadline, no per-link byte counts and no frame sealing, which the WAN links
// need; inside a region, NVLink / InfiniBand / a data-centre network make it several times
// faster than a TCP ring). Unknown regions (geotrain-run, which has no placement) mean Gloo.
//
// Every rank of the group computes the same answer from the same job and placement, so they
// never disagree on which collective to join. LibTorch-free (library geotrain_runtime_config);
// whether this build has NCCL at all is net/device_all_reduce.h's NcclBuilt(). Thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/stage_assignment.h"

namespace geotrain::runtime {

enum class DataParallelBackend : uint8_t {
  kGloo = 0,  // links.data_parallel's AllReduceSum on host float32 buffers
  kNccl = 1,  // c10d ProcessGroupNCCL on a flat float32 device tensor
};

const char* DataParallelBackendName(DataParallelBackend backend);  // "gloo", "nccl"

// The rule above for `assignment`'s stage. `why`, when given, receives the reason in words
// ("the 2 replicas of stage 0 are all in us-east", "device is cpu"), for the log.
DataParallelBackend ChooseDataParallelBackend(const StageAssignment& assignment,
                                              std::string* why = nullptr);

}  // namespace geotrain::runtime
