// MetricsEndpoint: the HTTP /metrics page of a daemon, in Prometheus text format.
//
// Every endpoint carries geotrain_build_info{version, revision} 1 next to the daemon's own
// collectables. Binding happens in Start, so a busy or malformed address is a Status naming the
// flag, never an exception.
//
// The page is served by cpp-httplib on one thread of its own, and the text comes from
// prometheus-cpp's serializer. Not prometheus-cpp's pull exposer: its web server (civetweb)
// starts threads with a fixed 100 KiB stack, and glibc places every loaded library's static TLS on
// each thread's stack (about 106 KiB in a LibTorch process: OpenBLAS, glog, libtorch), so it
// cannot start a single thread in geotrain-worker.
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/registry.h>

#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"

namespace httplib {
class Server;
}

namespace geotrain {

class MetricsEndpoint {
 public:
  // Serves /metrics on `address` ("HOST:PORT"; port 0 picks a free one). `flag` names the
  // option the address came from, for errors ("--metrics-listen").
  static StatusOr<std::unique_ptr<MetricsEndpoint>> Start(const std::string& address,
                                                          const std::string& flag);
  // Stops serving (an in-flight scrape finishes first).
  ~MetricsEndpoint();
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  // Serves `collectable` too for as long as it lives (a weak reference is kept).
  void Register(const std::weak_ptr<prometheus::Collectable>& collectable);

  // "HOST:PORT" with the port actually bound.
  const std::string& address() const { return address_; }

 private:
  MetricsEndpoint(std::unique_ptr<httplib::Server> server, std::string address);
  // The page: every live collectable's families, serialized.
  std::string Render();

  std::unique_ptr<httplib::Server> server_;
  std::string address_;
  std::mutex mu_;
  std::vector<std::weak_ptr<prometheus::Collectable>> collectables_;  // guarded by mu_
  std::shared_ptr<prometheus::Registry> build_info_;
  std::thread thread_;
};

}  // namespace geotrain
