// The blocking TCP socket calls the link probe's client and server share: connect and listen
// with getaddrinfo, per-socket read/write timeouts, whole reads and writes. Errors are plain
// lower-case phrases ("connection refused", "timed out after 10000 ms") for the caller to prefix
// with what it was doing. Thread-compatible: one thread per socket.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "common/status.h"

namespace geotrain::worker::probe {

// Owns a file descriptor; closes it on destruction.
class SocketFd {
 public:
  SocketFd() = default;
  explicit SocketFd(int fd) : fd_(fd) {}
  SocketFd(SocketFd&& other) noexcept : fd_(other.Release()) {}
  SocketFd& operator=(SocketFd&& other) noexcept;
  SocketFd(const SocketFd&) = delete;
  SocketFd& operator=(const SocketFd&) = delete;
  ~SocketFd() { Close(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int Release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void Close();

 private:
  int fd_ = -1;
};

// "connection refused": strerror's text with a lower-case first letter.
std::string ErrnoText(int error);

// Connects to host:port (a name or a numeric address), giving up after `timeout`; the socket
// gets TCP_NODELAY and `io_timeout` on every later read and write.
StatusOr<SocketFd> ConnectTcp(const std::string& host, int port, std::chrono::milliseconds timeout,
                              std::chrono::milliseconds io_timeout);

// Listens on host:port (port 0: any free port); *bound_port gets the port bound.
StatusOr<SocketFd> ListenTcp(const std::string& host, int port, int* bound_port);

// SO_RCVTIMEO/SO_SNDTIMEO, so that no read or write blocks longer than `timeout`.
Status SetIoTimeout(int fd, std::chrono::milliseconds timeout);

// Writes all of `data`. A write that times out or fails is an error.
Status WriteAll(int fd, const void* data, size_t size, std::chrono::milliseconds io_timeout);
// Reads until `size` bytes or the peer's end of stream; returns how many arrived.
StatusOr<size_t> ReadFull(int fd, void* data, size_t size, std::chrono::milliseconds io_timeout);

}  // namespace geotrain::worker::probe
