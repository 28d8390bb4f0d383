#include "models/config_json/config_fields.h"

#include <cmath>

#include "common/io/strict_json.h"
#include "models/model_config.h"

namespace geotrain::models {

using json = nlohmann::json;

StatusOr<int64_t> ConfigFields::RequiredSize(const std::string& field, uint64_t max_value) const {
  if (!Has(field)) return Error(field, "missing");
  GEOTRAIN_ASSIGN_OR_RETURN(int64_t value, OptionalCount(field, 0, max_value));
  if (value == 0) return Error(field, "must be positive");
  return value;
}

StatusOr<int64_t> ConfigFields::OptionalSize(const std::string& field, int64_t fallback,
                                             uint64_t max_value) const {
  if (!Has(field)) return fallback;
  return RequiredSize(field, max_value);
}

StatusOr<int64_t> ConfigFields::OptionalCount(const std::string& field, int64_t fallback,
                                              uint64_t max_value) const {
  if (!Has(field)) return fallback;
  GEOTRAIN_ASSIGN_OR_RETURN(uint64_t value,
                            io::JsonToUnsigned(root_[field], source_ + ": " + field, max_value));
  return static_cast<int64_t>(value);
}

StatusOr<int64_t> ConfigFields::OptionalInteger(const std::string& field, int64_t fallback) const {
  if (!Has(field)) return fallback;
  const json& value = root_[field];
  if (!value.is_number_integer()) {
    return Error(field, "expected an integer, got " + io::JsonKindName(value));
  }
  constexpr int64_t kLimit = static_cast<int64_t>(kMaxModelDimension);
  const bool in_range = value.is_number_unsigned()
                            ? value.get<uint64_t>() <= kMaxModelDimension
                            : value.get<int64_t>() >= -kLimit && value.get<int64_t>() <= kLimit;
  if (!in_range) return Error(field, value.dump() + " is out of range");
  return value.get<int64_t>();
}

StatusOr<double> ConfigFields::OptionalPositiveNumber(const std::string& field,
                                                      double fallback) const {
  if (!Has(field)) return fallback;
  const json& value = root_[field];
  if (!value.is_number()) return Error(field, "expected a number, got " + io::JsonKindName(value));
  const double number = value.get<double>();
  if (!(number > 0) || !std::isfinite(number)) {
    return Error(field, value.dump() + " must be a positive finite number");
  }
  return number;
}

StatusOr<bool> ConfigFields::OptionalBool(const std::string& field, bool fallback) const {
  if (!Has(field)) return fallback;
  const json& value = root_[field];
  if (!value.is_boolean()) {
    return Error(field, "expected a boolean, got " + io::JsonKindName(value));
  }
  return value.get<bool>();
}

StatusOr<std::string> ConfigFields::OptionalString(const std::string& field,
                                                   std::string fallback) const {
  if (!Has(field)) return fallback;
  const json& value = root_[field];
  if (!value.is_string()) return Error(field, "expected a string, got " + io::JsonKindName(value));
  return value.get<std::string>();
}

Status ConfigFields::RequireBool(const std::string& field, bool supported) const {
  GEOTRAIN_ASSIGN_OR_RETURN(bool value, OptionalBool(field, supported));
  if (value != supported) {
    return Error(field, std::string(value ? "true" : "false") + " is not supported");
  }
  return OkStatus();
}

Status ConfigFields::RequireString(const std::string& field, const std::string& supported,
                                   const std::string& expected) const {
  GEOTRAIN_ASSIGN_OR_RETURN(std::string value, OptionalString(field, supported));
  if (value != supported) {
    return Error(field, "\"" + value + "\" is not supported (" + expected + ")");
  }
  return OkStatus();
}

Status ConfigFields::RequireDivides(const std::string& field, int64_t divisor,
                                    const std::string& dividend_field, int64_t dividend) const {
  if (dividend % divisor != 0) {
    return Error(field, std::to_string(divisor) + " does not divide " + dividend_field + " " +
                            std::to_string(dividend));
  }
  return OkStatus();
}

}  // namespace geotrain::models
