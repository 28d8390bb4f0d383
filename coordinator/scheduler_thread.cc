#include "coordinator/scheduler_thread.h"

namespace geotrain::coordinator {

SchedulerThread::SchedulerThread(CoordinatorCore* core, std::chrono::milliseconds period)
    : core_(core), period_(period) {
  core_->SetWakeHook([this] { Wake(); });
  thread_ = std::thread([this] { Run(); });
}

SchedulerThread::~SchedulerThread() { Stop(); }

void SchedulerThread::Wake() {
  std::lock_guard<std::mutex> lock(mu_);
  woken_ = true;
  cv_.notify_one();
}

void SchedulerThread::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
    cv_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
  core_->SetWakeHook(nullptr);
}

void SchedulerThread::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    cv_.wait_for(lock, period_, [this] { return woken_ || stopping_; });
    if (stopping_) break;
    woken_ = false;
    lock.unlock();
    core_->Tick();
    lock.lock();
  }
}

}  // namespace geotrain::coordinator
