#include "cli/control_steps_format.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <vector>

#include "cli/control_format.h"
#include "cli/text_table.h"

namespace geotrain::cli {
namespace {

// The shortest decimal that reads back as the same double, so a CSV consumer loses nothing and
// a loss of 3.25 is written "3.25" rather than "3.2500000000000000".
std::string Exact(double value) {
  char buffer[64];
  const std::to_chars_result result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, result.ptr);
}

}  // namespace

std::map<std::string, StepsFormat> StepsFormatNames() {
  return {{"table", StepsFormat::kTable}, {"json", StepsFormat::kJson}, {"csv", StepsFormat::kCsv}};
}

std::string FormatStepsTable(const v1::JobSteps& steps) {
  if (steps.steps().empty()) return "no complete steps\n";
  const bool scored = std::any_of(steps.steps().begin(), steps.steps().end(),
                                  [](const v1::JobStep& step) { return step.has_eval_scores(); });
  std::vector<std::string> header = {"STEP", "GEN",  "LOSS",  "EVAL", "TIME",
                                     "RAW",  "WIRE", "RATIO", "LR"};
  if (scored) header.insert(header.end(), {"ACC", "F1", "MCC"});
  TextTable table(header);
  for (const v1::JobStep& step : steps.steps()) {
    std::vector<std::string> row = {
        std::to_string(step.step()),
        std::to_string(step.generation()),
        FormatNumber("%.4f", step.loss()),
        step.has_eval_loss() ? FormatNumber("%.4f", step.eval_loss()) : "-",
        FormatNumber("%.2f s", step.step_seconds()),
        FormatBytes(static_cast<double>(step.raw_bytes())),
        FormatBytes(static_cast<double>(step.wire_bytes())),
        FormatCompressionRatio(step.raw_bytes(), step.wire_bytes()),
        FormatNumber("%.3g", step.lr())};
    if (scored && step.has_eval_scores()) {
      row.insert(row.end(), {FormatNumber("%.3f", step.eval_scores().accuracy()),
                             FormatNumber("%.3f", step.eval_scores().f1()),
                             FormatNumber("%.3f", step.eval_scores().mcc())});
    } else if (scored) {
      row.insert(row.end(), {"-", "-", "-"});
    }
    table.AddRow(row);
  }
  return table.Render();
}

std::string FormatStepsCsv(const v1::JobSteps& steps) {
  std::string out =
      "step,generation,loss,eval_loss,step_seconds,raw_bytes,wire_bytes,lr,unix_ms,"
      "eval_accuracy,eval_f1,eval_mcc\n";
  for (const v1::JobStep& step : steps.steps()) {
    out += std::to_string(step.step()) + "," + std::to_string(step.generation()) + "," +
           Exact(step.loss()) + "," + (step.has_eval_loss() ? Exact(step.eval_loss()) : "") + "," +
           Exact(step.step_seconds()) + "," + std::to_string(step.raw_bytes()) + "," +
           std::to_string(step.wire_bytes()) + "," + Exact(step.lr()) + "," +
           std::to_string(step.unix_ms()) + ",";
    if (step.has_eval_scores()) {
      out += Exact(step.eval_scores().accuracy()) + "," + Exact(step.eval_scores().f1()) + "," +
             Exact(step.eval_scores().mcc());
    } else {
      out += ",,";
    }
    out += "\n";
  }
  return out;
}

}  // namespace geotrain::cli
