// StateStore: the coordinator's durable state (workers, jobs, job events, job log lines, job
// steps, id counters, link estimates), so that a coordinator killed at any moment and restarted
// loses nothing it acknowledged.
//
// Records are the proto messages themselves (serialised), next to the columns that are queried.
// Every method is one transaction: it happened completely or not at all. An error from a write
// means it did not happen; the core then acknowledges nothing more and writes nothing more until
// it is restarted (coordinator_core.h, "Failure policy"), which is what keeps that promise.
//
// Thread-safe: the core writes under its own mutex while RPC threads read events, log lines and
// steps directly.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "coordinator/link_table.h"
#include "geotrain/v1/coordinator.pb.h"
#include "geotrain/v1/job.pb.h"
#include "geotrain/v1/worker.pb.h"

namespace geotrain::coordinator {

// Everything the core needs at start-up.
struct StoredState {
  std::vector<v1::Worker> workers;
  std::vector<v1::Job> jobs;  // by job number (submission order)
  // The highest event / log sequence number of each job that has any.
  std::map<std::string, int64_t> last_event_sequence;
  std::map<std::string, int64_t> last_log_sequence;
  // Every stored link estimate, by (src, dst).
  std::vector<LinkFigures> links;
  // Each job's data-plane frame key (Assignment.frame_key), by job id; jobs stored before keys
  // existed have none.
  std::map<std::string, std::string> frame_keys;
};

class StateStore {
 public:
  // Log lines kept per job; older ones are deleted as new ones arrive.
  static constexpr int64_t kMaxLogLinesPerJob = 20000;

  virtual ~StateStore() = default;

  virtual StatusOr<StoredState> Load() = 0;

  // Counters behind "w-N" and "job-N": each call returns the next number and persists it first,
  // so no number is handed out twice, across restarts too.
  virtual StatusOr<uint64_t> NextWorkerNumber() = 0;
  virtual StatusOr<uint64_t> NextJobNumber() = 0;

  virtual Status PutWorker(const v1::Worker& worker) = 0;
  // Writes the job record and appends `events` (possibly none) together.
  virtual Status PutJob(const v1::Job& job, const std::vector<v1::JobEvent>& events) = 0;
  // Makes every write so far survive a power cut, not only a killed process. The writes above
  // need not (a commit may wait in the OS's cache); the coordinator calls this where a lost
  // write would be unsafe: a new generation's record, before any rank is told of it (the ranks'
  // frame nonces are derived from the job's key and the generation, so a generation handed out
  // twice would repeat them). Counts as a write (it can fail like one).
  virtual Status Sync() = 0;
  // Appends a job's log lines and drops those beyond kMaxLogLinesPerJob.
  virtual Status AppendLogLines(const std::string& job_id,
                                const std::vector<v1::SequencedLogLine>& lines) = 0;
  // Stores (inserts or replaces) a job's frame key, a secret kept apart from the Job record so
  // that nothing that returns a Job can carry it.
  virtual Status PutFrameKey(const std::string& job_id, const std::string& frame_key) = 0;
  // Deletes a job's frame key (none stored: nothing to do): once the job ended, no rank may use
  // it again, so it is not kept.
  virtual Status DeleteFrameKey(const std::string& job_id) = 0;
  // Inserts a complete step; a step redone after a recovery replaces the earlier run's row.
  virtual Status PutStep(const std::string& job_id, const v1::JobStep& step) = 0;
  // In one transaction: deletes every link from or to a worker of `forgotten_workers`, then
  // writes (inserts or replaces) `links`.
  virtual Status PutLinks(const std::vector<LinkFigures>& links,
                          const std::vector<std::string>& forgotten_workers) = 0;

  // Oldest first, at most `limit`.
  virtual StatusOr<std::vector<v1::JobEvent>> EventsAfter(const std::string& job_id,
                                                          int64_t after_sequence, int limit) = 0;
  virtual StatusOr<std::vector<v1::SequencedLogLine>> LogLinesAfter(const std::string& job_id,
                                                                    int64_t after_sequence,
                                                                    int limit) = 0;
  virtual StatusOr<std::vector<v1::JobStep>> StepsAfter(const std::string& job_id,
                                                        int64_t after_step) = 0;
};

// The SQLite store in `state_dir`/coordinator.db (sqlite_state_store.cc). Creates the directory
// and the database when missing; fails with a message naming the file when it is not a geotrain
// coordinator database, has a newer schema, or another coordinator holds the directory.
StatusOr<std::unique_ptr<StateStore>> OpenSqliteStateStore(const std::string& state_dir);

}  // namespace geotrain::coordinator
