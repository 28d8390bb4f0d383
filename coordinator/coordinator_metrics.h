// The coordinator's Prometheus metrics (docs/metrics.md, "Coordinator (:9400)"), read from the
// core at scrape time: nothing is cached between scrapes, so a job that left the window (or a
// worker's old state) leaves no stale series behind.
//
// CoordinatorMetricFamilies is the pure translation (records in, metric families out);
// CoordinatorMetrics is the prometheus::Collectable a MetricsEndpoint serves, which feeds it the
// core's workers and job window on every Collect. Collect may run on the endpoint's thread
// concurrently with anything else: it only calls the core's locking queries.
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <cstddef>
#include <vector>

#include "coordinator/coordinator_core.h"

namespace geotrain::coordinator {

// Finished jobs that keep their series, newest first; older ones drop off the page.
constexpr size_t kMetricsFinishedJobs = 10;

// Every coordinator family, in the catalogue's order: worker and job counts by state (a 0 series
// for each empty state), then one series per job of `jobs.jobs` (submission order).
std::vector<prometheus::MetricFamily> CoordinatorMetricFamilies(
    const std::vector<v1::Worker>& workers, const JobWindow& jobs);

class CoordinatorMetrics final : public prometheus::Collectable {
 public:
  // `core` is not owned and must outlive every Collect call: unregister (destroy the endpoint)
  // before the core goes.
  explicit CoordinatorMetrics(const CoordinatorCore* core) : core_(core) {}

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const CoordinatorCore* const core_;
};

}  // namespace geotrain::coordinator
