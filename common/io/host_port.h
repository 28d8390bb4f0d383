// ParseHostPort: the one parser of "HOST:PORT" addresses (flags, job files, gRPC peers).
//
// HOST is an IPv4 address, a host name, or an IPv6 address in brackets ("[::1]:7070"); an IPv6
// address without brackets is refused, since its last ':' would be taken for the port's. PORT is
// decimal digits in [min_port, 65535] (min_port 0 lets a listener pick a free port). Errors name
// the field and the value: `--metrics-listen: "9401" is not HOST:PORT`, `--coordinator: port
// 70000 is outside 1..65535`. Thread-safe (no shared state).
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace geotrain::io {

struct HostPort {
  std::string host;  // without brackets: "::1", "10.0.0.1", "coordinator.internal"
  int port = 0;

  // "HOST:PORT" again, with an IPv6 host in brackets: what sockets and gRPC are given.
  std::string ToString() const;
};

// What is wrong with a value that is not HOST:PORT; kNone when it is.
enum class HostPortProblem {
  kNone,
  kNoPort,           // no ':' at all, or none after "[IPv6]"
  kNoHost,           // nothing before the ':', or unbalanced brackets
  kUnbracketedIpv6,  // "::1:7070"
  kPortNotNumber,    // empty, not decimal digits, or more than 5 of them
  kPortOutOfRange,   // outside [min_port, 65535]
};

// Splits `text` into *out (may be null); for callers that word their own errors (the CLI).
HostPortProblem SplitHostPort(std::string_view text, int min_port, HostPort* out);

// `field` names the flag or key in errors (INVALID_ARGUMENT).
StatusOr<HostPort> ParseHostPort(std::string_view text, const std::string& field, int min_port = 0);

}  // namespace geotrain::io
