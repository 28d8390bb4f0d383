// Status and StatusOr: errors as values across module boundaries.
//
// The training core (compression, net, models, runtime) must build without gRPC or abseil, so it
// carries this small equivalent of absl::Status. A Status is either OK or a code plus a message
// that names the offending field and the reason ("frame.shape[2]: 0 exceeds ...").
// Thread-compatible.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace geotrain {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // bad input from a caller, a file or the wire
  kDataLoss,            // checksum mismatch, truncated or corrupt data
  kOutOfRange,          // a value beyond a hard limit
  kFailedPrecondition,  // state does not allow the call (e.g. delta frame for an uncached sample)
  kResourceExhausted,   // a bounded resource is full
  kNotFound,
  kUnavailable,  // a peer or file that should be there is not
  kDeadlineExceeded,
  kInternal,          // a broken invariant of ours
  kUnauthenticated,   // the caller's credentials are missing or wrong (gRPC's UNAUTHENTICATED)
  kPermissionDenied,  // an authenticated caller acting beyond its identity (another worker's id)
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "INVALID_ARGUMENT: frame.ndim: 9 exceeds the maximum of 8"
  std::string ToString() const;

  // Returns a copy whose message is prefixed by `context` ("decoding forward frame: ...").
  Status WithContext(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status OkStatus() { return Status(); }
inline Status InvalidArgument(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status DataLoss(std::string m) { return {StatusCode::kDataLoss, std::move(m)}; }
inline Status OutOfRange(std::string m) { return {StatusCode::kOutOfRange, std::move(m)}; }
inline Status FailedPrecondition(std::string m) {
  return {StatusCode::kFailedPrecondition, std::move(m)};
}
inline Status ResourceExhausted(std::string m) {
  return {StatusCode::kResourceExhausted, std::move(m)};
}
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
inline Status Unauthenticated(std::string m) {
  return {StatusCode::kUnauthenticated, std::move(m)};
}
inline Status PermissionDenied(std::string m) {
  return {StatusCode::kPermissionDenied, std::move(m)};
}

// A value or the Status explaining why there is none.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    if (status_.ok()) status_ = Internal("StatusOr constructed from an OK status without a value");
  }

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace geotrain

// Returns from the enclosing function if `expr` yields a non-OK Status.
#define GEOTRAIN_RETURN_IF_ERROR(expr)                   \
  do {                                                   \
    ::geotrain::Status geotrain_status_ = (expr);        \
    if (!geotrain_status_.ok()) return geotrain_status_; \
  } while (0)

#define GEOTRAIN_CONCAT_INNER(a, b) a##b
#define GEOTRAIN_CONCAT(a, b) GEOTRAIN_CONCAT_INNER(a, b)
// GEOTRAIN_ASSIGN_OR_RETURN(auto x, MakeX()); declares x or returns the error.
#define GEOTRAIN_ASSIGN_OR_RETURN(lhs, expr)                 \
  auto GEOTRAIN_CONCAT(geotrain_or_, __LINE__) = (expr);     \
  if (!GEOTRAIN_CONCAT(geotrain_or_, __LINE__).ok())         \
    return GEOTRAIN_CONCAT(geotrain_or_, __LINE__).status(); \
  lhs = std::move(GEOTRAIN_CONCAT(geotrain_or_, __LINE__)).value()
