#include "worker/task_table.h"

namespace geotrain::worker {

bool IsActive(geotrain::v1::TaskState state) {
  return state == geotrain::v1::TASK_STATE_STARTING || state == geotrain::v1::TASK_STATE_RUNNING;
}

bool TaskTable::Add(const geotrain::v1::TaskStatus& status) {
  return entries_.emplace(TaskKey::Of(status), Entry{status, false}).second;
}

bool TaskTable::Update(const geotrain::v1::TaskStatus& status) {
  const auto it = entries_.find(TaskKey::Of(status));
  if (it == entries_.end()) return false;
  it->second.status = status;
  return true;
}

const geotrain::v1::TaskStatus* TaskTable::Find(const TaskKey& key) const {
  const auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second.status;
}

int TaskTable::Forget(const std::string& job_id, uint32_t generation) {
  int forgotten = 0;
  for (auto& [key, entry] : entries_) {
    if (key.job_id == job_id && key.generation == generation && !entry.forgotten &&
        !IsActive(entry.status.state())) {
      entry.forgotten = true;
      ++forgotten;
    }
  }
  return forgotten;
}

std::vector<geotrain::v1::TaskStatus> TaskTable::HelloTasks() const {
  std::vector<geotrain::v1::TaskStatus> tasks;
  for (const auto& [key, entry] : entries_) {
    if (!entry.forgotten) tasks.push_back(entry.status);
  }
  return tasks;
}

std::optional<TaskKey> TaskTable::AnyActive() const {
  for (const auto& [key, entry] : entries_) {
    if (IsActive(entry.status.state())) return key;
  }
  return std::nullopt;
}

std::vector<TaskKey> TaskTable::ActiveOf(const std::string& job_id, uint32_t generation) const {
  std::vector<TaskKey> keys;
  for (const auto& [key, entry] : entries_) {
    if (key.job_id == job_id && key.generation == generation && IsActive(entry.status.state())) {
      keys.push_back(key);
    }
  }
  return keys;
}

}  // namespace geotrain::worker
