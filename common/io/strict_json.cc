#include "common/io/strict_json.h"

#include <unordered_set>
#include <vector>

namespace geotrain::io {

using nlohmann::json;

StatusOr<json> ParseStrictJson(std::string_view text, const std::string& source) {
  // One key set per open object; the parser reports events in document order.
  std::vector<std::unordered_set<std::string>> open_objects;
  std::string duplicate;
  auto on_event = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
        open_objects.emplace_back();
        break;
      case json::parse_event_t::object_end:
        if (!open_objects.empty()) open_objects.pop_back();
        break;
      case json::parse_event_t::key:
        if (!open_objects.empty() && parsed.is_string() &&
            !open_objects.back().insert(parsed.get<std::string>()).second && duplicate.empty()) {
          duplicate = parsed.get<std::string>();
        }
        break;
      default:
        break;
    }
    return true;
  };
  json value;
  try {
    value = json::parse(text.begin(), text.end(), on_event);
  } catch (const json::parse_error& e) {
    // e.what() is "[json.exception.parse_error.101] parse error at line 1, column 9: reason".
    std::string reason = e.what();
    const size_t colon = reason.find(": ");
    if (colon != std::string::npos) reason = reason.substr(colon + 2);
    return InvalidArgument(source + ": invalid JSON at byte " + std::to_string(e.byte) + ": " +
                           reason);
  } catch (const std::exception& e) {
    return InvalidArgument(source + ": invalid JSON: " + e.what());
  }
  if (!duplicate.empty()) {
    return InvalidArgument(source + ": duplicate key \"" + duplicate + "\"");
  }
  return value;
}

std::string JsonKindName(const json& value) {
  switch (value.type()) {
    case json::value_t::object:
      return "an object";
    case json::value_t::array:
      return "an array";
    case json::value_t::string:
      return "a string";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::null:
      return "null";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "an integer";
    case json::value_t::number_float:
      return "a floating-point number";
    default:
      return "an unexpected value";
  }
}

StatusOr<uint64_t> JsonToUnsigned(const json& value, const std::string& field, uint64_t max_value) {
  uint64_t result;
  if (value.is_number_unsigned()) {
    result = value.get<uint64_t>();
  } else if (value.is_number_integer()) {
    return InvalidArgument(field + ": " + value.dump() + " is negative");
  } else if (value.is_number_float()) {
    // nlohmann stores integers beyond 64 bits as doubles too.
    return InvalidArgument(field + ": " + value.dump() + " is not an integer in range");
  } else {
    return InvalidArgument(field + ": expected an integer, got " + JsonKindName(value));
  }
  if (result > max_value) {
    return OutOfRange(field + ": " + std::to_string(result) + " exceeds the limit of " +
                      std::to_string(max_value));
  }
  return result;
}

}  // namespace geotrain::io
