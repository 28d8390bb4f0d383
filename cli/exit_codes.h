// Exit codes of the `geotrain` program (documented in cli/README.md; scripts rely on them).
#pragma once

namespace geotrain::cli {

constexpr int kExitSuccess = 0;
constexpr int kExitFailure = 1;  // the command ran and failed; the reason is on stderr
constexpr int kExitUsage = 2;    // bad flags or arguments (CLI11 prints the usage)

}  // namespace geotrain::cli
