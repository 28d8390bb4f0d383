// KvStore: the rendezvous key-value store the Rendezvous service serves, in memory.
//
// Keys live in scopes, one per placement of a job: (job_id, generation) -> {key -> bytes}. What a
// c10d::Store needs, so the ranks of a placement form their Gloo groups through the coordinator:
// set, get (waiting for the key), add, compare-and-set, check, delete, count, wait for many keys.
// Values written by Add are decimal text, as c10d's TCPStore and FileStore keep them.
//
// Nothing here survives a coordinator restart, by design: a placement's keys are only useful while
// its ranks are forming groups, and a restarted coordinator re-places what was running.
//
// Bounded against bad or hostile clients: every value, every scope and the store as a whole have
// limits (KvStoreLimits), each job its quota; a call that would pass one fails with
// RESOURCE_EXHAUSTED naming the job and changes nothing. Waits block on a condition variable until
// their keys exist, their timeout passes, their scope is dropped (the job moved or ended) or their
// caller gives up (KvWaitOptions::abandoned).
//
// Thread-safe: any number of threads may call any method; one mutex guards all scopes, and each
// scope has its own condition variable so a write wakes only the waiters of its own scope.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/status.h"

namespace geotrain::coordinator {

// One placement of one job: the namespace a key lives in (geotrain.v1.KvScope, without protobuf).
struct KvScopeId {
  std::string job_id;       // must not be empty
  uint32_t generation = 0;  // the job's placement counter; any value is a distinct scope
};

struct KvStoreLimits {
  // Largest value one key may hold.
  size_t max_value_bytes = size_t{16} << 20;
  // Most keys one scope may hold (a job of N ranks needs a few per rank and group).
  size_t max_keys_per_scope = 100000;
  // Longest key and job id: Gloo's keys are tens of bytes.
  size_t max_key_bytes = 4096;
  // Keys plus values (plus a fixed overhead per key) over every scope, so that many scopes
  // cannot together exhaust the coordinator's memory.
  uint64_t max_total_bytes = uint64_t{1} << 30;
  // Bytes (counted as for max_total_bytes) and keys one job may hold over all its generations,
  // so that one job (or a rank of it gone rogue) cannot fill the store for the others: a quarter
  // of the default store, far above the few KiB per rank a Gloo rendezvous needs.
  uint64_t max_job_bytes = uint64_t{256} << 20;
  size_t max_job_keys = 200000;
};

// How long a blocking call may wait, and how it notices that nobody wants the answer any more.
struct KvWaitOptions {
  // 0: do not wait (Get of a missing key fails with NOT_FOUND, Wait with DEADLINE_EXCEEDED).
  std::chrono::milliseconds timeout{0};
  // Optional. Asked every `abandon_check_interval` while waiting (never under the store's lock);
  // true ends the wait with UNAVAILABLE. A server passes "has the client cancelled?".
  std::function<bool()> abandoned;
  std::chrono::milliseconds abandon_check_interval{200};
};

class KvStore {
 public:
  KvStore() = default;
  explicit KvStore(KvStoreLimits limits) : limits_(limits) {}
  KvStore(const KvStore&) = delete;
  KvStore& operator=(const KvStore&) = delete;

  // Every call validates its arguments: an empty or too long job id or key is INVALID_ARGUMENT
  // naming the field ("scope.job_id", "key", "keys[2]").

  Status Set(const KvScopeId& scope, const std::string& key, std::string value);
  // The key's value, waiting up to wait.timeout for it to be set. DEADLINE_EXCEEDED when the
  // timeout passes, NOT_FOUND when it is missing and wait.timeout is 0, FAILED_PRECONDITION when
  // the scope is dropped meanwhile.
  StatusOr<std::string> Get(const KvScopeId& scope, const std::string& key,
                            const KvWaitOptions& wait = {});
  // Adds `delta` to the key's decimal value (a missing key counts as 0) and returns the sum.
  // FAILED_PRECONDITION when the value is not a decimal integer, OUT_OF_RANGE on int64 overflow.
  StatusOr<int64_t> Add(const KvScopeId& scope, const std::string& key, int64_t delta);
  // As c10d: stores `desired` when the key holds `expected`, or is missing and `expected` is
  // empty, and returns the value afterwards. When the key is missing and `expected` is not empty,
  // nothing is stored and `expected` comes back (c10d's HashStore and TCPStore answer so too).
  StatusOr<std::string> CompareSet(const KvScopeId& scope, const std::string& key,
                                   const std::string& expected, std::string desired);
  // Whether every key exists (true for none).
  StatusOr<bool> Check(const KvScopeId& scope, const std::vector<std::string>& keys);
  // Whether the key existed.
  StatusOr<bool> Delete(const KvScopeId& scope, const std::string& key);
  StatusOr<int64_t> NumKeys(const KvScopeId& scope);
  // Waits up to wait.timeout until every key exists; the error names the keys still missing.
  Status Wait(const KvScopeId& scope, const std::vector<std::string>& keys,
              const KvWaitOptions& wait);

  // Forgets every key of one placement of a job / of every placement of a job. Waiters of a
  // dropped scope wake at once and fail with FAILED_PRECONDITION ("scope dropped"). A later
  // write to the same scope starts it afresh.
  void DropScope(const std::string& job_id, uint32_t generation);
  void DropJob(const std::string& job_id);

  // For metrics and tests.
  size_t NumScopes() const;
  uint64_t TotalBytes() const;
  // What one job holds over all its generations (0 for an unknown job).
  uint64_t JobBytes(const std::string& job_id) const;
  size_t JobKeys(const std::string& job_id) const;
  // Calls blocked in Get or Wait right now.
  size_t NumWaiters() const;

 private:
  struct Scope {
    std::unordered_map<std::string, std::string> values;
    std::condition_variable changed;  // notified on every write and on drop
    size_t waiters = 0;
    bool dropped = false;
  };
  using Lock = std::unique_lock<std::mutex>;

  Status Validate(const KvScopeId& scope) const;
  Status ValidateKey(const std::string& key, const std::string& field) const;
  std::shared_ptr<Scope> Find(const KvScopeId& scope) const;
  std::shared_ptr<Scope> FindOrCreate(const KvScopeId& scope);
  // Removes the scope from the map when nothing is in it or waits on it, so that reads and waits
  // on scopes that never get a key leave nothing behind.
  void ForgetIfUnused(const KvScopeId& scope, const std::shared_ptr<Scope>& entry);
  // Stores `value` under `key` if the limits allow it, and wakes the scope's waiters.
  Status Put(Scope& scope, const KvScopeId& id, const std::string& key, std::string value);
  // Blocks until `ready()` or the scope is dropped, the timeout passes or the caller gives up.
  // `describe_wait` names what was awaited, for the error ("waiting for key 'x'").
  Status Await(Lock& lock, const KvScopeId& id, Scope& scope, const std::function<bool()>& ready,
               const KvWaitOptions& wait, const std::function<std::string()>& describe_wait);
  void DropLocked(const std::string& job_id, uint32_t generation, Scope& scope);

  const KvStoreLimits limits_;
  mutable std::mutex mu_;
  // job id -> generation -> scope. Scopes are shared with their waiters, so a waiter can see that
  // its scope was dropped after the map has let go of it.
  std::unordered_map<std::string, std::map<uint32_t, std::shared_ptr<Scope>>> jobs_;
  uint64_t total_bytes_ = 0;
  struct JobUsage {
    uint64_t bytes = 0;
    size_t keys = 0;
  };
  // Per job with at least one key; erased when its last key goes.
  std::unordered_map<std::string, JobUsage> usage_;
  void Release(const std::string& job_id, uint64_t bytes, size_t keys);
  size_t waiters_ = 0;
};

}  // namespace geotrain::coordinator
