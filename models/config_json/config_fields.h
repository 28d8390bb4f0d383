// ConfigFields: typed reads of the keys of one config.json object, for the family readers
// (config_json/families.h). Every error is InvalidArgument "<source>: <field>: <reason>"
// ("config.json: n_head: expected an integer, got a string"). An absent key and a null one both
// mean "not given" (Has) and give the fallback, as transformers' defaults do; IsNull tells them
// apart where null means something else.
//
// Views the object: it must outlive the ConfigFields. Plain reads; thread-safe.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "common/status.h"

namespace geotrain::models {

class ConfigFields {
 public:
  ConfigFields(const nlohmann::json& root, std::string source)
      : root_(root), source_(std::move(source)) {}

  bool Has(const std::string& field) const {
    return root_.contains(field) && !root_[field].is_null();
  }
  bool IsNull(const std::string& field) const {
    return root_.contains(field) && root_[field].is_null();
  }
  Status Error(const std::string& field, const std::string& reason) const {
    return InvalidArgument(source_ + ": " + field + ": " + reason);
  }

  // A positive integer in [1, max_value].
  StatusOr<int64_t> RequiredSize(const std::string& field, uint64_t max_value) const;
  StatusOr<int64_t> OptionalSize(const std::string& field, int64_t fallback,
                                 uint64_t max_value) const;
  // A size that may be 0 (a feature's absence, as deberta-v2's type_vocab_size).
  StatusOr<int64_t> OptionalCount(const std::string& field, int64_t fallback,
                                  uint64_t max_value) const;
  // An integer of either sign within +-kMaxModelDimension (settings where -1 means "default").
  StatusOr<int64_t> OptionalInteger(const std::string& field, int64_t fallback) const;
  StatusOr<double> OptionalPositiveNumber(const std::string& field, double fallback) const;
  StatusOr<bool> OptionalBool(const std::string& field, bool fallback) const;
  StatusOr<std::string> OptionalString(const std::string& field, std::string fallback) const;
  // Refuses a setting whose non-default value changes the computation in a way not implemented.
  Status RequireBool(const std::string& field, bool supported) const;
  // Refuses a string setting other than `supported` (also its fallback), with the message
  // "\"<value>\" is not supported (<expected>)".
  Status RequireString(const std::string& field, const std::string& supported,
                       const std::string& expected) const;

  // Refuses a `divisor` (the value of `field`) that does not divide `dividend`, the value of
  // `dividend_field`: "<divisor> does not divide <dividend_field> <dividend>".
  Status RequireDivides(const std::string& field, int64_t divisor,
                        const std::string& dividend_field, int64_t dividend) const;

  const nlohmann::json& operator[](const std::string& field) const { return root_[field]; }
  const std::string& source() const { return source_; }

 private:
  const nlohmann::json& root_;
  std::string source_;
};

}  // namespace geotrain::models
