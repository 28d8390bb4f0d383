// Where the control commands find the coordinator: --coordinator, else the GEOTRAIN_COORDINATOR
// environment variable, else 127.0.0.1:7070.
#pragma once

#include <string>

#include "common/status.h"

namespace geotrain::cli {

inline constexpr char kCoordinatorEnvVar[] = "GEOTRAIN_COORDINATOR";
inline constexpr char kDefaultCoordinatorAddress[] = "127.0.0.1:7070";

struct CoordinatorAddress {
  // What gRPC dials: "HOST:PORT", "[IPV6]:PORT" or "unix:PATH".
  std::string target;
  // Where it came from, for error messages: "--coordinator", "GEOTRAIN_COORDINATOR" or "default".
  std::string origin;
};

// Empty when `value` is HOST:PORT (port 1-65535; IPv6 hosts in brackets) or unix:PATH; otherwise
// what is wrong with it ("'foo' has no port (expected HOST:PORT)").
std::string CoordinatorAddressProblem(const std::string& value);
// CoordinatorAddressProblem as a Status: InvalidArgument "field: problem".
Status CheckCoordinatorAddress(const std::string& value, const std::string& field);

// The flag's value (empty: not given), else `env_value` (nullptr or empty: unset), else the
// default; the chosen value must pass CheckCoordinatorAddress.
StatusOr<CoordinatorAddress> ResolveCoordinatorAddress(const std::string& flag_value,
                                                       const char* env_value);

// How a user points the CLI at another coordinator (appended to "cannot reach" errors).
std::string CoordinatorAddressHint();

}  // namespace geotrain::cli
