#include "net/rendezvous_store.h"

#include <stdexcept>
#include <utility>

#include "net/gloo_address.h"

namespace geotrain::net {
namespace {

// The rank a Gloo rendezvous key names ("0/3" -> 3), or -1.
int RankOfKey(const std::string& key) {
  const size_t slash = key.rfind('/');
  const std::string last = slash == std::string::npos ? key : key.substr(slash + 1);
  if (last.empty() || last.size() > 6) return -1;
  int rank = 0;
  for (char c : last) {
    if (c < '0' || c > '9') return -1;
    rank = rank * 10 + (c - '0');
  }
  return rank;
}

// The rank a Gloo host name key names ("0/rank_3" -> 3: Gloo counts the ranks on one host), or -1.
int RankOfHostKey(const std::string& key) {
  const size_t slash = key.rfind('/');
  const std::string last = slash == std::string::npos ? key : key.substr(slash + 1);
  if (last.rfind("rank_", 0) != 0) return -1;
  return RankOfKey(last.substr(5));
}

std::string WaitingFor(const std::vector<std::string>& keys) {
  if (keys.size() == 1 && RankOfKey(keys[0]) >= 0) {
    return "waiting for rank " + std::to_string(RankOfKey(keys[0])) +
           " to publish its address in the store";
  }
  if (keys.size() == 1 && RankOfHostKey(keys[0]) >= 0) {
    return "waiting for rank " + std::to_string(RankOfHostKey(keys[0])) +
           " to publish its host name in the store";
  }
  std::string list;
  for (const std::string& key : keys) list += (list.empty() ? "'" : ", '") + key + "'";
  return "waiting for keys " + list + " in the store";
}

}  // namespace

RendezvousStore::RendezvousStore(c10::intrusive_ptr<c10d::Store> inner, Deadline deadline, int rank)
    : inner_(std::move(inner)), deadline_(deadline), rank_(rank) {}

std::string RendezvousStore::Phase() const {
  std::lock_guard<std::mutex> lock(mu_);
  return phase_;
}

void RendezvousStore::SetPhase(std::string phase) {
  std::lock_guard<std::mutex> lock(mu_);
  phase_ = std::move(phase);
}

void RendezvousStore::ThrowIfExpired() const {
  if (deadline_.Expired()) {
    throw std::runtime_error("timed out after " + std::to_string(deadline_.budget().count()) +
                             " ms " + Phase());
  }
}

void RendezvousStore::set(const std::string& key, const std::vector<uint8_t>& value) {
  std::vector<uint8_t> clean = value;
  if (ZeroGlooAddressPadding(&clean)) SetPhase("publishing this rank's address");
  ThrowIfExpired();
  inner_->set(key, clean);
}

std::vector<uint8_t> RendezvousStore::compareSet(const std::string& key,
                                                 const std::vector<uint8_t>& expected,
                                                 const std::vector<uint8_t>& desired) {
  ThrowIfExpired();
  return inner_->compareSet(key, expected, desired);
}

std::vector<uint8_t> RendezvousStore::get(const std::string& key) {
  wait({key});
  std::vector<uint8_t> value = inner_->get(key);
  const int peer = RankOfKey(key);
  if (peer >= 0 && peer != rank_) {
    // A peer's blobs list the ranks other than itself in order; ours is at rank_ or rank_ - 1.
    const size_t index = static_cast<size_t>(rank_ < peer ? rank_ : rank_ - 1);
    const std::string address = DescribeGlooAddress(value, index);
    SetPhase("connecting to rank " + std::to_string(peer) +
             (address.empty() ? std::string() : " at " + address));
  }
  return value;
}

int64_t RendezvousStore::add(const std::string& key, int64_t value) {
  ThrowIfExpired();
  return inner_->add(key, value);
}

bool RendezvousStore::deleteKey(const std::string& key) {
  ThrowIfExpired();
  return inner_->deleteKey(key);
}

bool RendezvousStore::check(const std::vector<std::string>& keys) {
  ThrowIfExpired();
  return inner_->check(keys);
}

int64_t RendezvousStore::getNumKeys() {
  ThrowIfExpired();
  return inner_->getNumKeys();
}

void RendezvousStore::wait(const std::vector<std::string>& keys) {
  SetPhase(WaitingFor(keys));
  ThrowIfExpired();
  // c10d reads 0 ms as "no timeout"; never pass less than 1 ms.
  inner_->wait(keys, std::max(deadline_.Remaining(), std::chrono::milliseconds(1)));
}

void RendezvousStore::wait(const std::vector<std::string>& keys,
                           const std::chrono::milliseconds& /*timeout*/) {
  wait(keys);
}

void RendezvousStore::watchKey(const std::string& key, c10d::WatchKeyCallback /*callback*/) {
  throw std::runtime_error("rendezvous store: watchKey('" + key + "') is not supported");
}

}  // namespace geotrain::net
