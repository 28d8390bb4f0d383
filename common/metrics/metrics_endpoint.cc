#include "common/metrics/metrics_endpoint.h"

#include <httplib.h>
#include <prometheus/gauge.h>
#include <prometheus/text_serializer.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/io/host_port.h"
#include "common/metrics/build_info.h"

namespace geotrain {

StatusOr<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::Start(const std::string& address,
                                                                  const std::string& flag) {
  GEOTRAIN_ASSIGN_OR_RETURN(io::HostPort where, io::ParseHostPort(address, flag));
  auto server = std::make_unique<httplib::Server>();
  // One scrape at a time is plenty, and keeps the daemon's thread count flat.
  server->new_task_queue = [] { return new httplib::ThreadPool(1); };
  errno = 0;
  int port = where.port;
  if (port == 0) {
    port = server->bind_to_any_port(where.host);
  } else if (!server->bind_to_port(where.host, port)) {
    port = -1;
  }
  if (port <= 0) {
    const std::string reason = errno ? std::strerror(errno) : "cannot bind";
    return Unavailable(flag + ": cannot serve metrics on " + address + ": " + reason);
  }
  const std::string bound = io::HostPort{where.host, port}.ToString();
  return std::unique_ptr<MetricsEndpoint>(new MetricsEndpoint(std::move(server), bound));
}

MetricsEndpoint::MetricsEndpoint(std::unique_ptr<httplib::Server> server, std::string address)
    : server_(std::move(server)),
      address_(std::move(address)),
      build_info_(std::make_shared<prometheus::Registry>()) {
  prometheus::BuildGauge()
      .Name("geotrain_build_info")
      .Help("Always 1; the labels say which geotrain this is")
      .Register(*build_info_)
      .Add({{"version", GeotrainVersion()}, {"revision", GeotrainRevision()}})
      .Set(1);
  collectables_.push_back(build_info_);
  server_->Get("/metrics", [this](const httplib::Request&, httplib::Response& response) {
    response.set_content(Render(), "text/plain; version=0.0.4; charset=utf-8");
  });
  thread_ = std::thread([this] { server_->listen_after_bind(); });
}

MetricsEndpoint::~MetricsEndpoint() {
  server_->stop();
  thread_.join();
}

void MetricsEndpoint::Register(const std::weak_ptr<prometheus::Collectable>& collectable) {
  std::lock_guard<std::mutex> lock(mu_);
  collectables_.push_back(collectable);
}

std::string MetricsEndpoint::Render() {
  std::vector<prometheus::MetricFamily> families;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& weak : collectables_) {
      if (auto collectable = weak.lock()) {
        std::vector<prometheus::MetricFamily> collected = collectable->Collect();
        families.insert(families.end(), std::make_move_iterator(collected.begin()),
                        std::make_move_iterator(collected.end()));
      }
    }
  }
  return prometheus::TextSerializer().Serialize(families);
}

}  // namespace geotrain
