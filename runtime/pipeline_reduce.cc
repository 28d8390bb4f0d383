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

}  // namespace

StatusOr<double> SumOverPipeline(double local, net::Transport* upstream,
                                 net::Transport* downstream, net::Timeout timeout) {
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
