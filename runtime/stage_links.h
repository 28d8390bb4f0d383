// StageLinks: the transports one rank of a job trains over, and how they are formed.
//
// For stage s of replica r in a job of S stages and D replicas:
//   upstream      pair group {stage s-1, stage s} of replica r (we are its rank 1); s > 0 only
//   downstream    pair group {stage s, stage s+1} of replica r (we are its rank 0); s < S-1 only
//   data_parallel stage s of every replica, rank = replica; D > 1 only
//   embedding     tied embeddings with S > 1, first and last stages only: with fused sync the
//                 first and last stages of every replica (rank 2r: first, 2r+1: last; Optimus-CC
//                 fused embedding synchronisation), otherwise the pair {first, last} of replica r
//
//   data_parallel_device  the same replicas over NCCL, when ChooseDataParallelBackend says so
//                 (dp_backend.h: CUDA, all-reduce, one region); the gradient all-reduce then uses
//                 it and data_parallel carries the rest (evaluation sums)
//
// Gloo groups are joined in one global order (pipeline pairs by replica and stage, then
// data-parallel groups by stage, then embedding groups), so ranks blocked in rendezvous always
// wait on a group whose members all reach it: no deadlock whatever the timing.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "common/status.h"
#include "net/device_all_reduce.h"
#include "net/transport.h"
#include "runtime/stage_assignment.h"

namespace geotrain::runtime {

struct StageLinks {
  std::unique_ptr<net::Transport> upstream;
  std::unique_ptr<net::Transport> downstream;
  std::unique_ptr<net::Transport> data_parallel;
  std::unique_ptr<net::Transport> embedding;
  std::unique_ptr<net::DeviceAllReduce> data_parallel_device;  // null: gradients over Gloo
};

// Whether the job needs embedding groups: tied embeddings split over more than one stage.
bool NeedsEmbeddingGroup(const StageAssignment& assignment, bool tied_embeddings);
// Whether the embedding group is the fused one (all replicas) rather than a per-replica pair.
bool UsesFusedEmbeddingGroup(const StageAssignment& assignment);

// Joins this rank's Gloo groups through `store` (shared by the job's ranks), all of them within
// training.timeout_seconds together (DEADLINE_EXCEEDED naming the group, the step and the peer
// otherwise: net/gloo_transport.h). `job_name` prefixes
// the group names so that several incarnations of a job can share one store. With a
// `frame_key` (32 bytes; empty: in the clear) every group seals its frames under a subkey of
// it derived from the group's name (net/frame_sealer.h). The NCCL group, when the job gets one,
// is made through the same store under its own prefix (its communicator at the first step).
StatusOr<StageLinks> ConnectGlooStageLinks(const StageAssignment& assignment, bool tied_embeddings,
                                           c10::intrusive_ptr<c10d::Store> store,
                                           const std::string& bind_address,
                                           const std::string& job_name,
                                           const std::string& frame_key = "");

// In-process links for every rank of a job (fake transports), indexed by global rank
// (dp_rank * num_stages + stage). For tests and single-process benchmarks; with a `frame_key`
// they seal their frames as Gloo links do (an invalid key aborts: a caller bug).
std::vector<StageLinks> CreateFakeJobLinks(int num_stages, int dp_size, bool tied_embeddings,
                                           bool fused_embedding_sync,
                                           const std::string& frame_key = "");

}  // namespace geotrain::runtime
