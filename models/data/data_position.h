// DataPosition: where a BatchIterator stands, saved with a checkpoint to resume exactly.
//
// {epoch, index}: the next batch is batch `index` (0-based) of epoch `epoch` for this rank.
// Together with the dataset and the BatchOptions it fully determines every later batch, so a
// run restored from a checkpoint continues with the very batches an uninterrupted run would
// have seen. Stored as JSON {"epoch": E, "index": I}. A value type.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

#include "common/status.h"

namespace geotrain::models::data {

struct DataPosition {
  uint64_t epoch = 0;
  uint64_t index = 0;

  bool operator==(const DataPosition& other) const {
    return epoch == other.epoch && index == other.index;
  }
  bool operator!=(const DataPosition& other) const { return !(*this == other); }
};

nlohmann::json DataPositionToJson(const DataPosition& position);
// Errors name the field ("data position: index: ..."); unknown fields are refused.
StatusOr<DataPosition> DataPositionFromJson(const nlohmann::json& json);

}  // namespace geotrain::models::data
