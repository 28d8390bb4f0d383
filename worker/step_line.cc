#include "worker/step_line.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

namespace geotrain::worker {
namespace {

using nlohmann::json;

Status WrongType(const std::string& path, const char* expected, const json& value) {
  return InvalidArgument("step line: " + path + ": expected " + expected + ", got " +
                         value.type_name());
}

std::string Path(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
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

// eval_accuracy, eval_f1 and eval_mcc come together (RankRunner writes all three or none), each
// a score in its range: accuracy and F1 in [0, 1], the correlation in [-1, 1] (a rounding error
// past an end is clamped).
Status ReadEvalScores(const json& object, v1::StepReport* report) {
  struct Score {
    const char* key;
    double min;
    double value = 0;
    bool present = false;
  } scores[] = {{"eval_accuracy", 0}, {"eval_f1", 0}, {"eval_mcc", -1}};
  int present = 0;
  for (Score& score : scores) {
    GEOTRAIN_RETURN_IF_ERROR(ReadDouble(object, score.key, &score.value, &score.present));
    if (!score.present) continue;
    ++present;
    constexpr double kRounding = 1e-9;
    if (!(score.value >= score.min - kRounding && score.value <= 1 + kRounding)) {
      return InvalidArgument(std::string("step line: ") + score.key + ": " +
                             std::to_string(score.value) + " is outside [" +
                             (score.min < 0 ? "-1" : "0") + ", 1]");
    }
    score.value = std::clamp(score.value, score.min, 1.0);
  }
  if (present == 0) return OkStatus();
  if (present < 3) {
    return InvalidArgument(
        "step line: eval_accuracy, eval_f1 and eval_mcc: some given without the others");
  }
  v1::EvalScores* out = report->mutable_eval_scores();
  out->set_accuracy(scores[0].value);
  out->set_f1(scores[1].value);
  out->set_mcc(scores[2].value);
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
  const std::string path = Path(parent, key);
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

// A present key must be a number >= 0 (seconds, errors; JSON has no NaN or infinity).
Status ReadNonNegative(const json& object, const std::string& key, double* out,
                       const std::string& parent, bool* present = nullptr) {
  const std::string path = Path(parent, key);
  if (present) *present = false;
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return OkStatus();
  if (!it->is_number()) return WrongType(path, "a number", *it);
  const double value = it->get<double>();
  if (value < 0) return InvalidArgument("step line: " + path + ": " + it->dump() + " is negative");
  *out = value;
  if (present) *present = true;
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

// phases: {forward, backward, ..., checkpoint}, each optional; the message stays unset without
// the key (a child of an older build).
Status ReadPhases(const json& object, geotrain::v1::StepReport* report) {
  const auto it = object.find("phases");
  if (it == object.end() || it->is_null()) return OkStatus();
  if (!it->is_object()) return WrongType("phases", "an object", *it);
  geotrain::v1::StepPhases* phases = report->mutable_phases();
  const std::pair<const char*, void (geotrain::v1::StepPhases::*)(double)> fields[] = {
      {"forward", &geotrain::v1::StepPhases::set_forward},
      {"backward", &geotrain::v1::StepPhases::set_backward},
      {"encode", &geotrain::v1::StepPhases::set_encode},
      {"decode", &geotrain::v1::StepPhases::set_decode},
      {"send", &geotrain::v1::StepPhases::set_send},
      {"recv", &geotrain::v1::StepPhases::set_recv},
      {"sync", &geotrain::v1::StepPhases::set_sync},
      {"optimizer", &geotrain::v1::StepPhases::set_optimizer},
      {"data", &geotrain::v1::StepPhases::set_data},
      {"eval", &geotrain::v1::StepPhases::set_eval},
      {"checkpoint", &geotrain::v1::StepPhases::set_checkpoint},
  };
  for (const auto& [key, set] : fields) {
    double seconds = 0;
    GEOTRAIN_RETURN_IF_ERROR(ReadNonNegative(*it, key, &seconds, "phases"));
    (phases->*set)(seconds);
  }
  return OkStatus();
}

// A traffic entry's key that must be there: an entry without it names no link.
StatusOr<json> Required(const json& entry, const std::string& key, const std::string& parent) {
  const auto it = entry.find(key);
  if (it == entry.end() || it->is_null()) {
    return InvalidArgument("step line: " + Path(parent, key) + ": missing");
  }
  return *it;
}

// peer_stage / peer_replica: an int32 >= 0.
Status ReadPeerIndex(const json& entry, const std::string& key, const std::string& parent,
                     int32_t* out) {
  GEOTRAIN_ASSIGN_OR_RETURN(json value, Required(entry, key, parent));
  const std::string path = Path(parent, key);
  if (!value.is_number_integer()) return WrongType(path, "a non-negative integer", value);
  if (value.is_number_unsigned()) {
    if (value.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
      return InvalidArgument("step line: " + path + ": " + value.dump() + " is too large");
    }
  } else if (value.get<int64_t>() < 0) {
    return InvalidArgument("step line: " + path + ": " + value.dump() + " is negative");
  }
  *out = static_cast<int32_t>(value.get<int64_t>());
  return OkStatus();
}

// Reads `key` as a string that must be one of `names` (in order); *index gets its position.
Status ReadName(const json& entry, const std::string& key, const std::string& parent,
                const std::vector<const char*>& names, size_t* index) {
  GEOTRAIN_ASSIGN_OR_RETURN(json value, Required(entry, key, parent));
  const std::string path = Path(parent, key);
  if (!value.is_string()) return WrongType(path, "a string", value);
  const std::string name = value.get<std::string>();
  std::string list;
  for (size_t i = 0; i < names.size(); ++i) {
    if (name == names[i]) {
      *index = i;
      return OkStatus();
    }
    list += (i ? ", " : "") + std::string(names[i]);
  }
  // replace: a child's garbage must not make dump() throw.
  return InvalidArgument("step line: " + path + ": " +
                         value.dump(-1, ' ', false, json::error_handler_t::replace) +
                         " is not one of " + list);
}

Status ReadTrafficEntry(const json& entry, const std::string& path,
                        geotrain::v1::LinkTraffic* traffic) {
  if (!entry.is_object()) return WrongType(path, "an object", entry);
  int32_t peer_stage = 0, peer_replica = 0;
  GEOTRAIN_RETURN_IF_ERROR(ReadPeerIndex(entry, "peer_stage", path, &peer_stage));
  GEOTRAIN_RETURN_IF_ERROR(ReadPeerIndex(entry, "peer_replica", path, &peer_replica));
  traffic->set_peer_stage(peer_stage);
  traffic->set_peer_replica(peer_replica);

  // In the order of runtime::TrafficKind and of the proto's values after UNSPECIFIED.
  static const std::vector<const char*> kKinds = {"activation", "gradient", "data_parallel",
                                                  "embedding"};
  static const geotrain::v1::TrafficKind kKindValues[] = {
      geotrain::v1::TRAFFIC_KIND_ACTIVATION, geotrain::v1::TRAFFIC_KIND_GRADIENT,
      geotrain::v1::TRAFFIC_KIND_DATA_PARALLEL, geotrain::v1::TRAFFIC_KIND_EMBEDDING};
  size_t kind = 0, direction = 0;
  GEOTRAIN_RETURN_IF_ERROR(ReadName(entry, "kind", path, kKinds, &kind));
  GEOTRAIN_RETURN_IF_ERROR(ReadName(entry, "direction", path, {"sent", "received"}, &direction));
  traffic->set_kind(kKindValues[kind]);
  traffic->set_sent(direction == 0);

  uint64_t raw_bytes = 0, wire_bytes = 0, bits = 0;
  GEOTRAIN_RETURN_IF_ERROR(ReadUint64(entry, "raw_bytes", &raw_bytes, path));
  GEOTRAIN_RETURN_IF_ERROR(ReadUint64(entry, "wire_bytes", &wire_bytes, path));
  GEOTRAIN_RETURN_IF_ERROR(ReadUint64(entry, "bits", &bits, path));
  if (bits > std::numeric_limits<uint32_t>::max()) {
    return InvalidArgument("step line: " + Path(path, "bits") + ": " + std::to_string(bits) +
                           " is too large");
  }
  traffic->set_raw_bytes(raw_bytes);
  traffic->set_wire_bytes(wire_bytes);
  traffic->set_bits(static_cast<uint32_t>(bits));

  double seconds = 0, relative_error = 0, latency = 0;
  bool has_latency = false;
  GEOTRAIN_RETURN_IF_ERROR(ReadNonNegative(entry, "seconds", &seconds, path));
  GEOTRAIN_RETURN_IF_ERROR(ReadNonNegative(entry, "relative_error", &relative_error, path));
  GEOTRAIN_RETURN_IF_ERROR(
      ReadNonNegative(entry, "latency_seconds", &latency, path, &has_latency));
  traffic->set_seconds(seconds);
  traffic->set_relative_error(relative_error);
  if (has_latency) traffic->set_latency_seconds(latency);
  return OkStatus();
}

// traffic: [{peer_stage, peer_replica, kind, direction, raw_bytes, ...}].
Status ReadTraffic(const json& object, geotrain::v1::StepReport* report) {
  const auto it = object.find("traffic");
  if (it == object.end() || it->is_null()) return OkStatus();
  if (!it->is_array()) return WrongType("traffic", "an array", *it);
  for (size_t i = 0; i < it->size(); ++i) {
    GEOTRAIN_RETURN_IF_ERROR(ReadTrafficEntry((*it)[i], "traffic[" + std::to_string(i) + "]",
                                              report->add_traffic()));
  }
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
  GEOTRAIN_RETURN_IF_ERROR(ReadEvalScores(object, &report));

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

  int64_t tokens = 0;
  GEOTRAIN_RETURN_IF_ERROR(ReadInt64(object, "tokens", &tokens));
  if (tokens < 0) {
    return InvalidArgument("step line: tokens: " + std::to_string(tokens) + " is negative");
  }
  report.set_tokens(tokens);
  double backward_relative_error = 0;
  GEOTRAIN_RETURN_IF_ERROR(
      ReadDouble(object, "backward_relative_error", &backward_relative_error));
  report.set_backward_relative_error(backward_relative_error);
  GEOTRAIN_RETURN_IF_ERROR(ReadPhases(object, &report));
  GEOTRAIN_RETURN_IF_ERROR(ReadTraffic(object, &report));
  return report;
}

}  // namespace geotrain::worker
