#include "models/data/data_position.h"

#include <limits>

#include "common/io/strict_json.h"

namespace geotrain::models::data {

nlohmann::json DataPositionToJson(const DataPosition& position) {
  return {{"epoch", position.epoch}, {"index", position.index}};
}

StatusOr<DataPosition> DataPositionFromJson(const nlohmann::json& json) {
  if (!json.is_object()) {
    return InvalidArgument("data position: expected an object, got " + io::JsonKindName(json));
  }
  for (const auto& item : json.items()) {
    if (item.key() != "epoch" && item.key() != "index") {
      return InvalidArgument("data position: unknown field \"" + item.key() + "\"");
    }
  }
  DataPosition position;
  for (const char* field : {"epoch", "index"}) {
    if (!json.contains(field)) {
      return InvalidArgument(std::string("data position: ") + field + " is missing");
    }
    auto value = io::JsonToUnsigned(json.at(field), std::string("data position: ") + field,
                                    std::numeric_limits<int64_t>::max());
    if (!value.ok()) return value.status();
    (std::string(field) == "epoch" ? position.epoch : position.index) = *value;
  }
  return position;
}

}  // namespace geotrain::models::data
