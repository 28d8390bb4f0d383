// FaultInjectingStateStore: a StateStore for tests that passes every call on to a real store
// (the SQLite one) and fails chosen writes with a chosen Status instead, the way a full or broken
// disk would: the write does not reach the real store, so the database holds what it would hold
// after such a failure. Reads (Load, EventsAfter, LogLinesAfter, StepsAfter) always pass.
//
// Writes are the calls that change the database: NextWorkerNumber, NextJobNumber, PutWorker,
// PutJob, Sync, AppendLogLines, PutFrameKey, DeleteFrameKey, PutStep, PutLinks. Thread-safe, like
// the store it wraps.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "coordinator/state_store.h"

namespace geotrain::coordinator::testing {

class FaultInjectingStateStore final : public StateStore {
 public:
  // `base` is not owned and must outlive this store.
  explicit FaultInjectingStateStore(StateStore* base) : base_(base) {}

  // The `n`-th write from now on (1: the next one) fails with `error`; the writes after it pass.
  void FailNthWrite(int n, Status error) { Arm(n, std::move(error), /*lasting=*/false); }
  // The `n`-th write from now on and every write after it fail with `error`.
  void FailWritesFrom(int n, Status error) { Arm(n, std::move(error), /*lasting=*/true); }

  // Writes attempted since construction (failed ones included), and how many of them failed.
  int writes() const {
    std::lock_guard<std::mutex> lock(mu_);
    return writes_;
  }
  int failed_writes() const {
    std::lock_guard<std::mutex> lock(mu_);
    return failed_writes_;
  }

  StatusOr<StoredState> Load() override { return base_->Load(); }
  StatusOr<uint64_t> NextWorkerNumber() override {
    GEOTRAIN_RETURN_IF_ERROR(Fault());
    return base_->NextWorkerNumber();
  }
  StatusOr<uint64_t> NextJobNumber() override {
    GEOTRAIN_RETURN_IF_ERROR(Fault());
    return base_->NextJobNumber();
  }
  Status PutWorker(const v1::Worker& worker) override {
    GEOTRAIN_RETURN_IF_ERROR(Fault());
    return base_->PutWorker(worker);
  }
  Status PutJob(const v1::Job& job, const std::vector<v1::JobEvent>& events) override {
    GEOTRAIN_RETURN_IF_ERROR(Fault());
    return base_->PutJob(job, events);
  }
  Status Sync() override {
    GEOTRAIN_RETURN_IF_ERROR(Fault());
    return base_->Sync();
  }
  Status AppendLogLines(const std::string& job_id,
                        const std::vector<v1::SequencedLogLine>& lines) override {
    GEOTRAIN_RETURN_IF_ERROR(Fault());
    return base_->AppendLogLines(job_id, lines);
  }
  Status PutFrameKey(const std::string& job_id, const std::string& frame_key) override {
    GEOTRAIN_RETURN_IF_ERROR(Fault());
    return base_->PutFrameKey(job_id, frame_key);
  }
  Status DeleteFrameKey(const std::string& job_id) override {
    GEOTRAIN_RETURN_IF_ERROR(Fault());
    return base_->DeleteFrameKey(job_id);
  }
  Status PutStep(const std::string& job_id, const v1::JobStep& step) override {
    GEOTRAIN_RETURN_IF_ERROR(Fault());
    return base_->PutStep(job_id, step);
  }
  Status PutLinks(const std::vector<LinkFigures>& links,
                  const std::vector<std::string>& forgotten_workers) override {
    GEOTRAIN_RETURN_IF_ERROR(Fault());
    return base_->PutLinks(links, forgotten_workers);
  }

  StatusOr<std::vector<v1::JobEvent>> EventsAfter(const std::string& job_id, int64_t after_sequence,
                                                  int limit) override {
    return base_->EventsAfter(job_id, after_sequence, limit);
  }
  StatusOr<std::vector<v1::SequencedLogLine>> LogLinesAfter(const std::string& job_id,
                                                            int64_t after_sequence,
                                                            int limit) override {
    return base_->LogLinesAfter(job_id, after_sequence, limit);
  }
  StatusOr<std::vector<v1::JobStep>> StepsAfter(const std::string& job_id,
                                                int64_t after_step) override {
    return base_->StepsAfter(job_id, after_step);
  }

 private:
  void Arm(int n, Status error, bool lasting) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_at_ = writes_ + n;
    lasting_ = lasting;
    error_ = std::move(error);
  }

  // Counts one write; its injected error, or OK to pass it on.
  Status Fault() {
    std::lock_guard<std::mutex> lock(mu_);
    const int number = ++writes_;
    if (fail_at_ == 0 || number < fail_at_ || (number > fail_at_ && !lasting_)) {
      return OkStatus();
    }
    ++failed_writes_;
    return error_;
  }

  StateStore* const base_;
  mutable std::mutex mu_;
  int writes_ = 0;
  int failed_writes_ = 0;
  int fail_at_ = 0;  // the number of the first write to fail; 0: none
  bool lasting_ = false;
  Status error_;
};

}  // namespace geotrain::coordinator::testing
