// PageServer: serves one page (GET/HEAD of one path) over plain HTTP/1.1 from a single poll()
// loop: what MetricsEndpoint puts /metrics on.
//
// Why not a thread per connection (cpp-httplib, civetweb): there a connection holds a thread
// from accept until its request arrives, so idle or slow clients (a port scanner, a slow-loris
// sending a header byte a second) queue every scrape behind them; with httplib's one thread and
// 5 s read timeout, 20 idle connections held /metrics past Prometheus' 10 s scrape timeout.
// Here a connection is a buffer in the loop: an idle one costs nothing while it waits, and each
// has a deadline from its accept: the whole request head within `header_timeout`, the whole
// exchange within `exchange_timeout` (a client that does not read its answer), else it is
// closed. At `max_connections` the oldest connection is closed to admit a new one, so a flood
// cannot lock Prometheus out either. Every answer closes its connection (no keep-alive). What
// was cut is logged (a warning naming `flag` and the address, at most every 10 s).
//
// The page is rendered on the loop's thread, one request at a time; `render` must be quick and
// thread-safe with respect to the caller's other threads. The destructor stops the loop and
// closes every connection.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "common/io/host_port.h"
#include "common/status.h"

namespace geotrain {

class PageServer {
 public:
  struct Limits {
    std::chrono::milliseconds header_timeout{2000};     // accept -> end of the request head
    std::chrono::milliseconds exchange_timeout{10000};  // accept -> last byte of the answer
    size_t max_header_bytes = 8192;                     // a longer request head is refused
    size_t max_connections = 128;                       // open at once; the oldest goes first
  };
  using Render = std::function<std::string()>;

  // Binds `where` (port 0 picks a free one) and serves `path` ("/metrics"; a query string is
  // ignored) with `content_type` on a thread of its own. A busy or unusable address is
  // UNAVAILABLE naming `flag`.
  static StatusOr<std::unique_ptr<PageServer>> Start(const io::HostPort& where,
                                                     const std::string& flag, std::string path,
                                                     std::string content_type, Render render,
                                                     Limits limits);
  ~PageServer();
  PageServer(const PageServer&) = delete;
  PageServer& operator=(const PageServer&) = delete;

  int port() const { return port_; }

 private:
  struct Loop;
  PageServer(std::unique_ptr<Loop> loop, int port);

  std::unique_ptr<Loop> loop_;
  int port_;
  std::thread thread_;
};

}  // namespace geotrain
