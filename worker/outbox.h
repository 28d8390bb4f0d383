// Outbox: what the worker has to tell the coordinator and has not yet delivered: task statuses,
// step reports and log lines, kept in the order they happened, across broken sessions.
//
// While the coordinator is unreachable the children keep training, so the outbox is bounded: it
// keeps the newest max_steps step reports and max_logs log lines and counts the ones it dropped.
// Statuses are never dropped here (few; and a new session's hello carries every task's current
// status anyway, which is why DropStatuses exists).
//
// Delivery: Peek gives messages in push order, consecutive step reports (or log lines) grouped up
// to `batch` per message; after writing one, the sender calls Commit with its `through` number.
// A message whose write failed is not committed and goes out again on the next session.
//
// Thread-safety: every method may be called from any thread. `on_urgent` (given at construction)
// is called, without the outbox's lock held, when a push makes something worth sending now: a
// status, or a full batch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <vector>

#include "geotrain/v1/coordinator.pb.h"

namespace geotrain::worker {

struct OutboxLimits {
  size_t max_steps = 10000;
  size_t max_logs = 10000;
  size_t batch = 200;  // items per StepReports / LogLines message; also the "send now" mark
};

class Outbox {
 public:
  struct Message {
    geotrain::v1::WorkerMessage message;
    uint64_t through = 0;  // Commit(through) once it was written
  };
  struct Dropped {
    uint64_t steps = 0;
    uint64_t logs = 0;
  };

  explicit Outbox(OutboxLimits limits = {}, std::function<void()> on_urgent = nullptr);

  void PushStatus(geotrain::v1::TaskStatus status);
  void PushStep(geotrain::v1::StepReport report);
  void PushLog(geotrain::v1::LogLine line);

  // Up to `max_messages` messages from the oldest pending item on; nothing is removed.
  std::vector<Message> Peek(size_t max_messages) const;
  // Removes every item up to and including number `through`.
  void Commit(uint64_t through);

  // A status waits, or a batch is full.
  bool Urgent() const;
  bool Empty() const;
  // Forgets the pending statuses for which `superseded` holds (a new session's hello carries
  // the newest status of every task it lists).
  void DropStatuses(const std::function<bool(const geotrain::v1::TaskStatus&)>& superseded);
  // Whether a pending step report (status) satisfies `matches`.
  bool HoldsStep(const std::function<bool(const geotrain::v1::StepReport&)>& matches) const;
  bool HoldsStatus(const std::function<bool(const geotrain::v1::TaskStatus&)>& matches) const;
  // What was dropped since the last call.
  Dropped TakeDropped();

 private:
  template <typename T>
  struct Item {
    uint64_t number;
    T value;
  };

  void Notify(bool urgent);
  bool UrgentLocked() const;

  const OutboxLimits limits_;
  const std::function<void()> on_urgent_;
  mutable std::mutex mu_;
  uint64_t next_number_ = 1;
  std::deque<Item<geotrain::v1::TaskStatus>> statuses_;
  std::deque<Item<geotrain::v1::StepReport>> steps_;
  std::deque<Item<geotrain::v1::LogLine>> logs_;
  Dropped dropped_;
};

}  // namespace geotrain::worker
