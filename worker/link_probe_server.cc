#include "worker/link_probe_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "common/clock.h"
#include "common/io/host_port.h"
#include "worker/link_probe_protocol.h"

namespace geotrain::worker {
namespace {

using probe::SocketFd;

// The most a malformed header is warned about: once a minute, so a port scanner cannot fill the
// log.
constexpr int64_t kBadRequestLogIntervalMs = 60'000;
constexpr size_t kBulkReadBytes = 256 * 1024;

std::string PeerName(const sockaddr_storage& address) {
  char text[INET6_ADDRSTRLEN] = {};
  if (address.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&address);
    ::inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
    return io::HostPort{text, ntohs(in->sin_port)}.ToString();
  }
  if (address.ss_family == AF_INET6) {
    const auto* in = reinterpret_cast<const sockaddr_in6*>(&address);
    ::inet_ntop(AF_INET6, &in->sin6_addr, text, sizeof(text));
    return io::HostPort{text, ntohs(in->sin6_port)}.ToString();
  }
  return "unknown peer";
}

}  // namespace

StatusOr<std::unique_ptr<LinkProbeServer>> LinkProbeServer::Start(const std::string& listen,
                                                                  const std::string& flag,
                                                                  LinkProbeServerOptions options) {
  GEOTRAIN_ASSIGN_OR_RETURN(io::HostPort where, io::ParseHostPort(listen, flag));
  if (options.max_connections < 1) {
    return InvalidArgument("max_connections: " + std::to_string(options.max_connections) +
                           " is below 1");
  }
  int port = 0;
  StatusOr<SocketFd> listener = probe::ListenTcp(where.host, where.port, &port);
  if (!listener.ok()) {
    return listener.status().WithContext(flag + ": cannot listen on " + listen);
  }
  std::string address = io::HostPort{where.host, port}.ToString();
  auto server = std::unique_ptr<LinkProbeServer>(
      new LinkProbeServer(std::move(listener).value(), port, std::move(address), options));
  if (::pipe2(server->wake_pipe_, O_CLOEXEC) != 0) {
    return Internal(flag + ": pipe: " + probe::ErrnoText(errno));
  }
  server->accept_thread_ = std::thread([s = server.get()] { s->AcceptLoop(); });
  return server;
}

LinkProbeServer::LinkProbeServer(SocketFd listener, int port, std::string address,
                                 LinkProbeServerOptions options)
    : options_(options),
      listener_(std::move(listener)),
      port_(port),
      address_(std::move(address)) {}

LinkProbeServer::~LinkProbeServer() {
  if (accept_thread_.joinable()) {
    const char byte = 0;
    ssize_t ignored = ::write(wake_pipe_[1], &byte, 1);
    (void)ignored;
    accept_thread_.join();
  }
  std::list<Connection> open;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // A connection not yet done still owns its fd, so shutting it down here cannot hit a reused
    // descriptor; it wakes the thread's blocking read or write.
    for (Connection& c : connections_) {
      if (!c.done) ::shutdown(c.fd, SHUT_RDWR);
    }
    open.splice(open.end(), connections_);
  }
  for (Connection& c : open) c.thread.join();
  for (int fd : wake_pipe_) {
    if (fd >= 0) ::close(fd);
  }
}

void LinkProbeServer::AcceptLoop() {
  while (true) {
    pollfd fds[2] = {{listener_.get(), POLLIN, 0}, {wake_pipe_[0], POLLIN, 0}};
    const int ready = ::poll(fds, 2, -1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) {
      spdlog::error("link probe server on {}: poll: {}; no more probes are answered", address_,
                    probe::ErrnoText(errno));
      return;
    }
    if (fds[1].revents != 0) return;
    if (fds[0].revents == 0) continue;
    sockaddr_storage peer_address{};
    socklen_t size = sizeof(peer_address);
    SocketFd fd(::accept4(listener_.get(), reinterpret_cast<sockaddr*>(&peer_address), &size,
                          SOCK_CLOEXEC));
    if (!fd.valid()) {
      // ECONNABORTED and friends concern one peer; EMFILE passes once connections end.
      spdlog::debug("link probe server on {}: accept: {}", address_, probe::ErrnoText(errno));
      if (errno == EMFILE || errno == ENFILE) ::poll(nullptr, 0, 100);
      continue;
    }
    const std::string peer = PeerName(peer_address);
    if (ReapEnded() >= options_.max_connections) {
      ++busy_refusals_;
      spdlog::debug("link probe from {} refused: {} probe connections are open", peer,
                    options_.max_connections);
      continue;  // closing fd tells the peer
    }
    if (Status timeouts = probe::SetIoTimeout(fd.get(), options_.io_timeout); !timeouts.ok()) {
      spdlog::warn("link probe from {} refused: {}", peer, timeouts.message());
      continue;
    }
    std::lock_guard<std::mutex> lock(mu_);
    Connection& connection = connections_.emplace_back();
    connection.fd = fd.Release();
    connection.thread = std::thread([this, c = &connection, peer] { Serve(c, peer); });
  }
}

int LinkProbeServer::ReapEnded() {
  std::list<Connection> ended;
  int open = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = connections_.begin(); it != connections_.end();) {
      auto next = std::next(it);
      if (it->done) {
        ended.splice(ended.end(), connections_, it);
      } else {
        ++open;
      }
      it = next;
    }
  }
  for (Connection& c : ended) c.thread.join();
  return open;
}

void LinkProbeServer::Serve(Connection* connection, const std::string& peer) {
  const int fd = connection->fd;
  const auto io_timeout = options_.io_timeout;
  // Whatever happens, the fd is closed and the connection marked done under the lock, so the
  // destructor never shuts down a descriptor number the system has handed to someone else.
  auto finish = [this, connection] {
    std::lock_guard<std::mutex> lock(mu_);
    ::close(connection->fd);
    connection->done = true;
  };

  unsigned char header_bytes[probe::kProbeHeaderBytes];
  StatusOr<size_t> got = probe::ReadFull(fd, header_bytes, sizeof(header_bytes), io_timeout);
  if (!got.ok() || *got < sizeof(header_bytes)) {
    // A port check, or a peer that gave up: nothing worth a warning.
    spdlog::debug("link probe from {} ended before its header ({})", peer,
                  got.ok() ? std::to_string(*got) + " bytes" : got.status().message());
    finish();
    return;
  }
  probe::ProbeHeader header;
  if (const std::string why = probe::DecodeHeader(header_bytes, &header); !why.empty()) {
    LogBadRequest(peer, why);
    finish();
    return;
  }

  if (header.mode == probe::ProbeMode::kPing) {
    unsigned char message[probe::kPingMessageBytes];
    uint64_t carried = 0;
    while (carried < probe::kMaxProbeBytes) {
      got = probe::ReadFull(fd, message, sizeof(message), io_timeout);
      if (!got.ok() || *got < sizeof(message)) break;  // the client closed (or gave up)
      if (!probe::WriteAll(fd, message, sizeof(message), io_timeout).ok()) break;
      carried += sizeof(message);
    }
  } else {
    std::vector<unsigned char> buffer(kBulkReadBytes);
    uint64_t received = 0;
    Status failed;
    while (received < header.length) {
      const size_t want =
          static_cast<size_t>(std::min<uint64_t>(buffer.size(), header.length - received));
      got = probe::ReadFull(fd, buffer.data(), want, io_timeout);
      if (!got.ok()) {
        failed = got.status();
        break;
      }
      received += *got;
      if (*got < want) break;  // half-closed early: answer what arrived
    }
    if (failed.ok()) {
      unsigned char answer[probe::kBulkAnswerBytes];
      probe::PutU64(received, answer);
      if (Status sent = probe::WriteAll(fd, answer, sizeof(answer), io_timeout); !sent.ok()) {
        spdlog::debug("link probe from {}: answering: {}", peer, sent.message());
      }
    } else {
      spdlog::debug("link probe from {} after {} bytes: {}", peer, received, failed.message());
    }
  }
  finish();
}

void LinkProbeServer::LogBadRequest(const std::string& peer, const std::string& why) {
  ++bad_requests_;
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t now = RealClock().NowMonotonicMs();
  if (last_bad_log_ms_ && now - *last_bad_log_ms_ < kBadRequestLogIntervalMs) {
    ++unlogged_bad_;
    spdlog::debug("link probe from {} refused: {}", peer, why);
    return;
  }
  spdlog::warn(
      "link probe from {} refused: {} (not a geotrain probe client of this version?){}", peer, why,
      unlogged_bad_ > 0 ? "; " + std::to_string(unlogged_bad_) + " more since the last warning"
                        : std::string());
  last_bad_log_ms_ = now;
  unlogged_bad_ = 0;
}

}  // namespace geotrain::worker
