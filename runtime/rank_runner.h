// RunRank: trains one rank of a job to its end, the whole life of a training process: join the
// groups through a rendezvous store, load the stage, resume, run every step, report each one.
//
// Shared by geotrain-run (stores from --dist-url) and the worker daemon's task process (a store
// over the coordinator's key-value API), so both train the same way. Not thread-safe; one call
// per process is the intended use.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "common/status.h"
#include "runtime/config_change.h"
#include "runtime/stage_assignment.h"
#include "runtime/stage_runtime.h"

namespace geotrain::runtime {

struct RankRunOptions {
  StageAssignment assignment;
  // The rendezvous store of the job's groups; may be null when the job has one rank.
  c10::intrusive_ptr<c10d::Store> store;
  // The local address Gloo listens on (and peers connect to); empty: the host name's.
  std::string bind_address;
  // Prefix of the group names in the store (distinct per job placement).
  std::string group_prefix = "geotrain-run";
  // The job's frame key (net::GlooTransportOptions::frame_key): 32 bytes, or empty for frames in
  // the clear. The group names above key the sealing, so they must be new for every placement.
  std::string frame_key;
  // > 0: every link of this rank sends at most this many Mbit/s (net/paced_transport.h), an
  // emulated WAN for ranks sharing one machine; 0: the links as they are.
  double emulated_link_mbit = 0;
  // Where weights initialised from model_init_seed go (a directory of this rank's own);
  // empty: a directory under the system's temporary directory, removed when RunRank returns.
  std::string init_dir;
  // Called once before each step starts; what it returns is scheduled on the runtime
  // (StageRuntime::ScheduleCodecChange). Null: the settings never change.
  std::function<std::vector<CodecChange>()> poll_changes;
};

// A poll_changes over the file `path` (--config-changes; CodecChangeFile): each new change is
// logged and returned; a bad line or an unreadable file is logged as an error ("--config-changes
// PATH line 3: forward_bits: 9 is outside 2..8") and skipped, never stopping training.
std::function<std::vector<CodecChange>()> CodecChangePoller(const std::string& path);

// Errors name the rank ("rank 3 (stage 1, replica 1): ..."). `on_step` sees every step, with the
// process's peak_host_memory_bytes filled in.
Status RunRank(const RankRunOptions& options,
               const std::function<void(const StepResult&)>& on_step);

}  // namespace geotrain::runtime
