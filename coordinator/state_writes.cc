// CoordinatorCore: its writes to the StateStore, and the lasting error state a failed one leaves
// (docs/architecture.md, "Failure policy").
//
// A write that fails is never logged and gone past: the in-memory change it was meant to record
// must not be acknowledged, and a later write that succeeded would leave a database that no
// sequence of acknowledged calls produced (an event after a missing one, a worker's state without
// the job transition behind it). So the first failure stops every write after it, and the core
// refuses every change from then on, until an operator has fixed the cause and restarted it: the
// database then holds exactly what was acknowledged. Everything here runs under mu_.
#include <spdlog/spdlog.h>

#include "coordinator/coordinator_core.h"

namespace geotrain::coordinator {

std::string CoordinatorCore::StateStoreFailure() const {
  std::lock_guard<std::mutex> lock(mu_);
  return store_failure_reason_;
}

Status CoordinatorCore::AcceptingChanges() const {
  if (shutting_down()) return Unavailable("the coordinator is shutting down");
  return store_failure_;
}

Status CoordinatorCore::Write(const std::string& what, const std::function<Status()>& write) {
  if (store_failed()) return store_failure_;
  const Status written = write();
  if (written.ok()) return written;
  store_failure_reason_ = what + ": " + written.message();
  store_failure_ = Unavailable("the state store failed (" + store_failure_reason_ +
                               "); no changes are accepted until the coordinator is restarted");
  spdlog::critical(
      "state store write failed: {}: {}. The coordinator accepts no more changes "
      "(workers, jobs and sessions answer UNAVAILABLE; reads go on); nothing it "
      "acknowledged is lost. Fix the cause (disk space, permissions, the disk) and "
      "restart it.",
      what, written.ToString());
  return store_failure_;
}

bool CoordinatorCore::PersistJob(JobEntry& entry, std::vector<v1::JobEvent> events) {
  if (!Write("writing " + entry.job.id(), [&] { return store_->PutJob(entry.job, events); }).ok()) {
    return false;
  }
  entry.progress_dirty = false;
  entry.progress_persisted_ms = clock_->NowMonotonicMs();
  return true;
}

bool CoordinatorCore::PersistWorker(const WorkerEntry& worker) {
  return Write("writing worker " + worker.record.id(),
               [&] { return store_->PutWorker(worker.record); })
      .ok();
}

bool CoordinatorCore::PersistLinks() {
  LinkTable::Changes changes = links_.TakeChanges();
  links_persisted_ms_ = clock_->NowMonotonicMs();
  if (changes.empty()) return true;
  return Write("writing " + std::to_string(changes.links.size()) + " link estimates",
               [&] { return store_->PutLinks(changes.links, changes.forgotten_workers); })
      .ok();
}

}  // namespace geotrain::coordinator
