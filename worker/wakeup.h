// Wakeup: how the daemon's other threads (session reader, task monitors, signal handler) tell its
// main loop to look again. A level, not an edge: a Notify that comes while the loop is busy is
// not lost, it ends the loop's next wait at once. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace geotrain::worker {

class Wakeup {
 public:
  void Notify() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      pending_ = true;
    }
    cv_.notify_all();
  }

  // Returns when notified (since the last wait returned) or at `deadline`, whichever is first.
  void WaitUntil(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_until(lock, deadline, [this] { return pending_; });
    pending_ = false;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool pending_ = false;
};

}  // namespace geotrain::worker
