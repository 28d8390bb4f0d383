#include "worker/coordinator_store.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "worker/coordinator_channel.h"

namespace geotrain::worker {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Keys come from callers: cut long ones so an error message stays one readable line.
std::string Quote(const std::string& text) {
  constexpr size_t kMax = 120;
  if (text.size() <= kMax) return "'" + text + "'";
  return "'" + text.substr(0, kMax) + "...' (" + std::to_string(text.size()) + " bytes)";
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

std::vector<uint8_t> ToBytes(const std::string& text) { return {text.begin(), text.end()}; }
std::string ToText(const std::vector<uint8_t>& bytes) { return {bytes.begin(), bytes.end()}; }

std::unique_ptr<geotrain::v1::Rendezvous::Stub> NewStub(
    const std::shared_ptr<grpc::Channel>& channel) {
  if (!channel) throw std::invalid_argument("CoordinatorStore: channel: null");
  return geotrain::v1::Rendezvous::NewStub(channel);
}

}  // namespace

CoordinatorStore::CoordinatorStore(std::shared_ptr<grpc::Channel> channel,
                                   geotrain::v1::KvScope scope, std::chrono::milliseconds timeout,
                                   std::string coordinator_address)
    : Store(timeout),
      stub_(NewStub(channel)),
      scope_(std::move(scope)),
      coordinator_address_(coordinator_address.empty() ? "(address not given)"
                                                       : std::move(coordinator_address)) {
  if (scope_.job_id().empty()) throw std::invalid_argument("CoordinatorStore: scope.job_id: empty");
}

std::string CoordinatorStore::Describe(const std::string& operation) const {
  return "coordinator store: " + operation + " (job " + Quote(scope_.job_id()) + " generation " +
         std::to_string(scope_.generation()) + ", coordinator " + coordinator_address_ + ")";
}

milliseconds CoordinatorStore::OverallTimeout(milliseconds timeout) const {
  if (timeout == kNoTimeout) return kNoTimeoutCap;
  return std::clamp(timeout, milliseconds(1), kNoTimeoutCap);
}

void CoordinatorStore::Run(const std::string& operation, milliseconds timeout,
                           const std::vector<std::string>& waiting_for,
                           const Attempt& attempt) const {
  const milliseconds budget = OverallTimeout(timeout);
  const Clock::time_point deadline = Clock::now() + budget;
  Backoff backoff(kRetryBackoff);
  grpc::Status last;
  grpc::Status failure;  // the last error other than a slice's deadline, for the message
  bool retried = false;
  while (true) {
    const Clock::time_point now = Clock::now();
    if (now >= deadline) {
      std::string message =
          Describe(operation) + ": timed out after " + std::to_string(budget.count()) + " ms";
      if (!waiting_for.empty()) message += " waiting for keys " + KeyList(waiting_for);
      if (!failure.ok()) message += " (last error: " + DescribeRpcError(failure) + ")";
      throw std::runtime_error(message);
    }
    const milliseconds slice = std::min(std::chrono::ceil<milliseconds>(deadline - now), kRpcSlice);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + slice);
    // After a failure to connect, the retries wait for the new connection (a restarted
    // coordinator), and this thread drives its TLS handshake meanwhile (coordinator_channel.h).
    if (retried) WaitForReady(context);
    last = attempt(&context, slice);
    if (!last.ok() && last.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED) failure = last;
    if (last.ok()) {
      if (retried) spdlog::info("{}: the coordinator answered again", Describe(operation));
      return;
    }
    switch (last.error_code()) {
      case grpc::StatusCode::DEADLINE_EXCEEDED:
        // This slice's wait ended; the next one goes on until the overall deadline.
        break;
      case grpc::StatusCode::UNAVAILABLE:
      case grpc::StatusCode::CANCELLED: {
        if (!retried) {
          spdlog::warn("{}: {}; retrying until {} ms have passed", Describe(operation),
                       DescribeRpcError(last), budget.count());
        }
        retried = true;
        backoff.Wait(std::chrono::ceil<milliseconds>(deadline - Clock::now()));
        break;
      }
      default:
        throw std::runtime_error(Describe(operation) + ": " + DescribeRpcError(last));
    }
  }
}

void CoordinatorStore::set(const std::string& key, const std::vector<uint8_t>& value) {
  geotrain::v1::KvSetRequest request;
  *request.mutable_scope() = scope_;
  request.set_key(key);
  request.set_value(ToText(value));
  Run("set key " + Quote(key), timeout_, {}, [&](grpc::ClientContext* context, milliseconds) {
    geotrain::v1::KvSetResponse response;
    return stub_->KvSet(context, request, &response);
  });
}

std::vector<uint8_t> CoordinatorStore::compareSet(const std::string& key,
                                                  const std::vector<uint8_t>& expected,
                                                  const std::vector<uint8_t>& desired) {
  geotrain::v1::KvCompareSetRequest request;
  *request.mutable_scope() = scope_;
  request.set_key(key);
  request.set_expected(ToText(expected));
  request.set_desired(ToText(desired));
  geotrain::v1::KvCompareSetResponse response;
  Run("compareSet key " + Quote(key), timeout_, {},
      [&](grpc::ClientContext* context, milliseconds) {
        return stub_->KvCompareSet(context, request, &response);
      });
  return ToBytes(response.value());
}

std::vector<uint8_t> CoordinatorStore::get(const std::string& key) {
  geotrain::v1::KvGetRequest request;
  *request.mutable_scope() = scope_;
  request.set_key(key);
  geotrain::v1::KvGetResponse response;
  Run("get key " + Quote(key), timeout_, {key},
      [&](grpc::ClientContext* context, milliseconds slice) {
        request.set_wait_ms(static_cast<uint32_t>(slice.count()));
        return stub_->KvGet(context, request, &response);
      });
  return ToBytes(response.value());
}

int64_t CoordinatorStore::add(const std::string& key, int64_t value) {
  geotrain::v1::KvAddRequest request;
  *request.mutable_scope() = scope_;
  request.set_key(key);
  request.set_delta(value);
  geotrain::v1::KvAddResponse response;
  Run("add to key " + Quote(key), timeout_, {}, [&](grpc::ClientContext* context, milliseconds) {
    return stub_->KvAdd(context, request, &response);
  });
  return response.value();
}

bool CoordinatorStore::deleteKey(const std::string& key) {
  geotrain::v1::KvDeleteRequest request;
  *request.mutable_scope() = scope_;
  request.set_key(key);
  geotrain::v1::KvDeleteResponse response;
  Run("delete key " + Quote(key), timeout_, {}, [&](grpc::ClientContext* context, milliseconds) {
    return stub_->KvDelete(context, request, &response);
  });
  return response.deleted();
}

bool CoordinatorStore::check(const std::vector<std::string>& keys) {
  geotrain::v1::KvCheckRequest request;
  *request.mutable_scope() = scope_;
  for (const std::string& key : keys) request.add_keys(key);
  geotrain::v1::KvCheckResponse response;
  Run("check keys " + KeyList(keys), timeout_, {}, [&](grpc::ClientContext* context, milliseconds) {
    return stub_->KvCheck(context, request, &response);
  });
  return response.all_present();
}

int64_t CoordinatorStore::getNumKeys() {
  geotrain::v1::KvNumKeysRequest request;
  *request.mutable_scope() = scope_;
  geotrain::v1::KvNumKeysResponse response;
  Run("count keys", timeout_, {}, [&](grpc::ClientContext* context, milliseconds) {
    return stub_->KvNumKeys(context, request, &response);
  });
  return response.count();
}

void CoordinatorStore::wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }

void CoordinatorStore::wait(const std::vector<std::string>& keys,
                            const std::chrono::milliseconds& timeout) {
  geotrain::v1::KvWaitRequest request;
  *request.mutable_scope() = scope_;
  for (const std::string& key : keys) request.add_keys(key);
  Run("wait", timeout, keys, [&](grpc::ClientContext* context, milliseconds slice) {
    request.set_wait_ms(static_cast<uint32_t>(slice.count()));
    geotrain::v1::KvWaitResponse response;
    return stub_->KvWait(context, request, &response);
  });
}

void CoordinatorStore::watchKey(const std::string& key, c10d::WatchKeyCallback callback) {
  throw std::runtime_error(Describe("watchKey key " + Quote(key)) +
                           ": not supported (the coordinator's key-value API has no "
                           "notifications; Gloo rendezvous does not need them)");
}

}  // namespace geotrain::worker
