#include "worker/link_probe_socket.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <memory>

#include "common/clock.h"

namespace geotrain::worker::probe {
namespace {

struct AddrInfoDeleter {
  void operator()(addrinfo* info) const { ::freeaddrinfo(info); }
};
using AddrInfoList = std::unique_ptr<addrinfo, AddrInfoDeleter>;

StatusOr<AddrInfoList> Resolve(const std::string& host, int port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  const int rc =
      ::getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &found);
  if (rc != 0) {
    return Unavailable("cannot resolve \"" + host + "\": " + ::gai_strerror(rc));
  }
  return AddrInfoList(found);
}

Status DeadlineExceeded(std::string message) {
  return Status(StatusCode::kDeadlineExceeded, std::move(message));
}

std::string TimedOut(std::chrono::milliseconds timeout) {
  return "timed out after " + std::to_string(timeout.count()) + " ms";
}

// Non-blocking connect bounded by `timeout`; the socket is blocking again on success.
Status ConnectWithin(int fd, const sockaddr* address, socklen_t length,
                     std::chrono::milliseconds timeout) {
  const int flags = ::fcntl(fd, F_GETFL, 0);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    return Internal("fcntl: " + ErrnoText(errno));
  }
  if (::connect(fd, address, length) != 0) {
    if (errno != EINPROGRESS) return Unavailable(ErrnoText(errno));
    const int64_t deadline = RealClock().NowMonotonicMs() + timeout.count();
    while (true) {
      const int64_t left = deadline - RealClock().NowMonotonicMs();
      if (left <= 0) return DeadlineExceeded("connect " + TimedOut(timeout));
      pollfd waiting{fd, POLLOUT, 0};
      const int ready = ::poll(&waiting, 1, static_cast<int>(left));
      if (ready < 0 && errno == EINTR) continue;
      if (ready < 0) return Internal("poll: " + ErrnoText(errno));
      if (ready == 0) continue;
      int error = 0;
      socklen_t size = sizeof(error);
      if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size) != 0) error = errno;
      if (error != 0) return Unavailable(ErrnoText(error));
      break;
    }
  }
  if (::fcntl(fd, F_SETFL, flags) != 0) return Internal("fcntl: " + ErrnoText(errno));
  return OkStatus();
}

}  // namespace

SocketFd& SocketFd::operator=(SocketFd&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = other.Release();
  }
  return *this;
}

void SocketFd::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

std::string ErrnoText(int error) {
  std::string text = std::strerror(error);
  if (!text.empty()) text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
  return text;
}

Status SetIoTimeout(int fd, std::chrono::milliseconds timeout) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  if (::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0 ||
      ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) != 0) {
    return Internal("setting socket timeouts: " + ErrnoText(errno));
  }
  return OkStatus();
}

StatusOr<SocketFd> ConnectTcp(const std::string& host, int port, std::chrono::milliseconds timeout,
                              std::chrono::milliseconds io_timeout) {
  GEOTRAIN_ASSIGN_OR_RETURN(AddrInfoList addresses, Resolve(host, port, /*passive=*/false));
  Status last = Unavailable("no address");
  for (const addrinfo* a = addresses.get(); a != nullptr; a = a->ai_next) {
    SocketFd fd(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (!fd.valid()) {
      last = Internal("socket: " + ErrnoText(errno));
      continue;
    }
    last = ConnectWithin(fd.get(), a->ai_addr, a->ai_addrlen, timeout);
    if (!last.ok()) continue;
    const int one = 1;
    // Pings are 64-byte messages: Nagle would hold each one back for the previous one's ACK.
    ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    GEOTRAIN_RETURN_IF_ERROR(SetIoTimeout(fd.get(), io_timeout));
    return fd;
  }
  return last;
}

StatusOr<SocketFd> ListenTcp(const std::string& host, int port, int* bound_port) {
  GEOTRAIN_ASSIGN_OR_RETURN(AddrInfoList addresses, Resolve(host, port, /*passive=*/true));
  Status last = Unavailable("no address");
  for (const addrinfo* a = addresses.get(); a != nullptr; a = a->ai_next) {
    SocketFd fd(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (!fd.valid()) {
      last = Internal("socket: " + ErrnoText(errno));
      continue;
    }
    const int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd.get(), a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd.get(), 64) != 0) {
      last = Unavailable(ErrnoText(errno));
      continue;
    }
    sockaddr_storage bound{};
    socklen_t size = sizeof(bound);
    if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &size) != 0) {
      return Internal("getsockname: " + ErrnoText(errno));
    }
    *bound_port = bound.ss_family == AF_INET6
                      ? ntohs(reinterpret_cast<const sockaddr_in6*>(&bound)->sin6_port)
                      : ntohs(reinterpret_cast<const sockaddr_in*>(&bound)->sin_port);
    return fd;
  }
  return last;
}

Status WriteAll(int fd, const void* data, size_t size, std::chrono::milliseconds io_timeout) {
  const char* at = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::send(fd, at, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return DeadlineExceeded("write " + TimedOut(io_timeout));
    }
    if (n < 0) return Unavailable("write: " + ErrnoText(errno));
    at += n;
    size -= static_cast<size_t>(n);
  }
  return OkStatus();
}

StatusOr<size_t> ReadFull(int fd, void* data, size_t size, std::chrono::milliseconds io_timeout) {
  char* at = static_cast<char*>(data);
  size_t got = 0;
  while (got < size) {
    const ssize_t n = ::recv(fd, at + got, size - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return DeadlineExceeded("read " + TimedOut(io_timeout));
    }
    if (n < 0) return Unavailable("read: " + ErrnoText(errno));
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  return got;
}

}  // namespace geotrain::worker::probe
