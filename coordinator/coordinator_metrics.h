// The coordinator's Prometheus metrics (docs/metrics.md, "Coordinator (:9400)"), read from the
// core at scrape time: nothing is cached between scrapes, so a job that left the window (or a
// worker's old state) leaves no stale series behind.
//
// CoordinatorMetricFamilies and LinkMetricFamilies are the pure translations (records in, metric
// families out); CoordinatorMetrics is the prometheus::Collectable a MetricsEndpoint serves,
// which feeds them the core's workers, job window and link figures on every Collect. Collect may
// run on the endpoint's thread concurrently with anything else: it only calls the core's locking
// queries. StateStoreMetrics, served beside it, is the coordinator's health: whether its state
// store failed.
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

// The link table's families: throughput and latency gauges and sample counters for each link
// with samples, probe failure counters for each link with failures. Regions come from
// `workers` (dead ones included: a dead worker's links stay in the table); a link naming a
// worker not among them gets an empty region.
std::vector<prometheus::MetricFamily> LinkMetricFamilies(const std::vector<v1::Worker>& workers,
                                                         const std::vector<LinkFigures>& links);

// geotrain_coordinator_state_store_failed: 1 once a StateStore write failed (the coordinator then
// accepts no changes until it is restarted: docs/architecture.md, "Failure policy"), else 0.
prometheus::MetricFamily StateStoreFailedFamily(bool failed);

class CoordinatorMetrics final : public prometheus::Collectable {
 public:
  // `core` is not owned and must outlive every Collect call: unregister (destroy the endpoint)
  // before the core goes.
  explicit CoordinatorMetrics(const CoordinatorCore* core) : core_(core) {}

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const CoordinatorCore* const core_;
};

// The state store's health, a collectable of its own: one gauge that is always there (0 or 1), so
// an alert can fire on it, and one lock of the core per scrape instead of copies of its records.
class StateStoreMetrics final : public prometheus::Collectable {
 public:
  // As CoordinatorMetrics: `core` must outlive every Collect call.
  explicit StateStoreMetrics(const CoordinatorCore* core) : core_(core) {}

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const CoordinatorCore* const core_;
};

}  // namespace geotrain::coordinator
