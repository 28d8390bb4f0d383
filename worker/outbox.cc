#include "worker/outbox.h"

#include <algorithm>
#include <limits>

namespace geotrain::worker {

Outbox::Outbox(OutboxLimits limits, std::function<void()> on_urgent)
    : limits_(limits), on_urgent_(std::move(on_urgent)) {}

void Outbox::PushStatus(geotrain::v1::TaskStatus status) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    statuses_.push_back({next_number_++, std::move(status)});
  }
  Notify(true);
}

void Outbox::PushStep(geotrain::v1::StepReport report) {
  bool urgent;
  {
    std::lock_guard<std::mutex> lock(mu_);
    steps_.push_back({next_number_++, std::move(report)});
    if (steps_.size() > limits_.max_steps) {
      steps_.pop_front();
      ++dropped_.steps;
    }
    urgent = steps_.size() == limits_.batch;
  }
  Notify(urgent);
}

void Outbox::PushLog(geotrain::v1::LogLine line) {
  bool urgent;
  {
    std::lock_guard<std::mutex> lock(mu_);
    logs_.push_back({next_number_++, std::move(line)});
    if (logs_.size() > limits_.max_logs) {
      logs_.pop_front();
      ++dropped_.logs;
    }
    urgent = logs_.size() == limits_.batch;
  }
  Notify(urgent);
}

void Outbox::Notify(bool urgent) {
  if (urgent && on_urgent_) on_urgent_();
}

std::vector<Outbox::Message> Outbox::Peek(size_t max_messages) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Message> messages;
  size_t s = 0, t = 0, l = 0;  // cursors into statuses_, steps_, logs_
  constexpr uint64_t kNone = std::numeric_limits<uint64_t>::max();
  auto number = [](const auto& queue, size_t i) {
    return i < queue.size() ? queue[i].number : kNone;
  };
  while (messages.size() < max_messages) {
    const uint64_t ns = number(statuses_, s), nt = number(steps_, t), nl = number(logs_, l);
    const uint64_t first = std::min({ns, nt, nl});
    if (first == kNone) break;
    Message out;
    if (first == ns) {
      *out.message.mutable_task() = statuses_[s].value;
      out.through = ns;
      ++s;
    } else if (first == nt) {
      // Every step report up to the next status or log line, at most `batch`.
      auto* reports = out.message.mutable_steps();
      while (t < steps_.size() && reports->reports_size() < static_cast<int>(limits_.batch) &&
             steps_[t].number < std::min(number(statuses_, s), number(logs_, l))) {
        *reports->add_reports() = steps_[t].value;
        out.through = steps_[t].number;
        ++t;
      }
    } else {
      auto* lines = out.message.mutable_logs();
      while (l < logs_.size() && lines->lines_size() < static_cast<int>(limits_.batch) &&
             logs_[l].number < std::min(number(statuses_, s), number(steps_, t))) {
        *lines->add_lines() = logs_[l].value;
        out.through = logs_[l].number;
        ++l;
      }
    }
    messages.push_back(std::move(out));
  }
  return messages;
}

void Outbox::Commit(uint64_t through) {
  std::lock_guard<std::mutex> lock(mu_);
  while (!statuses_.empty() && statuses_.front().number <= through) statuses_.pop_front();
  while (!steps_.empty() && steps_.front().number <= through) steps_.pop_front();
  while (!logs_.empty() && logs_.front().number <= through) logs_.pop_front();
}

bool Outbox::Urgent() const {
  std::lock_guard<std::mutex> lock(mu_);
  return UrgentLocked();
}

bool Outbox::UrgentLocked() const {
  return !statuses_.empty() || steps_.size() >= limits_.batch || logs_.size() >= limits_.batch;
}

bool Outbox::Empty() const {
  std::lock_guard<std::mutex> lock(mu_);
  return statuses_.empty() && steps_.empty() && logs_.empty();
}

void Outbox::DropStatuses(const std::function<bool(const geotrain::v1::TaskStatus&)>& superseded) {
  std::lock_guard<std::mutex> lock(mu_);
  statuses_.erase(std::remove_if(statuses_.begin(), statuses_.end(),
                                 [&](const auto& item) { return superseded(item.value); }),
                  statuses_.end());
}

bool Outbox::HoldsStep(const std::function<bool(const geotrain::v1::StepReport&)>& matches) const {
  std::lock_guard<std::mutex> lock(mu_);
  return std::any_of(steps_.begin(), steps_.end(),
                     [&](const auto& item) { return matches(item.value); });
}

bool Outbox::HoldsStatus(
    const std::function<bool(const geotrain::v1::TaskStatus&)>& matches) const {
  std::lock_guard<std::mutex> lock(mu_);
  return std::any_of(statuses_.begin(), statuses_.end(),
                     [&](const auto& item) { return matches(item.value); });
}

Outbox::Dropped Outbox::TakeDropped() {
  std::lock_guard<std::mutex> lock(mu_);
  const Dropped dropped = dropped_;
  dropped_ = {};
  return dropped;
}

}  // namespace geotrain::worker
