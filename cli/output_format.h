// OutputFormat: how a command prints its result (`-o table|json`), shared by every command that
// reports something, including the control-plane commands (status, jobs, ...).
#pragma once

#include <map>
#include <string>

namespace geotrain::cli {

enum class OutputFormat {
  kTable,  // human-readable lines
  kJson,   // one JSON object on one line, for scripts
};

// For CLI11's CheckedTransformer: "-o table" / "-o json".
inline std::map<std::string, OutputFormat> OutputFormatNames() {
  return {{"table", OutputFormat::kTable}, {"json", OutputFormat::kJson}};
}

}  // namespace geotrain::cli
