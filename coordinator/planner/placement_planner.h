// Placement planning: which workers run which ranks of a pipeline x data-parallel job so that the
// step cost model (step_cost_model.h) predicts the shortest step.
//
// The search (docs/placement.md): every starting grid (starting_grids.h) through the whole-unit
// steps (group_orders.h: the stage groups' order along the pipeline, exact; the replica
// numbering, which is every stage group's ring order in the runtime), then, best start first,
// rank moves (swap two ranks' workers, or a rank's worker with an idle one; first improvement in
// a fixed scan order) alternating with the whole-unit steps; then kick the best with a few random
// swaps and search again until `max_kicks_without_improvement` kicks in a row found nothing or
// the time budget is spent. The replica ring is ordered last.
//
// A pure function of its arguments and the seed as long as the budget is not what stops it.
// Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "coordinator/planner/step_cost_model.h"

namespace geotrain::planner {

struct PlannerOptions {
  uint64_t seed = 1;
  // Wall-clock seconds for the search. The starting grids are always costed; local search and
  // kicks stop once it is spent (checked every few dozen evaluations).
  double time_budget_seconds = 0.5;
  // Stop kicking after this many kicks in a row that did not find a better grid.
  int max_kicks_without_improvement = 40;
  CostOptions cost;
};

struct Plan {
  Grid grid;            // S*D ranks -> worker indexes; empty when `error` is set
  StepCost cost;        // EstimateStepCost of `grid`
  int evaluations = 0;  // grids costed (a move = one, a full costing = one)
  double seconds = 0;   // wall-clock seconds the planner ran
  std::string start;    // the starting grid the plan descends from ("in-order", ...)
  std::string error;    // "field: reason" when the inputs cannot be planned; "" otherwise
};

// Chooses which workers run which rank (workers beyond S*D stay idle). Never returns a grid that
// costs more than InOrderGrid. Inputs that cannot be planned (fewer workers than S*D ranks, a
// shape failing CheckJobShape, links not workers.size() square, a speed <= 0) give a Plan with an
// empty grid and `error` naming the field; nothing is thrown.
Plan PlanPlacement(const JobShape& shape, const std::vector<WorkerInfo>& workers,
                   const LinkCosts& links, const PlannerOptions& options = {});

}  // namespace geotrain::planner
