// The grids the placement search starts from: the join order, and constructions that use what
// the cost model cannot see directly, regions (workers of one region share fast links).
//
// Free functions over values; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "coordinator/planner/step_cost_model.h"

namespace geotrain::planner {

struct StartingGrid {
  std::string
      name;  // "in-order", "fastest-in-order", "pipelines-in-regions", "stage-groups-in-regions"
  Grid grid;
};

// For each worker, the index of its region in order of first appearance.
std::vector<int> RegionIndexes(const std::vector<WorkerInfo>& workers);

// Every starting grid, in-order first. Precondition: workers.size() >= S*D and the shape passes
// CheckJobShape; links.size() == workers.size().
//  - in-order: rank r on worker r.
//  - fastest-in-order: the S*D fastest workers, in join order.
//  - pipelines-in-regions: whole replicas inside one region, largest regions first (fewest
//    regions per stage group), fastest workers first and on the heaviest stages; leftover
//    replicas from the leftover workers grouped by region.
//  - stage-groups-in-regions (transposed): each stage group inside one region, the groups
//    chained so consecutive stages cross the widest links; pipelines cross regions.
std::vector<StartingGrid> StartingGrids(const JobShape& shape,
                                        const std::vector<WorkerInfo>& workers,
                                        const LinkCosts& links, const CostOptions& options);

}  // namespace geotrain::planner
