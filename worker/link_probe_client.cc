#include "worker/link_probe_client.h"

#include <sys/socket.h>

#include <algorithm>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "worker/link_probe_protocol.h"
#include "worker/link_probe_socket.h"

namespace geotrain::worker {
namespace {

using probe::SocketFd;

// Round trips and transfers are timed on the monotonic clock, in nanoseconds (common/clock.h).
int64_t NowNs() { return RealClock().NowMonotonicNs(); }
double Seconds(int64_t ns) { return static_cast<double>(ns) / 1e9; }

bool Cancelled(const LinkProbeClientOptions& options) {
  return options.cancel != nullptr && options.cancel->load();
}

Status SendHeader(int fd, probe::ProbeMode mode, uint64_t length,
                  std::chrono::milliseconds io_timeout) {
  unsigned char header[probe::kProbeHeaderBytes];
  probe::EncodeHeader(probe::ProbeHeader{mode, length}, header);
  return probe::WriteAll(fd, header, sizeof(header), io_timeout);
}

// The fastest of options.pings round trips, in nanoseconds.
StatusOr<int64_t> FastestRoundTrip(const std::string& host, int port,
                                   const LinkProbeClientOptions& options) {
  GEOTRAIN_ASSIGN_OR_RETURN(
      SocketFd fd, probe::ConnectTcp(host, port, options.connect_timeout, options.io_timeout));
  GEOTRAIN_RETURN_IF_ERROR(SendHeader(fd.get(), probe::ProbeMode::kPing, 0, options.io_timeout));
  unsigned char message[probe::kPingMessageBytes] = {};
  std::optional<int64_t> fastest;
  for (int i = 0; i < std::max(1, options.pings); ++i) {
    if (Cancelled(options)) return Unavailable("cancelled");
    message[0] = static_cast<unsigned char>(i);
    const int64_t start = NowNs();
    GEOTRAIN_RETURN_IF_ERROR(
        probe::WriteAll(fd.get(), message, sizeof(message), options.io_timeout));
    unsigned char echo[probe::kPingMessageBytes];
    GEOTRAIN_ASSIGN_OR_RETURN(size_t got,
                              probe::ReadFull(fd.get(), echo, sizeof(echo), options.io_timeout));
    const int64_t round_trip = NowNs() - start;
    if (got < sizeof(echo)) {
      return Unavailable(
          "the peer closed the connection during the pings (too many probes at once?)");
    }
    if (echo[0] != message[0]) return DataLoss("the peer echoed a different ping");
    if (!fastest || round_trip < *fastest) fastest = round_trip;
  }
  return *fastest;
}

// One BULK stream: what it sent, what the peer acknowledged, and when.
struct StreamOutcome {
  Status status;
  uint64_t acknowledged = 0;
  int64_t first_byte = 0;  // monotonic ns
  int64_t acknowledged_at = 0;
};

StreamOutcome RunStream(int fd, uint64_t share, int64_t deadline_ns,
                        const LinkProbeClientOptions& options) {
  StreamOutcome out;
  out.first_byte = NowNs();
  out.status = SendHeader(fd, probe::ProbeMode::kBulk, share, options.io_timeout);
  if (!out.status.ok()) return out;
  // Its content does not matter: TCP does not compress.
  const std::vector<unsigned char> chunk(std::max<size_t>(1, options.chunk_bytes), 0x5a);
  uint64_t sent = 0;
  while (sent < share) {
    if (Cancelled(options)) {
      out.status = Unavailable("cancelled");
      return out;
    }
    // Out of time: announce the end by half-closing. What waits in the socket buffer still
    // drains before the count comes back; stopping earlier by predicting that drain was tried
    // and stopped streams still in slow start on links with long round trips (a third of the
    // rate measured on 50 Mbit/s at 56 ms), so the bound stays loose rather than the figure wrong.
    if (NowNs() >= deadline_ns) break;
    const size_t size = static_cast<size_t>(std::min<uint64_t>(chunk.size(), share - sent));
    out.status = probe::WriteAll(fd, chunk.data(), size, options.io_timeout);
    if (!out.status.ok()) return out;
    sent += size;
  }
  ::shutdown(fd, SHUT_WR);
  unsigned char answer[probe::kBulkAnswerBytes];
  StatusOr<size_t> got = probe::ReadFull(fd, answer, sizeof(answer), options.io_timeout);
  out.acknowledged_at = NowNs();
  if (!got.ok()) {
    out.status = got.status().WithContext("waiting for the count of bytes received");
    return out;
  }
  if (*got < sizeof(answer)) {
    out.status = Unavailable("the peer closed the connection without counting the bytes");
    return out;
  }
  out.acknowledged = probe::GetU64(answer);
  if (out.acknowledged != sent) {
    out.status = DataLoss("the peer counted " + std::to_string(out.acknowledged) + " bytes of " +
                          std::to_string(sent) + " sent");
  }
  return out;
}

}  // namespace

geotrain::v1::ProbeResult ProbeLink(const geotrain::v1::ProbeTarget& target, uint64_t max_bytes,
                                    uint32_t max_ms, uint32_t streams,
                                    const LinkProbeClientOptions& options) {
  geotrain::v1::ProbeResult result;
  result.set_dst_worker_id(target.worker_id());
  const std::string where = "probe to " + target.worker_id() + " (" + target.address() + ":" +
                            std::to_string(target.port()) + ")";
  auto fail = [&](const Status& status) {
    result.set_throughput_bytes_per_second(0);
    result.set_error(where + ": " + status.message());
    result.set_unix_ms(RealClock().NowUnixMs());
    return result;
  };
  if (target.address().empty()) return fail(InvalidArgument("the target has no address"));
  if (target.port() == 0 || target.port() > 65535) {
    return fail(InvalidArgument("the target has no probe port in 1..65535"));
  }
  const int port = static_cast<int>(target.port());

  StatusOr<int64_t> round_trip = FastestRoundTrip(target.address(), port, options);
  if (!round_trip.ok()) return fail(round_trip.status());
  result.set_latency_seconds(Seconds(*round_trip) / 2);

  streams = static_cast<uint32_t>(
      std::min<uint64_t>({std::max<uint32_t>(streams, 1), kMaxProbeStreams, max_bytes}));
  max_bytes = std::min<uint64_t>(max_bytes, streams * probe::kMaxProbeBytes);
  if (max_bytes == 0) {
    result.set_unix_ms(RealClock().NowUnixMs());
    return result;
  }

  // Every connection is up before the clock starts, so a slow handshake is not taken for a slow
  // link.
  std::vector<SocketFd> connections;
  for (uint32_t i = 0; i < streams; ++i) {
    StatusOr<SocketFd> fd =
        probe::ConnectTcp(target.address(), port, options.connect_timeout, options.io_timeout);
    if (!fd.ok()) return fail(fd.status());
    connections.push_back(std::move(fd).value());
  }
  std::vector<StreamOutcome> outcomes(streams);
  std::vector<std::thread> threads;
  const int64_t deadline_ns = NowNs() + static_cast<int64_t>(max_ms) * 1'000'000;
  for (uint32_t i = 0; i < streams; ++i) {
    const uint64_t share = max_bytes / streams + (i == 0 ? max_bytes % streams : 0);
    threads.emplace_back([&, i, share] {
      outcomes[i] = RunStream(connections[i].get(), share, deadline_ns, options);
    });
  }
  for (std::thread& t : threads) t.join();

  uint64_t acknowledged = 0;
  int64_t first = outcomes[0].first_byte;
  int64_t last = outcomes[0].acknowledged_at;
  for (const StreamOutcome& o : outcomes) {
    if (!o.status.ok()) return fail(o.status);
    acknowledged += o.acknowledged;
    first = std::min(first, o.first_byte);
    last = std::max(last, o.acknowledged_at);
  }
  const double seconds = Seconds(last - first);
  result.set_bytes(acknowledged);
  result.set_seconds(seconds);
  result.set_throughput_bytes_per_second(seconds > 0 ? acknowledged / seconds : 0);
  result.set_unix_ms(RealClock().NowUnixMs());
  return result;
}

}  // namespace geotrain::worker
