// SchedulerThread: runs CoordinatorCore::Tick on its own thread, at once when woken (a job was
// submitted, a worker connected, a task ended) and at least every `period` otherwise (heartbeat
// deadlines and stop timeouts need no event to pass).
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "coordinator/coordinator_core.h"

namespace geotrain::coordinator {

class SchedulerThread {
 public:
  // Starts the thread and installs itself as the core's wake hook. `core` is not owned and must
  // outlive this object.
  SchedulerThread(CoordinatorCore* core, std::chrono::milliseconds period);
  ~SchedulerThread();  // Stop()
  SchedulerThread(const SchedulerThread&) = delete;
  SchedulerThread& operator=(const SchedulerThread&) = delete;

  // Thread-safe; returns at once.
  void Wake();
  // Joins the thread; idempotent.
  void Stop();

 private:
  void Run();

  CoordinatorCore* core_;
  const std::chrono::milliseconds period_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool woken_ = false;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace geotrain::coordinator
