#include "net/link_stats.h"

namespace geotrain::net {

LinkStats::LinkStats(int num_ranks, size_t max_samples_per_direction)
    : max_samples_(max_samples_per_direction), links_(num_ranks > 0 ? num_ranks : 0) {}

void LinkStats::Append(std::deque<ThroughputSample>* window, ThroughputSample sample) {
  if (max_samples_ == 0) return;
  if (window->size() == max_samples_) window->pop_front();
  window->push_back(sample);
}

void LinkStats::RecordSend(int peer, uint64_t bytes, uint64_t raw_bytes, double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  if (peer < 0 || peer >= num_ranks()) return;
  Link& link = links_[peer];
  link.totals.frames_sent++;
  link.totals.bytes_sent += bytes;
  link.totals.raw_bytes_sent += raw_bytes;
  link.totals.send_seconds += seconds;
  Append(&link.recent_sends, {bytes, seconds});
}

void LinkStats::RecordRecv(int peer, uint64_t bytes, uint64_t raw_bytes, double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  if (peer < 0 || peer >= num_ranks()) return;
  Link& link = links_[peer];
  link.totals.frames_received++;
  link.totals.bytes_received += bytes;
  link.totals.raw_bytes_received += raw_bytes;
  link.totals.recv_seconds += seconds;
  Append(&link.recent_recvs, {bytes, seconds});
}

void LinkStats::AddRawBytesReceived(int peer, uint64_t raw_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (peer < 0 || peer >= num_ranks()) return;
  links_[peer].totals.raw_bytes_received += raw_bytes;
}

LinkCounters LinkStats::Copy(const Link& link) const {
  LinkCounters copy = link.totals;
  copy.recent_sends.assign(link.recent_sends.begin(), link.recent_sends.end());
  copy.recent_recvs.assign(link.recent_recvs.begin(), link.recent_recvs.end());
  return copy;
}

std::vector<LinkCounters> LinkStats::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<LinkCounters> copies;
  copies.reserve(links_.size());
  for (const Link& link : links_) copies.push_back(Copy(link));
  return copies;
}

LinkCounters LinkStats::Snapshot(int peer) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (peer < 0 || peer >= num_ranks()) return LinkCounters();
  return Copy(links_[peer]);
}

void LinkStats::Reset() {
  std::lock_guard<std::mutex> lock(mu_);
  for (Link& link : links_) link = Link();
}

}  // namespace geotrain::net
