#include "coordinator/kv_store.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <utility>

#include "common/clock.h"

namespace geotrain::coordinator {
namespace {

// Charged per key on top of its bytes: a hostile client storing millions of empty values still
// pays for the hash-map nodes it costs us.
constexpr uint64_t kEntryOverhead = 64;

uint64_t Cost(const std::string& key, const std::string& value) {
  return key.size() + value.size() + kEntryOverhead;
}

// Keys come from clients: cut long ones so an error message stays one readable line.
std::string Quote(const std::string& text) {
  constexpr size_t kMax = 120;
  if (text.size() <= kMax) return "'" + text + "'";
  return "'" + text.substr(0, kMax) + "...' (" + std::to_string(text.size()) + " bytes)";
}

std::string ScopeName(const KvScopeId& scope) {
  return "job " + Quote(scope.job_id) + " generation " + std::to_string(scope.generation);
}

std::string KeyName(const KvScopeId& scope, const std::string& key) {
  return "key " + Quote(key) + " of " + ScopeName(scope);
}

std::string KeyList(const std::vector<std::string>& keys) {
  constexpr size_t kMaxListed = 8;
  std::string text;
  for (size_t i = 0; i < keys.size() && i < kMaxListed; ++i) {
    if (i > 0) text += ", ";
    text += Quote(keys[i]);
  }
  if (keys.size() > kMaxListed) {
    text += " and " + std::to_string(keys.size() - kMaxListed) + " more";
  }
  return text;
}

// The whole text must be a decimal int64, optionally negative, as c10d writes counters.
bool ParseDecimal(const std::string& text, int64_t* value) {
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  const auto [ptr, error] = std::from_chars(text.data(), end, *value);
  return error == std::errc() && ptr == end;
}

}  // namespace

Status KvStore::Validate(const KvScopeId& scope) const {
  if (scope.job_id.empty()) return InvalidArgument("scope.job_id: empty");
  if (scope.job_id.size() > limits_.max_key_bytes) {
    return InvalidArgument("scope.job_id: " + std::to_string(scope.job_id.size()) +
                           " bytes exceeds the limit of " + std::to_string(limits_.max_key_bytes));
  }
  return OkStatus();
}

Status KvStore::ValidateKey(const std::string& key, const std::string& field) const {
  if (key.empty()) return InvalidArgument(field + ": empty");
  if (key.size() > limits_.max_key_bytes) {
    return InvalidArgument(field + ": " + std::to_string(key.size()) +
                           " bytes exceeds the limit of " + std::to_string(limits_.max_key_bytes));
  }
  return OkStatus();
}

std::shared_ptr<KvStore::Scope> KvStore::Find(const KvScopeId& scope) const {
  const auto job = jobs_.find(scope.job_id);
  if (job == jobs_.end()) return nullptr;
  const auto generation = job->second.find(scope.generation);
  return generation == job->second.end() ? nullptr : generation->second;
}

std::shared_ptr<KvStore::Scope> KvStore::FindOrCreate(const KvScopeId& scope) {
  std::shared_ptr<Scope>& entry = jobs_[scope.job_id][scope.generation];
  if (!entry) entry = std::make_shared<Scope>();
  return entry;
}

void KvStore::ForgetIfUnused(const KvScopeId& scope, const std::shared_ptr<Scope>& entry) {
  if (entry->dropped || !entry->values.empty() || entry->waiters > 0) return;
  const auto job = jobs_.find(scope.job_id);
  if (job == jobs_.end()) return;
  const auto generation = job->second.find(scope.generation);
  if (generation == job->second.end() || generation->second != entry) return;
  job->second.erase(generation);
  if (job->second.empty()) jobs_.erase(job);
}

Status KvStore::Put(Scope& scope, const KvScopeId& id, const std::string& key, std::string value) {
  if (value.size() > limits_.max_value_bytes) {
    return ResourceExhausted(KeyName(id, key) + ": value of " + std::to_string(value.size()) +
                             " bytes exceeds the limit of " +
                             std::to_string(limits_.max_value_bytes));
  }
  const auto existing = scope.values.find(key);
  const uint64_t old_cost = existing == scope.values.end() ? 0 : Cost(key, existing->second);
  if (existing == scope.values.end() && scope.values.size() >= limits_.max_keys_per_scope) {
    spdlog::warn("rendezvous store: {} is full ({} keys)", ScopeName(id), scope.values.size());
    return ResourceExhausted(KeyName(id, key) + ": the scope already holds " +
                             std::to_string(scope.values.size()) + " keys, the limit");
  }
  const uint64_t new_total = total_bytes_ - old_cost + Cost(key, value);
  if (new_total > limits_.max_total_bytes) {
    spdlog::warn("rendezvous store: full ({} of {} bytes), refusing {}", total_bytes_,
                 limits_.max_total_bytes, KeyName(id, key));
    return ResourceExhausted(KeyName(id, key) + ": the store holds " +
                             std::to_string(total_bytes_) + " bytes and its limit is " +
                             std::to_string(limits_.max_total_bytes));
  }
  JobUsage& usage = usage_[id.job_id];
  const uint64_t new_job_bytes = usage.bytes - old_cost + Cost(key, value);
  const size_t new_job_keys = usage.keys + (existing == scope.values.end() ? 1 : 0);
  if (new_job_bytes > limits_.max_job_bytes || new_job_keys > limits_.max_job_keys) {
    const bool bytes = new_job_bytes > limits_.max_job_bytes;
    spdlog::warn(
        "rendezvous store: job {} is over its quota ({} bytes of {}, {} keys of {}), "
        "refusing {}",
        Quote(id.job_id), usage.bytes, limits_.max_job_bytes, usage.keys, limits_.max_job_keys,
        KeyName(id, key));
    if (usage.keys == 0) usage_.erase(id.job_id);
    return ResourceExhausted(
        KeyName(id, key) + ": job " + Quote(id.job_id) + " would exceed its quota of " +
        (bytes ? std::to_string(limits_.max_job_bytes) + " bytes"
               : std::to_string(limits_.max_job_keys) + " keys") +
        " in the rendezvous store (--rendezvous-job-max-" + (bytes ? "bytes" : "keys") + ")");
  }
  usage.bytes = new_job_bytes;
  usage.keys = new_job_keys;
  total_bytes_ = new_total;
  if (existing == scope.values.end()) {
    scope.values.emplace(key, std::move(value));
  } else {
    existing->second = std::move(value);
  }
  scope.changed.notify_all();
  return OkStatus();
}

Status KvStore::Await(Lock& lock, const KvScopeId& id, Scope& scope,
                      const std::function<bool()>& ready, const KvWaitOptions& wait,
                      const std::function<std::string()>& describe_wait) {
  const auto timeout = std::max(wait.timeout, std::chrono::milliseconds(0));
  const int64_t deadline = RealClock().NowMonotonicMs() + timeout.count();
  ++scope.waiters;
  ++waiters_;
  Status result;
  while (true) {
    if (scope.dropped) {
      result = FailedPrecondition(ScopeName(id) +
                                  ": scope dropped (the job ended or was placed "
                                  "again) while " +
                                  describe_wait());
      break;
    }
    if (ready()) break;
    const int64_t now = RealClock().NowMonotonicMs();
    if (now >= deadline) {
      result = Status(StatusCode::kDeadlineExceeded, ScopeName(id) + ": timed out after " +
                                                         std::to_string(timeout.count()) + " ms " +
                                                         describe_wait());
      break;
    }
    int64_t wake = deadline;
    if (wait.abandoned) {
      // The caller's check may take locks of its own (gRPC's call state): never under ours.
      lock.unlock();
      const bool abandoned = wait.abandoned();
      lock.lock();
      if (abandoned) {
        result = Unavailable(ScopeName(id) + ": the caller gave up " + describe_wait());
        break;
      }
      wake = std::min(wake, now + std::max<int64_t>(wait.abandon_check_interval.count(), 1));
    }
    scope.changed.wait_for(lock, std::chrono::milliseconds(wake - now));
  }
  --scope.waiters;
  --waiters_;
  return result;
}

Status KvStore::Set(const KvScopeId& scope, const std::string& key, std::string value) {
  GEOTRAIN_RETURN_IF_ERROR(Validate(scope));
  GEOTRAIN_RETURN_IF_ERROR(ValidateKey(key, "key"));
  std::lock_guard<std::mutex> lock(mu_);
  const std::shared_ptr<Scope> entry = FindOrCreate(scope);
  const Status status = Put(*entry, scope, key, std::move(value));
  ForgetIfUnused(scope, entry);
  return status;
}

StatusOr<std::string> KvStore::Get(const KvScopeId& scope, const std::string& key,
                                   const KvWaitOptions& wait) {
  GEOTRAIN_RETURN_IF_ERROR(Validate(scope));
  GEOTRAIN_RETURN_IF_ERROR(ValidateKey(key, "key"));
  Lock lock(mu_);
  if (wait.timeout <= std::chrono::milliseconds(0)) {
    if (const std::shared_ptr<Scope> entry = Find(scope)) {
      const auto found = entry->values.find(key);
      if (found != entry->values.end()) return found->second;
    }
    return NotFound(KeyName(scope, key) + ": not set");
  }
  const std::shared_ptr<Scope> entry = FindOrCreate(scope);
  const Status status = Await(
      lock, scope, *entry, [&] { return entry->values.count(key) > 0; }, wait,
      [&] { return "waiting for key " + Quote(key); });
  std::string value;
  if (status.ok()) value = entry->values.at(key);
  ForgetIfUnused(scope, entry);
  if (!status.ok()) return status;
  return value;
}

StatusOr<int64_t> KvStore::Add(const KvScopeId& scope, const std::string& key, int64_t delta) {
  GEOTRAIN_RETURN_IF_ERROR(Validate(scope));
  GEOTRAIN_RETURN_IF_ERROR(ValidateKey(key, "key"));
  std::lock_guard<std::mutex> lock(mu_);
  const std::shared_ptr<Scope> entry = FindOrCreate(scope);
  int64_t current = 0;
  const auto found = entry->values.find(key);
  Status status;
  if (found != entry->values.end() && !ParseDecimal(found->second, &current)) {
    status = FailedPrecondition(KeyName(scope, key) + ": holds a " +
                                std::to_string(found->second.size()) +
                                "-byte value that is not a decimal integer, so cannot be added to");
  }
  int64_t sum = 0;
  if (status.ok() && __builtin_add_overflow(current, delta, &sum)) {
    status = OutOfRange(KeyName(scope, key) + ": " + std::to_string(current) + " + " +
                        std::to_string(delta) + " overflows int64");
  }
  if (status.ok()) status = Put(*entry, scope, key, std::to_string(sum));
  ForgetIfUnused(scope, entry);
  if (!status.ok()) return status;
  return sum;
}

StatusOr<std::string> KvStore::CompareSet(const KvScopeId& scope, const std::string& key,
                                          const std::string& expected, std::string desired) {
  GEOTRAIN_RETURN_IF_ERROR(Validate(scope));
  GEOTRAIN_RETURN_IF_ERROR(ValidateKey(key, "key"));
  std::lock_guard<std::mutex> lock(mu_);
  const std::shared_ptr<Scope> entry = FindOrCreate(scope);
  const auto found = entry->values.find(key);
  const bool swap = found == entry->values.end() ? expected.empty() : found->second == expected;
  StatusOr<std::string> result = expected;
  if (swap) {
    std::string after = desired;
    const Status status = Put(*entry, scope, key, std::move(desired));
    result = status.ok() ? StatusOr<std::string>(std::move(after)) : StatusOr<std::string>(status);
  } else if (found != entry->values.end()) {
    result = found->second;
  }
  ForgetIfUnused(scope, entry);
  return result;
}

StatusOr<bool> KvStore::Check(const KvScopeId& scope, const std::vector<std::string>& keys) {
  GEOTRAIN_RETURN_IF_ERROR(Validate(scope));
  for (size_t i = 0; i < keys.size(); ++i) {
    GEOTRAIN_RETURN_IF_ERROR(ValidateKey(keys[i], "keys[" + std::to_string(i) + "]"));
  }
  std::lock_guard<std::mutex> lock(mu_);
  const std::shared_ptr<Scope> entry = Find(scope);
  return std::all_of(keys.begin(), keys.end(),
                     [&](const std::string& key) { return entry && entry->values.count(key) > 0; });
}

StatusOr<bool> KvStore::Delete(const KvScopeId& scope, const std::string& key) {
  GEOTRAIN_RETURN_IF_ERROR(Validate(scope));
  GEOTRAIN_RETURN_IF_ERROR(ValidateKey(key, "key"));
  std::lock_guard<std::mutex> lock(mu_);
  const std::shared_ptr<Scope> entry = Find(scope);
  if (!entry) return false;
  const auto found = entry->values.find(key);
  if (found == entry->values.end()) return false;
  total_bytes_ -= Cost(key, found->second);
  Release(scope.job_id, Cost(key, found->second), 1);
  entry->values.erase(found);
  entry->changed.notify_all();
  ForgetIfUnused(scope, entry);
  return true;
}

StatusOr<int64_t> KvStore::NumKeys(const KvScopeId& scope) {
  GEOTRAIN_RETURN_IF_ERROR(Validate(scope));
  std::lock_guard<std::mutex> lock(mu_);
  const std::shared_ptr<Scope> entry = Find(scope);
  return entry ? static_cast<int64_t>(entry->values.size()) : 0;
}

Status KvStore::Wait(const KvScopeId& scope, const std::vector<std::string>& keys,
                     const KvWaitOptions& wait) {
  GEOTRAIN_RETURN_IF_ERROR(Validate(scope));
  for (size_t i = 0; i < keys.size(); ++i) {
    GEOTRAIN_RETURN_IF_ERROR(ValidateKey(keys[i], "keys[" + std::to_string(i) + "]"));
  }
  Lock lock(mu_);
  const std::shared_ptr<Scope> entry = FindOrCreate(scope);
  const auto missing = [&] {
    std::vector<std::string> absent;
    for (const std::string& key : keys) {
      if (entry->values.count(key) == 0) absent.push_back(key);
    }
    return absent;
  };
  const Status status = Await(
      lock, scope, *entry, [&] { return missing().empty(); }, wait,
      [&] { return "waiting for keys " + KeyList(missing()); });
  ForgetIfUnused(scope, entry);
  return status;
}

void KvStore::Release(const std::string& job_id, uint64_t bytes, size_t keys) {
  const auto usage = usage_.find(job_id);
  if (usage == usage_.end()) return;
  usage->second.bytes -= bytes;
  usage->second.keys -= keys;
  if (usage->second.keys == 0) usage_.erase(usage);
}

uint64_t KvStore::JobBytes(const std::string& job_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto usage = usage_.find(job_id);
  return usage == usage_.end() ? 0 : usage->second.bytes;
}

size_t KvStore::JobKeys(const std::string& job_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto usage = usage_.find(job_id);
  return usage == usage_.end() ? 0 : usage->second.keys;
}

void KvStore::DropLocked(const std::string& job_id, uint32_t generation, Scope& scope) {
  uint64_t bytes = 0;
  for (const auto& [key, value] : scope.values) bytes += Cost(key, value);
  total_bytes_ -= bytes;
  Release(job_id, bytes, scope.values.size());
  if (!scope.values.empty() || scope.waiters > 0) {
    spdlog::info("rendezvous store: dropped job '{}' generation {} ({} keys, {} waiters woken)",
                 job_id, generation, scope.values.size(), scope.waiters);
  }
  scope.values.clear();
  scope.dropped = true;
  scope.changed.notify_all();
}

void KvStore::DropScope(const std::string& job_id, uint32_t generation) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto job = jobs_.find(job_id);
  if (job == jobs_.end()) return;
  const auto entry = job->second.find(generation);
  if (entry == job->second.end()) return;
  DropLocked(job_id, generation, *entry->second);
  job->second.erase(entry);
  if (job->second.empty()) jobs_.erase(job);
}

void KvStore::DropJob(const std::string& job_id) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto job = jobs_.find(job_id);
  if (job == jobs_.end()) return;
  for (auto& [generation, scope] : job->second) DropLocked(job_id, generation, *scope);
  jobs_.erase(job);
}

size_t KvStore::NumScopes() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t count = 0;
  for (const auto& [job_id, generations] : jobs_) count += generations.size();
  return count;
}

uint64_t KvStore::TotalBytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return total_bytes_;
}

size_t KvStore::NumWaiters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return waiters_;
}

}  // namespace geotrain::coordinator
