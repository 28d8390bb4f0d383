// The views of `geotrain steps` (a job's complete steps, GetJobSteps): a table for people and CSV
// for plotting tools (the demo's loss curve is `geotrain steps job-1 -o csv` fed to gnuplot).
// Plain functions over the response, so both formats are unit-tested without a coordinator.
#pragma once

#include <map>
#include <string>

#include "geotrain/v1/coordinator.pb.h"

namespace geotrain::cli {

// `-o` of `geotrain steps`: the control commands' table and json, plus csv.
enum class StepsFormat { kTable, kJson, kCsv };

// For CLI11's CheckedTransformer: "-o table" / "-o json" / "-o csv".
std::map<std::string, StepsFormat> StepsFormatNames();

// STEP GEN LOSS EVAL TIME RAW WIRE RATIO LR, and ACC F1 MCC when a step has a classifier's
// scores, one row per step ("-" for a step without evaluation); "no complete steps" on its own
// when there are none, so an empty answer is not mistaken for a broken one.
std::string FormatStepsTable(const v1::JobSteps& steps);

// A header line `step,generation,loss,eval_loss,step_seconds,raw_bytes,wire_bytes,lr,unix_ms,
// eval_accuracy,eval_f1,eval_mcc` and one line per step: numbers in their shortest exact decimal
// form, eval_loss empty when the step had no evaluation and the scores empty unless a classifier
// was evaluated (gnuplot and spreadsheets read an empty field as missing). Just the header when
// there are no steps.
std::string FormatStepsCsv(const v1::JobSteps& steps);

}  // namespace geotrain::cli
