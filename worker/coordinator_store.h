// CoordinatorStore: a c10d::Store whose keys live in the coordinator's Rendezvous service
// (proto/geotrain/v1/rendezvous.proto), scoped to one placement of one job, so that the ranks of
// a job form their Gloo groups through the coordinator alone.
//
// Every c10d call is one logical operation with an overall timeout: the store's timeout
// (getTimeout()), or wait()'s argument; kNoTimeout means kNoTimeoutCap. It is carried out by RPCs
// of at most kRpcSlice each, re-issued until the operation succeeds or its timeout passes, so that
// neither end holds a call open for long and a coordinator restart mid-rendezvous is survived.
// UNAVAILABLE (and CANCELLED, which only a server going away causes, since this class never
// cancels its own calls) are retried with back-off from 100 ms doubling to 2 s, with jitter
// (common/backoff.h) so that the ranks of a job do not all come back at once; the retries wait
// for a connection (wait_for_ready) within their slice, so a restarted coordinator, TLS
// included, is reached as soon as it listens (coordinator_channel.h). A retried add()
// may count twice if the coordinator applied it but its answer was lost; c10d's own stores have
// the same at-least-once behaviour on reconnect.
//
// Errors are thrown as c10d's stores throw them (std::runtime_error), since ProcessGroupGloo
// expects exceptions; messages name the operation, the key, the job scope and the coordinator
// ("timed out after 5000 ms waiting for keys 'a', 'b'" for timeouts). watchKey is not supported.
//
// Thread-safe: several threads may call one store at once (the gRPC stub is thread-safe and the
// rest is immutable), except setTimeout, which like every c10d store's must not race with calls.
#pragma once

#include <grpcpp/grpcpp.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/backoff.h"
#include "geotrain/v1/job.pb.h"
#include "geotrain/v1/rendezvous.grpc.pb.h"

namespace geotrain::worker {

class CoordinatorStore final : public c10d::Store {
 public:
  // The longest one RPC of an operation may take (and a server-side wait with it).
  static constexpr std::chrono::milliseconds kRpcSlice = std::chrono::seconds(30);
  // What kNoTimeout waits for at most: long enough for any rendezvous, short enough that a
  // mistake shows up as an error rather than a hang.
  static constexpr std::chrono::milliseconds kNoTimeoutCap = std::chrono::hours(1);
  // Between retries of UNAVAILABLE and CANCELLED.
  static constexpr BackoffOptions kRetryBackoff{std::chrono::milliseconds(100),
                                                std::chrono::seconds(2), 0.5};

  // `coordinator_address` is only for error messages (a channel cannot tell its target).
  CoordinatorStore(std::shared_ptr<grpc::Channel> channel, geotrain::v1::KvScope scope,
                   std::chrono::milliseconds timeout, std::string coordinator_address = {});

  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  std::vector<uint8_t> compareSet(const std::string& key, const std::vector<uint8_t>& expected,
                                  const std::vector<uint8_t>& desired) override;
  // Waits up to getTimeout() for the key.
  std::vector<uint8_t> get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t value) override;
  bool deleteKey(const std::string& key) override;
  bool check(const std::vector<std::string>& keys) override;
  int64_t getNumKeys() override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;
  // Throws: the coordinator's API has no notifications, and c10d's Gloo backend never watches.
  void watchKey(const std::string& key, c10d::WatchKeyCallback callback) override;

 private:
  // One attempt: issue the RPC with `context` (its deadline is set) and `slice`, the most the
  // server may wait.
  using Attempt =
      std::function<grpc::Status(grpc::ClientContext* context, std::chrono::milliseconds slice)>;

  // Runs attempts until one succeeds, one fails for good (thrown) or `timeout` passes (thrown,
  // with `waiting_for` in the message when the operation waits for keys).
  void Run(const std::string& operation, std::chrono::milliseconds timeout,
           const std::vector<std::string>& waiting_for, const Attempt& attempt) const;
  std::chrono::milliseconds OverallTimeout(std::chrono::milliseconds timeout) const;
  // "get key 'x' (job 'job-1' generation 2, coordinator 10.0.0.1:7070)"
  std::string Describe(const std::string& operation) const;

  const std::unique_ptr<geotrain::v1::Rendezvous::Stub> stub_;
  const geotrain::v1::KvScope scope_;
  const std::string coordinator_address_;
};

}  // namespace geotrain::worker
