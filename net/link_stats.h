// LinkStats: per-peer traffic counters of one Transport, the raw material of link estimation and
// of the byte counts in step reports.
//
// Every frame a transport moves is recorded once, on the side that sent it and on the side that
// received it: its size, the seconds from posting the operation to its completion, and a
// (bytes, seconds) sample kept in a bounded window of the most recent ones per direction.
//
// What the numbers mean:
// - bytes_* count frame bytes, the caller's payload. The transport's own framing (an 8-byte length
//   per frame on Gloo) and TCP overhead are not included, so both implementations count the same.
// - Seconds include waiting for the peer to be ready (a Gloo send completes only once the receiver
//   has posted its recv), and a collective step that sends and receives at once charges its time
//   to both directions. A sample's bytes/seconds is therefore a lower bound on the link's
//   throughput; estimators should prefer large frames and the faster samples.
// - raw_bytes_* are sizes before encoding, which only the codec layer knows: Send's raw_bytes
//   argument on the sending side, AddRawBytesReceived (called by the decoder) on the receiving
//   side; Recv itself adds nothing to raw_bytes_received. Collectives move unencoded data and
//   count raw = frame bytes in both directions.
//
// Thread-safety: every method may be called concurrently (one mutex; records are rare next to the
// transfers they describe).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

namespace geotrain::net {

struct ThroughputSample {
  uint64_t bytes = 0;
  double seconds = 0;
};

// The counters of one link (this rank <-> one peer), as returned by LinkStats::Snapshot.
struct LinkCounters {
  uint64_t frames_sent = 0;
  uint64_t frames_received = 0;
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;
  uint64_t raw_bytes_sent = 0;
  uint64_t raw_bytes_received = 0;
  double send_seconds = 0;
  double recv_seconds = 0;
  std::vector<ThroughputSample> recent_sends;  // oldest first
  std::vector<ThroughputSample> recent_recvs;  // oldest first
};

class LinkStats {
 public:
  // Samples kept per link and direction; older ones are dropped.
  static constexpr size_t kDefaultMaxSamples = 64;

  explicit LinkStats(int num_ranks, size_t max_samples_per_direction = kDefaultMaxSamples);

  LinkStats(const LinkStats&) = delete;
  LinkStats& operator=(const LinkStats&) = delete;

  int num_ranks() const { return static_cast<int>(links_.size()); }

  // Records one frame. Ranks outside [0, num_ranks) are ignored (the transport validates ranks
  // before it moves anything, so that would be a bug of ours, not worth a failure of the caller).
  void RecordSend(int peer, uint64_t bytes, uint64_t raw_bytes, double seconds);
  void RecordRecv(int peer, uint64_t bytes, uint64_t raw_bytes, double seconds);

  // Adds the decoded size of frames received from `peer` (see the header comment).
  void AddRawBytesReceived(int peer, uint64_t raw_bytes);

  // A copy of every link's counters, indexed by peer rank (our own entry stays zero).
  std::vector<LinkCounters> Snapshot() const;
  LinkCounters Snapshot(int peer) const;

  // Zeroes every counter and drops every sample (e.g. after a warm-up the estimator should ignore).
  void Reset();

 private:
  struct Link {
    LinkCounters totals;  // the recent_* vectors stay empty here
    std::deque<ThroughputSample> recent_sends;
    std::deque<ThroughputSample> recent_recvs;
  };

  void Append(std::deque<ThroughputSample>* window, ThroughputSample sample);
  LinkCounters Copy(const Link& link) const;

  const size_t max_samples_;
  mutable std::mutex mu_;
  std::vector<Link> links_;  // guarded by mu_; its size never changes
};

}  // namespace geotrain::net
