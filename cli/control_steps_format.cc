#include "cli/control_steps_format.h"

#include <charconv>
#include <cstdio>

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
  TextTable table({"STEP", "GEN", "LOSS", "EVAL", "TIME", "RAW", "WIRE", "RATIO", "LR"});
  for (const v1::JobStep& step : steps.steps()) {
    table.AddRow({std::to_string(step.step()), std::to_string(step.generation()),
                  FormatNumber("%.4f", step.loss()),
                  step.has_eval_loss() ? FormatNumber("%.4f", step.eval_loss()) : "-",
                  FormatNumber("%.2f s", step.step_seconds()),
                  FormatBytes(static_cast<double>(step.raw_bytes())),
                  FormatBytes(static_cast<double>(step.wire_bytes())),
                  FormatCompressionRatio(step.raw_bytes(), step.wire_bytes()),
                  FormatNumber("%.3g", step.lr())});
  }
  return table.Render();
}

std::string FormatStepsCsv(const v1::JobSteps& steps) {
  std::string out = "step,generation,loss,eval_loss,step_seconds,raw_bytes,wire_bytes,lr,unix_ms\n";
  for (const v1::JobStep& step : steps.steps()) {
    out += std::to_string(step.step()) + "," + std::to_string(step.generation()) + "," +
           Exact(step.loss()) + "," + (step.has_eval_loss() ? Exact(step.eval_loss()) : "") + "," +
           Exact(step.step_seconds()) + "," + std::to_string(step.raw_bytes()) + "," +
           std::to_string(step.wire_bytes()) + "," + Exact(step.lr()) + "," +
           std::to_string(step.unix_ms()) + "\n";
  }
  return out;
}

}  // namespace geotrain::cli
