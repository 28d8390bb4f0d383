// The model dimensions `geotrain submit` sends with a job (SubmitJobRequest.model_shape), so the
// coordinator's placement planner can estimate a step before the job has run one.
//
// Plain function; thread-safe.
#pragma once

#include <optional>
#include <string>

#include "geotrain/v1/job.pb.h"

namespace geotrain::cli {

// Reads model.dir/config.json of the job YAML `spec_yaml` (a relative model.dir from the working
// directory, as workers resolve it from their --data-root). nullopt when the spec does not parse
// (the coordinator then reports its problems) or the config cannot be read here (the planner then
// assumes GPT-2 small's dimensions): the shape only sharpens an estimate, so it never stops a
// submission.
std::optional<v1::ModelShape> SubmitModelShape(const std::string& spec_yaml);

}  // namespace geotrain::cli
