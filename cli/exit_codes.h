// Exit codes of the `geotrain` program (documented in cli/README.md; scripts rely on them).
#pragma once

namespace geotrain::cli {

constexpr int kExitSuccess = 0;
constexpr int kExitFailure = 1;  // the command ran and failed; the reason is on stderr
constexpr int kExitUsage = 2;    // bad flags or arguments (CLI11 prints the usage)
// The coordinator could not be reached (or stayed unreachable past --reconnect-seconds); the
// message names its address and how to set it.
constexpr int kExitUnreachable = 3;
// submit --wait / status --watch: the job ended failed or cancelled; the reason is on stderr.
constexpr int kExitJobFailed = 4;
// The coordinator refused the credentials (UNAUTHENTICATED): no or a wrong admin token, or a
// worker's token instead of the admin's.
constexpr int kExitUnauthenticated = 5;

}  // namespace geotrain::cli
