// RendezvousStore: the c10d::Store that Gloo's rendezvous sees when a group connects
// (gloo_transport.cc). It wraps the caller's store (the coordinator's, a TCPStore, a FileStore)
// and adds what the connect phase needs and c10d's stores do not give:
//
// - One budget. Every wait (wait(), and the wait that get() does) waits only for what is left of
//   `deadline`, whatever timeout Gloo passes or the inner store was built with, so a rendezvous
//   ends within the caller's connect timeout however many keys it waits for.
// - A name for what is in progress (Phase()): "waiting for rank 1 to publish its address" or
//   "connecting to rank 1 at 10.0.0.2:41234" (the address just read for it), so that a connect
//   that fails says which peer and which step.
// - Clean blobs: values that are Gloo address blobs have their padding zeroed before they are
//   stored (gloo_address.h), so no stack bytes of this process reach the store.
//
// Keys are Gloo's: "<device>/<rank>" (ProcessGroupGloo prefixes the device index). Errors are
// thrown (std::runtime_error) as c10d's stores throw them, because Gloo expects exceptions.
// Thread-safe as far as the inner store is; Phase() may be read from any thread.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <mutex>
#include <string>
#include <vector>

#include "net/deadline.h"

namespace geotrain::net {

class RendezvousStore final : public c10d::Store {
 public:
  // `rank`: the rank joining through this store (to find its own address in a peer's blobs).
  RendezvousStore(c10::intrusive_ptr<c10d::Store> inner, Deadline deadline, int rank);

  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  std::vector<uint8_t> compareSet(const std::string& key, const std::vector<uint8_t>& expected,
                                  const std::vector<uint8_t>& desired) override;
  // Waits for the key within the budget left, then reads it.
  std::vector<uint8_t> get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t value) override;
  bool deleteKey(const std::string& key) override;
  bool check(const std::vector<std::string>& keys) override;
  int64_t getNumKeys() override;
  // Both wait only for what is left of the budget; `timeout` is ignored.
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;
  void watchKey(const std::string& key, c10d::WatchKeyCallback callback) override;

  // What the rendezvous was doing last ("publishing this rank's address", "waiting for rank 1
  // to publish its address", "connecting to rank 1 at 10.0.0.2:41234").
  std::string Phase() const;

 private:
  void SetPhase(std::string phase);
  // Throws when the budget is spent, naming what was in progress.
  void ThrowIfExpired() const;

  const c10::intrusive_ptr<c10d::Store> inner_;
  const Deadline deadline_;
  const int rank_;
  mutable std::mutex mu_;
  std::string phase_;  // guarded by mu_
};

}  // namespace geotrain::net
