// MetricsEndpoint: the HTTP /metrics page of a daemon, in Prometheus text format.
//
// Every endpoint carries geotrain_build_info{version, revision} 1 next to the daemon's own
// collectables. Binding happens in Start, so a busy or malformed address is a Status naming the
// flag, never an exception.
//
// The page is served by a PageServer (one poll() loop on a thread of its own, so idle or slow
// clients cannot stall a scrape: page_server.h), and the text comes from prometheus-cpp's
// serializer. Not prometheus-cpp's pull exposer: its web server (civetweb) gives each connection
// a thread, and starts threads with a fixed 100 KiB stack while glibc places every loaded
// library's static TLS on each thread's stack (about 106 KiB in a LibTorch process: OpenBLAS,
// glog, libtorch), so it cannot start a single thread in geotrain-worker.
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/registry.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"

namespace geotrain {

class PageServer;

class MetricsEndpoint {
 public:
  // Serves /metrics on `address` ("HOST:PORT"; port 0 picks a free one). `flag` names the
  // option the address came from, for errors ("--metrics-listen").
  static StatusOr<std::unique_ptr<MetricsEndpoint>> Start(const std::string& address,
                                                          const std::string& flag);
  // Stops serving (an in-flight render finishes first) and closes every connection.
  ~MetricsEndpoint();
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  // Serves `collectable` too for as long as it lives (a weak reference is kept).
  void Register(const std::weak_ptr<prometheus::Collectable>& collectable);

  // "HOST:PORT" with the port actually bound.
  const std::string& address() const { return address_; }

 private:
  MetricsEndpoint();
  // The page: every live collectable's families, serialized.
  std::string Render();

  std::string address_;
  std::mutex mu_;
  std::vector<std::weak_ptr<prometheus::Collectable>> collectables_;  // guarded by mu_
  std::shared_ptr<prometheus::Registry> build_info_;
  std::unique_ptr<PageServer> server_;  // last: stopped first, while the rest still lives
};

}  // namespace geotrain
