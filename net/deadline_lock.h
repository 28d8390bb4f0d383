// DeadlineLock: a mutual-exclusion lock whose acquisition gives up at a deadline, so that waiting
// for another thread's transfer still honours the caller's timeout.
//
// Why not std::timed_mutex: GCC 12's try_lock_until calls pthread_mutex_clocklock, which
// ThreadSanitizer does not intercept, so every unlock is reported as bogus and real races drown.
// A flag under a plain mutex and condition variable says the same and keeps TSan useful.
// Thread-safe; not recursive.
#pragma once

#include <condition_variable>
#include <mutex>

#include "net/deadline.h"

namespace geotrain::net {

class DeadlineLock {
 public:
  // Holds the lock from a successful acquisition to its destruction.
  class Holder {
   public:
    Holder(const Holder&) = delete;
    Holder& operator=(const Holder&) = delete;
    Holder(Holder&& other) noexcept : lock_(other.lock_) { other.lock_ = nullptr; }
    ~Holder() {
      if (lock_ != nullptr) lock_->Unlock();
    }
    bool held() const { return lock_ != nullptr; }

   private:
    friend class DeadlineLock;
    explicit Holder(DeadlineLock* lock) : lock_(lock) {}
    DeadlineLock* lock_;
  };

  // Acquires the lock unless `deadline` passes first (then the Holder holds nothing).
  Holder LockBefore(const Deadline& deadline) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!released_.wait_until(lock, deadline.at(), [this] { return !held_; })) {
      return Holder(nullptr);
    }
    held_ = true;
    return Holder(this);
  }

 private:
  void Unlock() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      held_ = false;
    }
    released_.notify_one();
  }

  std::mutex mu_;
  std::condition_variable released_;
  bool held_ = false;  // guarded by mu_
};

}  // namespace geotrain::net
