// LinkProbeServer: the worker daemon's end of other workers' link probes
// (worker/link_probe_protocol.h): it echoes PINGs and counts BULK bytes, so a peer can measure
// the latency and throughput of the link towards this worker.
//
// Bounded on purpose, since anyone who can reach the port can connect: at most max_connections
// at once (more are accepted and closed at once), every read and write gives up after
// io_timeout, and no connection carries more than kMaxProbeBytes. A malformed header is answered
// by closing; it is logged at warn at most once a minute (the others at debug, counted).
//
// Threads: one accept thread, plus one per open connection. The destructor stops accepting,
// shuts down the open connections and joins every thread; it may take as long as one write to a
// peer that stopped reading (bounded by io_timeout). Every method is thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "common/status.h"
#include "worker/link_probe_socket.h"

namespace geotrain::worker {

struct LinkProbeServerOptions {
  int max_connections = 16;                     // concurrent; more are closed at once
  std::chrono::milliseconds io_timeout{10000};  // each read and write of a connection
};

class LinkProbeServer {
 public:
  // Listens on `listen` (HOST:PORT, port 0: any free port; "[::]:0" for IPv6). Errors name
  // `flag` ("--probe-listen: cannot listen on 10.0.0.9:7100: cannot assign requested address").
  static StatusOr<std::unique_ptr<LinkProbeServer>> Start(const std::string& listen,
                                                          const std::string& flag,
                                                          LinkProbeServerOptions options = {});
  ~LinkProbeServer();
  LinkProbeServer(const LinkProbeServer&) = delete;
  LinkProbeServer& operator=(const LinkProbeServer&) = delete;

  // The bound port, and HOST:PORT with it.
  int port() const { return port_; }
  const std::string& address() const { return address_; }

  // Connections closed at once because max_connections were open; requests refused as malformed.
  uint64_t busy_refusals() const { return busy_refusals_; }
  uint64_t bad_requests() const { return bad_requests_; }

 private:
  struct Connection {
    int fd = -1;
    bool done = false;  // the thread has closed fd and is about to return
    std::thread thread;
  };

  LinkProbeServer(probe::SocketFd listener, int port, std::string address,
                  LinkProbeServerOptions options);
  void AcceptLoop();
  void Serve(Connection* connection, const std::string& peer);
  // Joins the threads of ended connections; returns how many are still open.
  int ReapEnded();
  void LogBadRequest(const std::string& peer, const std::string& why);

  const LinkProbeServerOptions options_;
  probe::SocketFd listener_;
  const int port_;
  const std::string address_;
  int wake_pipe_[2] = {-1, -1};  // written by the destructor to end AcceptLoop's poll
  std::thread accept_thread_;

  std::mutex mu_;
  std::list<Connection> connections_;
  std::optional<int64_t> last_bad_log_ms_;  // monotonic (common/clock.h); unset: never logged
  uint64_t unlogged_bad_ = 0;

  std::atomic<uint64_t> busy_refusals_{0};
  std::atomic<uint64_t> bad_requests_{0};
};

}  // namespace geotrain::worker
