// ParseWeightedSourceList: the CocktailSGD "path:weight,path:weight" form of a data mixture.
//
// Each entry is a path with an optional ":weight" (a finite number > 0; default 1.0). The weight
// is what follows the last ':' of the entry, so a path that itself contains ':' needs an explicit
// weight ("a:b.txt:1"). Weights are normalised to sum to 1. Errors name the entry (its 0-based
// position and text): an empty entry, a weight that is not a positive finite number, a path
// listed twice. Thread-safe (no shared state).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace geotrain {

struct WeightedSource {
  std::string path;
  double weight = 1.0;  // normalised: the weights of a parsed list sum to 1
};

StatusOr<std::vector<WeightedSource>> ParseWeightedSourceList(std::string_view spec);

// Normalises `sources` in place so their weights sum to 1; errors name the entry as above.
Status NormaliseSourceWeights(std::vector<WeightedSource>* sources);

}  // namespace geotrain
