#include "net/fake_transport.h"

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "net/exchange_transport.h"
#include "net/peer_exchange.h"
#include "net/sealed_peer_exchange.h"

namespace geotrain::net {
namespace {

std::string RankName(int rank) { return "rank " + std::to_string(rank); }

// What the whole group shares: one mailbox per (sender, receiver, channel), the ranks' states,
// and a single lock and condition variable (tests move little data; simplicity wins).
class FakeHub {
 public:
  enum class RankState { kAlive, kLeft, kDied };

  FakeHub(int size, FakeWireTap tap) : tap_(std::move(tap)), states_(size, RankState::kAlive) {}

  int size() const { return static_cast<int>(states_.size()); }

  Status Exchange(int me, Channel channel, const ExchangeStep& step, const Deadline& deadline);
  void SetState(int rank, RankState state);

 private:
  struct Message {
    uint64_t id = 0;
    std::vector<uint8_t> bytes;
  };
  using MailboxKey = std::tuple<int, int, int>;  // sender, receiver, channel

  std::deque<Message>& Mailbox(int from, int to, Channel channel) {
    return mailboxes_[MailboxKey(from, to, static_cast<int>(channel))];
  }
  // UNAVAILABLE naming the direction and the peer when `me` or `peer` is no longer alive.
  Status CheckAlive(int me, int peer, const std::string& direction) const;
  // Forgets a frame `me` sent after its step failed: takes it back if not yet received, and drops
  // the receipt if it was.
  void Withdraw(int me, int to, Channel channel, uint64_t id);

  const FakeWireTap tap_;  // called under mu_
  std::mutex mu_;
  std::condition_variable changed_;
  std::vector<RankState> states_;                        // guarded by mu_
  std::map<MailboxKey, std::deque<Message>> mailboxes_;  // guarded by mu_
  std::set<uint64_t> taken_;  // ids received but not yet seen by their sender; guarded by mu_
  uint64_t next_id_ = 1;      // guarded by mu_
};

Status FakeHub::CheckAlive(int me, int peer, const std::string& direction) const {
  if (states_[me] != RankState::kAlive) {
    return Unavailable(direction + " " + RankName(peer) + ": this rank " +
                       (states_[me] == RankState::kDied ? "died" : "closed its links"));
  }
  if (states_[peer] != RankState::kAlive) {
    return Unavailable(direction + " " + RankName(peer) + ": " + RankName(peer) +
                       (states_[peer] == RankState::kDied ? " died" : " left the group"));
  }
  return OkStatus();
}

void FakeHub::Withdraw(int me, int to, Channel channel, uint64_t id) {
  taken_.erase(id);
  std::deque<Message>& box = Mailbox(me, to, channel);
  for (auto it = box.begin(); it != box.end(); ++it) {
    if (it->id == id) {
      box.erase(it);
      return;
    }
  }
}

Status FakeHub::Exchange(int me, Channel channel, const ExchangeStep& step,
                         const Deadline& deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  const std::string timed_out =
      ": timed out after " + std::to_string(deadline.budget().count()) + " ms";
  const std::string send_to = "send to";
  const std::string recv_from = "recv from";

  uint64_t sent_id = 0;
  if (step.send_to != kNoPeer) {
    GEOTRAIN_RETURN_IF_ERROR(CheckAlive(me, step.send_to, send_to));
    sent_id = next_id_++;
    std::vector<uint8_t> bytes(step.send.begin(), step.send.end());
    if (!tap_ || tap_(me, step.send_to, channel, &bytes)) {
      Mailbox(me, step.send_to, channel).push_back({sent_id, std::move(bytes)});
    } else {
      taken_.insert(sent_id);  // dropped on the way, yet acknowledged
    }
    changed_.notify_all();
  }

  if (step.recv_from != kNoPeer) {
    const int from = step.recv_from;
    std::deque<Message>& box = Mailbox(from, me, channel);
    // A frame already delivered is received even if its sender died since, as TCP would.
    changed_.wait_until(lock, deadline.at(),
                        [&] { return !box.empty() || !CheckAlive(me, from, recv_from).ok(); });
    if (box.empty()) {
      Status failure = CheckAlive(me, from, recv_from);
      if (failure.ok()) {
        failure =
            Status(StatusCode::kDeadlineExceeded, recv_from + " " + RankName(from) + timed_out);
      }
      if (sent_id != 0) Withdraw(me, step.send_to, channel, sent_id);
      return failure;
    }
    Message message = std::move(box.front());
    box.pop_front();
    taken_.insert(message.id);
    changed_.notify_all();
    if (step.sizes_known && message.bytes.size() != step.recv->size()) {
      if (sent_id != 0) Withdraw(me, step.send_to, channel, sent_id);
      return DataLoss(recv_from + " " + RankName(from) + ": expected " +
                      std::to_string(step.recv->size()) + " bytes, the sender sent " +
                      std::to_string(message.bytes.size()));
    }
    *step.recv = std::move(message.bytes);
  }

  if (sent_id != 0) {
    // Rendezvous: the send completes once the receiver has taken the frame, as on Gloo.
    const int to = step.send_to;
    changed_.wait_until(lock, deadline.at(), [&] {
      return taken_.count(sent_id) > 0 || !CheckAlive(me, to, send_to).ok();
    });
    if (taken_.erase(sent_id) == 0) {
      Withdraw(me, to, channel, sent_id);
      Status failure = CheckAlive(me, to, send_to);
      if (failure.ok()) {
        failure = Status(StatusCode::kDeadlineExceeded, send_to + " " + RankName(to) + timed_out);
      }
      return failure;
    }
  }
  return OkStatus();
}

void FakeHub::SetState(int rank, RankState state) {
  std::lock_guard<std::mutex> lock(mu_);
  // Death is final; a rank that already died does not become one that merely left.
  if (states_[rank] == RankState::kDied) return;
  states_[rank] = state;
  changed_.notify_all();
}

class FakePeerExchange final : public PeerExchange {
 public:
  FakePeerExchange(std::shared_ptr<FakeHub> hub, int rank) : hub_(std::move(hub)), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return hub_->size(); }
  Status Exchange(Channel channel, const ExchangeStep& step, const Deadline& deadline) override {
    return hub_->Exchange(rank_, channel, step, deadline);
  }
  void Close() override { hub_->SetState(rank_, FakeHub::RankState::kLeft); }

  FakeHub& hub() { return *hub_; }

 private:
  const std::shared_ptr<FakeHub> hub_;
  const int rank_;
};

}  // namespace

std::vector<std::unique_ptr<Transport>> CreateFakeTransportGroup(int size) {
  if (size < 1) return {};
  FakeTransportOptions options;
  options.size = size;
  return std::move(CreateFakeTransportGroup(options)).value();  // no key: cannot fail
}

StatusOr<std::vector<std::unique_ptr<Transport>>> CreateFakeTransportGroup(
    const FakeTransportOptions& options) {
  if (options.size < 1) {
    return InvalidArgument("fake group: size " + std::to_string(options.size) + " is below 1");
  }
  std::vector<std::unique_ptr<Transport>> ranks;
  auto hub = std::make_shared<FakeHub>(options.size, options.wire_tap);
  for (int rank = 0; rank < options.size; ++rank) {
    std::unique_ptr<PeerExchange> exchange = std::make_unique<FakePeerExchange>(hub, rank);
    if (!options.frame_key.empty()) {
      GEOTRAIN_ASSIGN_OR_RETURN(
          exchange,
          SealedPeerExchange::Create(std::move(exchange), options.frame_key, options.group_name));
    }
    ranks.push_back(std::make_unique<ExchangeTransport>(std::move(exchange)));
  }
  return ranks;
}

Status KillFakeRank(Transport& member, int rank) {
  auto* transport = dynamic_cast<ExchangeTransport*>(&member);
  PeerExchange* exchange = transport ? &transport->exchange() : nullptr;
  if (auto* sealed = dynamic_cast<SealedPeerExchange*>(exchange)) exchange = &sealed->inner();
  auto* fake = dynamic_cast<FakePeerExchange*>(exchange);
  if (fake == nullptr) return InvalidArgument("KillFakeRank: not a fake transport");
  if (rank < 0 || rank >= fake->size()) {
    return InvalidArgument("KillFakeRank: no rank " + std::to_string(rank) + " in a group of " +
                           std::to_string(fake->size()));
  }
  fake->hub().SetState(rank, FakeHub::RankState::kDied);
  return OkStatus();
}

}  // namespace geotrain::net
