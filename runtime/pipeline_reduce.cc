#include "runtime/pipeline_reduce.h"

#include <cmath>
#include <cstring>
#include <vector>

namespace geotrain::runtime {
namespace {

Status SendValue(net::Transport& link, int peer, double value, net::Timeout timeout) {
  uint8_t bytes[sizeof(double)];
  std::memcpy(bytes, &value, sizeof(value));
  return link.Send(peer, Span<const uint8_t>(bytes, sizeof(bytes)), timeout);
}

StatusOr<double> RecvValue(net::Transport& link, int peer, net::Timeout timeout) {
  std::vector<uint8_t> frame;
  GEOTRAIN_RETURN_IF_ERROR(link.Recv(peer, &frame, timeout));
  double value = 0;
  if (frame.size() != sizeof(value)) {
    return DataLoss("pipeline sum: expected an 8-byte value, got " + std::to_string(frame.size()) +
                    " bytes (the stages disagree on the schedule)");
  }
  std::memcpy(&value, frame.data(), sizeof(value));
  if (!std::isfinite(value)) return DataLoss("pipeline sum: received a non-finite value");
  return value;
}

Status SendValues(net::Transport& link, int peer, Span<float> values, net::Timeout timeout) {
  return link.Send(peer,
                   Span<const uint8_t>(reinterpret_cast<const uint8_t*>(values.data()),
                                       values.size() * sizeof(float)),
                   timeout);
}

Status RecvValues(net::Transport& link, int peer, std::vector<float>* values,
                  net::Timeout timeout) {
  std::vector<uint8_t> frame;
  GEOTRAIN_RETURN_IF_ERROR(link.Recv(peer, &frame, timeout));
  if (frame.size() != values->size() * sizeof(float)) {
    return DataLoss("pipeline sum: expected " + std::to_string(values->size()) +
                    " float values, got " + std::to_string(frame.size()) +
                    " bytes (the stages disagree on the shared tensors)");
  }
  std::memcpy(values->data(), frame.data(), frame.size());
  for (float value : *values) {
    if (!std::isfinite(value)) return DataLoss("pipeline sum: received a non-finite value");
  }
  return OkStatus();
}

}  // namespace

Status SumOverPipeline(Span<float> values, net::Transport* upstream, net::Transport* downstream,
                       net::Timeout timeout) {
  std::vector<float> received(values.size());
  if (upstream) {
    GEOTRAIN_RETURN_IF_ERROR(RecvValues(*upstream, 0, &received, timeout));
    // The partial sum so far first, then this stage's values: the order stage 0, 1, ...
    for (size_t i = 0; i < values.size(); ++i) values[i] = received[i] + values[i];
  }
  if (downstream) {
    GEOTRAIN_RETURN_IF_ERROR(SendValues(*downstream, 1, values, timeout));
    GEOTRAIN_RETURN_IF_ERROR(RecvValues(*downstream, 1, &received, timeout));
    std::memcpy(values.data(), received.data(), received.size() * sizeof(float));
  }
  if (upstream) GEOTRAIN_RETURN_IF_ERROR(SendValues(*upstream, 0, values, timeout));
  return OkStatus();
}

StatusOr<double> SumOverPipeline(double local, net::Transport* upstream, net::Transport* downstream,
                                 net::Timeout timeout) {
  double partial = local;
  if (upstream) {
    GEOTRAIN_ASSIGN_OR_RETURN(double before, RecvValue(*upstream, 0, timeout));
    partial += before;
  }
  double total = partial;
  if (downstream) {
    GEOTRAIN_RETURN_IF_ERROR(SendValue(*downstream, 1, partial, timeout));
    GEOTRAIN_ASSIGN_OR_RETURN(total, RecvValue(*downstream, 1, timeout));
  }
  if (upstream) GEOTRAIN_RETURN_IF_ERROR(SendValue(*upstream, 0, total, timeout));
  return total;
}

}  // namespace geotrain::runtime
