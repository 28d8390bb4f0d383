// TaskTable: every task this daemon started since it came up, with its newest status; the source
// of a session's hello (so a restarted coordinator re-attaches running tasks and learns how
// finished ones ended) and of the rule that a worker runs one task at a time.
//
// Keys stay in the table for the daemon's life, also after ForgetTask: a repeated Assignment for
// a key the worker already ran is recognised and ignored. Not thread-safe; TaskSupervisor guards
// it with its mutex.
#pragma once

#include <map>
#include <optional>
#include <vector>

#include "geotrain/v1/job.pb.h"
#include "worker/task_key.h"

namespace geotrain::worker {

// STARTING or RUNNING: the child has not ended.
bool IsActive(geotrain::v1::TaskState state);

class TaskTable {
 public:
  // Adds `status` for a new key; false (and no change) when the key is already known.
  bool Add(const geotrain::v1::TaskStatus& status);
  // Replaces the status of a known key; false for an unknown key.
  bool Update(const geotrain::v1::TaskStatus& status);
  // nullptr for an unknown key.
  const geotrain::v1::TaskStatus* Find(const TaskKey& key) const;

  // Drops the ended tasks of (job, generation) from the hello; returns how many. Active tasks
  // stay: a hello lists every task that runs.
  int Forget(const std::string& job_id, uint32_t generation);

  // Every task not forgotten, in key order.
  std::vector<geotrain::v1::TaskStatus> HelloTasks() const;
  // Some active task, if there is one.
  std::optional<TaskKey> AnyActive() const;
  // The active tasks of (job, generation).
  std::vector<TaskKey> ActiveOf(const std::string& job_id, uint32_t generation) const;

 private:
  struct Entry {
    geotrain::v1::TaskStatus status;
    bool forgotten = false;
  };
  std::map<TaskKey, Entry> entries_;
};

}  // namespace geotrain::worker
