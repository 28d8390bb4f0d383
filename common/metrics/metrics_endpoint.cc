#include "common/metrics/metrics_endpoint.h"

#include <prometheus/gauge.h>
#include <prometheus/text_serializer.h>

#include "common/io/host_port.h"
#include "common/metrics/build_info.h"
#include "common/metrics/page_server.h"

namespace geotrain {

StatusOr<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::Start(const std::string& address,
                                                                  const std::string& flag) {
  GEOTRAIN_ASSIGN_OR_RETURN(io::HostPort where, io::ParseHostPort(address, flag));
  std::unique_ptr<MetricsEndpoint> endpoint(new MetricsEndpoint());
  MetricsEndpoint* self = endpoint.get();
  GEOTRAIN_ASSIGN_OR_RETURN(endpoint->server_,
                            PageServer::Start(
                                where, flag, "/metrics", "text/plain; version=0.0.4; charset=utf-8",
                                [self] { return self->Render(); }, PageServer::Limits{}));
  endpoint->address_ = io::HostPort{where.host, endpoint->server_->port()}.ToString();
  return endpoint;
}

MetricsEndpoint::MetricsEndpoint() : build_info_(std::make_shared<prometheus::Registry>()) {
  prometheus::BuildGauge()
      .Name("geotrain_build_info")
      .Help("Always 1; the labels say which geotrain this is")
      .Register(*build_info_)
      .Add({{"version", GeotrainVersion()}, {"revision", GeotrainRevision()}})
      .Set(1);
  collectables_.push_back(build_info_);
}

MetricsEndpoint::~MetricsEndpoint() = default;

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
