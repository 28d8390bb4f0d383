// CheckpointStore: one rank's checkpoints in a directory shared by every rank of a job.
//
// A job of S stages x D replicas checkpoints step N as
//
//   dir/step-00000100/job.json                       {"num_stages": S, "dp_size": D, ...}
//   dir/step-00000100/stage-01.replica-00/           this rank's part:
//       model.safetensors      Hugging Face tensor names, float32 (`geotrain checkpoint merge`
//                              combines the stages' model.safetensors into one model)
//       optimizer.safetensors  optimizer state, float32
//       extra.safetensors      data-parallel / codec state, float32
//       state.json             magic, version, step, rank, each file's size and fingerprint,
//                              small integer tensors (counters), and the caller's JSON state
//   dir/step-00000100/stage-01.replica-00.done       marker, written last
//
// A part is written into stage-01.replica-00.tmp-<pid>-<n>, fsynced and renamed into place (an
// atomic exchange when the part already exists), then the marker is written atomically. A step is
// complete when all S*D markers exist, so a crash at any point leaves either the previous
// checkpoint or the new one, never a half-written one that counts. job.json guards against
// reading a checkpoint of another layout: a mismatch is an error, never a silent fallback.
//
// Floating-point tensors of any dtype and device are stored as float32 and read back as CPU
// float32. Integer and bool tensors (counters such as "adamw.step") go into state.json, since the
// safetensors writer offers only float types; at most kMaxIntegerElements each, read back with
// their dtype (checkpoint_integer_tensors.h). Reading validates every field and file and reports
// the file and field at fault. Every file operation goes through an io::Env (common/io/env.h), so
// tests can inject a full disk or a failing rename.
//
// Thread-safety: one CheckpointStore per rank; Write must not run concurrently with itself for
// the same rank. Different ranks may Write, and any ranks may Prune, concurrently (threads or
// processes). NewestComplete and Read are safe alongside writers of other steps.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/io/env.h"
#include "common/status.h"
#include "runtime/checkpoint_integer_tensors.h"

namespace geotrain::runtime {

struct RankCheckpoint {
  int64_t step = 0;
  std::map<std::string, at::Tensor> model;      // stage parameters, Hugging Face names
  std::map<std::string, at::Tensor> optimizer;  // e.g. AdamW::StateTensors()
  std::map<std::string, at::Tensor> extra;      // data-parallel / codec state
  nlohmann::json state;  // lr schedule, RNG, data position, anything else (null allowed)
};

class CheckpointStore {
 public:
  // Largest integer tensor kept in state.json (counters, not data).
  static constexpr int64_t kMaxIntegerElements = kMaxIntegerTensorElements;

  // Creates `dir` if needed. Errors: ranks out of range, `dir` not creatable. `env` must outlive
  // the store.
  static StatusOr<CheckpointStore> Open(const std::string& dir, int stage, int num_stages,
                                        int dp_rank, int dp_size,
                                        io::Env* env = io::Env::Default());

  // Writes this rank's part of checkpoint.step (>= 0), replacing an earlier part of the same step
  // atomically. On failure nothing already saved changes and the temporary directory is removed;
  // the step's marker is never written, so the step does not count as complete. A full disk is
  // ResourceExhausted (naming ENOSPC, common/io/errno_status.h); other I/O errors are Unavailable.
  Status Write(const RankCheckpoint& checkpoint);

  // The newest step whose S*D markers all exist; nullopt when there is none. Errors: a step at or
  // after it whose job.json is another layout or unreadable, an unlistable directory.
  StatusOr<std::optional<int64_t>> NewestComplete() const;

  // This rank's part of complete checkpoint `step`, validated (sizes, fingerprints, headers,
  // step and rank in state.json). Errors name the file and the field.
  StatusOr<RankCheckpoint> Read(int64_t step) const;

  // Deletes complete checkpoints older than the newest `keep` (>= 1), incomplete ones older than
  // the newest complete one (abandoned writes), and steps an interrupted Prune renamed aside. A
  // step is renamed away before it is deleted, so a concurrent reader never sees it half-deleted
  // and concurrent Prunes delete it once.
  Status Prune(int keep);

  const std::string& dir() const { return dir_; }
  // dir/step-00000100
  std::string StepDir(int64_t step) const;
  // "stage-01.replica-00": the part's directory name in a step directory.
  std::string PartName() const;

 private:
  CheckpointStore(io::Env* env, std::string dir, int stage, int num_stages, int dp_rank,
                  int dp_size)
      : env_(env),
        dir_(std::move(dir)),
        stage_(stage),
        num_stages_(num_stages),
        dp_rank_(dp_rank),
        dp_size_(dp_size) {}

  // Steps with a directory in dir_, newest first.
  StatusOr<std::vector<int64_t>> ListSteps() const;
  // Missing markers of `step` (empty: complete).
  std::vector<std::string> MissingMarkers(int64_t step) const;
  // OK when step's job.json is absent (*present = false) or matches this layout.
  Status CheckJobFile(int64_t step, bool* present) const;
  Status WriteJobFile(int64_t step) const;
  Status WritePart(const RankCheckpoint& checkpoint, const std::string& part_dir) const;
  Status CheckMarker(int64_t step) const;
  // Renames the step directory aside, then deletes it; a step already gone is not an error.
  Status DeleteStep(int64_t step) const;

  io::Env* env_;
  std::string dir_;
  int stage_;
  int num_stages_;
  int dp_rank_;
  int dp_size_;
};

}  // namespace geotrain::runtime
