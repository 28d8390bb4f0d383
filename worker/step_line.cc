#include "worker/step_line.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

namespace geotrain::worker {
namespace {

using nlohmann::json;

Status WrongType(const std::string& path, const char* expected, const json& value) {
  return InvalidArgument("step line: " + path + ": expected " + expected + ", got " +
                         value.type_name());
}

// Reads an optional key into `out`; absent (or null) keys keep the default.
Status ReadDouble(const json& object, const std::string& key, double* out,
                  bool* present = nullptr) {
  const auto it = object.find(key);
  if (present) *present = false;
  if (it == object.end() || it->is_null()) return OkStatus();
  if (!it->is_number()) return WrongType(key, "a number", *it);
  *out = it->get<double>();
  if (present) *present = true;
  return OkStatus();
}

Status ReadInt64(const json& object, const std::string& key, int64_t* out) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return OkStatus();
  if (it->is_number_unsigned()) {
    const uint64_t value = it->get<uint64_t>();
    if (value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return InvalidArgument("step line: " + key + ": " + std::to_string(value) + " is too large");
    }
    *out = static_cast<int64_t>(value);
    return OkStatus();
  }
  if (!it->is_number_integer()) return WrongType(key, "an integer", *it);
  *out = it->get<int64_t>();
  return OkStatus();
}

// `parent` names the enclosing object in messages ("raw_bytes.dp").
Status ReadUint64(const json& object, const std::string& key, uint64_t* out,
                  const std::string& parent) {
  const std::string path = parent.empty() ? key : parent + "." + key;
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return OkStatus();
  if (it->is_number_unsigned()) {
    *out = it->get<uint64_t>();
    return OkStatus();
  }
  if (it->is_number_integer()) {
    return InvalidArgument("step line: " + path + ": " + std::to_string(it->get<int64_t>()) +
                           " is negative");
  }
  return WrongType(path, "a non-negative integer", *it);
}

Status ReadBool(const json& object, const std::string& key, bool* out) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return OkStatus();
  if (!it->is_boolean()) return WrongType(key, "true or false", *it);
  *out = it->get<bool>();
  return OkStatus();
}

// raw_bytes / wire_bytes: {forward, backward, dp, embedding}.
Status ReadBytes(const json& object, const std::string& key, uint64_t* forward, uint64_t* backward,
                 uint64_t* dp, uint64_t* embedding) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return OkStatus();
  if (!it->is_object()) return WrongType(key, "an object", *it);
  GEOTRAIN_RETURN_IF_ERROR(ReadUint64(*it, "forward", forward, key));
  GEOTRAIN_RETURN_IF_ERROR(ReadUint64(*it, "backward", backward, key));
  GEOTRAIN_RETURN_IF_ERROR(ReadUint64(*it, "dp", dp, key));
  GEOTRAIN_RETURN_IF_ERROR(ReadUint64(*it, "embedding", embedding, key));
  return OkStatus();
}

}  // namespace

StatusOr<geotrain::v1::StepReport> ParseStepLine(const std::string& line) {
  // Most log lines are not JSON: skip the parser for them.
  const size_t first = line.find_first_not_of(" \t");
  if (first == std::string::npos || line[first] != '{') return NotFound("not a step line");
  const json object = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (object.is_discarded() || !object.is_object() || !object.contains("step")) {
    return NotFound("not a step line");
  }

  geotrain::v1::StepReport report;
  if (object.at("step").is_null()) return WrongType("step", "an integer", object.at("step"));
  int64_t step = 0, total_steps = 0;
  GEOTRAIN_RETURN_IF_ERROR(ReadInt64(object, "step", &step));
  GEOTRAIN_RETURN_IF_ERROR(ReadInt64(object, "total_steps", &total_steps));
  report.set_step(step);
  report.set_total_steps(total_steps);

  double lr = 0, grad_norm = 0, relative_error = 0;
  double step_seconds = 0, compute_seconds = 0, codec_seconds = 0, comm_seconds = 0;
  GEOTRAIN_RETURN_IF_ERROR(ReadDouble(object, "lr", &lr));
  GEOTRAIN_RETURN_IF_ERROR(ReadDouble(object, "grad_norm", &grad_norm));
  GEOTRAIN_RETURN_IF_ERROR(ReadDouble(object, "forward_relative_error", &relative_error));
  GEOTRAIN_RETURN_IF_ERROR(ReadDouble(object, "step_seconds", &step_seconds));
  GEOTRAIN_RETURN_IF_ERROR(ReadDouble(object, "compute_seconds", &compute_seconds));
  GEOTRAIN_RETURN_IF_ERROR(ReadDouble(object, "codec_seconds", &codec_seconds));
  GEOTRAIN_RETURN_IF_ERROR(ReadDouble(object, "comm_seconds", &comm_seconds));
  report.set_lr(lr);
  report.set_grad_norm(grad_norm);
  report.set_forward_relative_error(relative_error);
  report.set_step_seconds(step_seconds);
  report.set_compute_seconds(compute_seconds);
  report.set_codec_seconds(codec_seconds);
  report.set_comm_seconds(comm_seconds);

  double loss = 0, eval_loss = 0;
  bool has_loss = false, has_eval_loss = false;
  GEOTRAIN_RETURN_IF_ERROR(ReadDouble(object, "loss", &loss, &has_loss));
  GEOTRAIN_RETURN_IF_ERROR(ReadDouble(object, "eval_loss", &eval_loss, &has_eval_loss));
  if (has_loss) report.set_loss(loss);
  if (has_eval_loss) report.set_eval_loss(eval_loss);

  bool compressed = false, checkpointed = false;
  GEOTRAIN_RETURN_IF_ERROR(ReadBool(object, "compressed", &compressed));
  GEOTRAIN_RETURN_IF_ERROR(ReadBool(object, "checkpointed", &checkpointed));
  report.set_compressed(compressed);
  report.set_checkpointed(checkpointed);

  uint64_t raw[4] = {}, wire[4] = {};
  GEOTRAIN_RETURN_IF_ERROR(ReadBytes(object, "raw_bytes", &raw[0], &raw[1], &raw[2], &raw[3]));
  GEOTRAIN_RETURN_IF_ERROR(ReadBytes(object, "wire_bytes", &wire[0], &wire[1], &wire[2], &wire[3]));
  report.set_raw_bytes_forward(raw[0]);
  report.set_raw_bytes_backward(raw[1]);
  report.set_raw_bytes_dp(raw[2]);
  report.set_raw_bytes_embedding(raw[3]);
  report.set_wire_bytes_forward(wire[0]);
  report.set_wire_bytes_backward(wire[1]);
  report.set_wire_bytes_dp(wire[2]);
  report.set_wire_bytes_embedding(wire[3]);
  return report;
}

}  // namespace geotrain::worker
