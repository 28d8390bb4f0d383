#include "cli/control_json.h"

#include <google/protobuf/util/json_util.h>

namespace geotrain::cli {

StatusOr<std::string> ToJsonLine(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = false;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string json;
  const auto status = google::protobuf::util::MessageToJsonString(message, &json, options);
  if (!status.ok()) {
    return Internal("writing " + message.GetTypeName() + " as JSON: " + status.ToString());
  }
  return json;
}

}  // namespace geotrain::cli
