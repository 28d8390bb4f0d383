#include "common/io/host_port.h"

namespace geotrain::io {

std::string HostPort::ToString() const {
  const bool ipv6 = host.find(':') != std::string::npos;
  return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

HostPortProblem SplitHostPort(std::string_view text, int min_port, HostPort* out) {
  const size_t colon = text.rfind(':');
  // "[::1]": the last ':' is the address's own.
  if (colon == std::string_view::npos || text.back() == ']') return HostPortProblem::kNoPort;
  std::string_view host = text.substr(0, colon);
  const std::string_view port = text.substr(colon + 1);
  if (!host.empty() && host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return HostPortProblem::kNoHost;
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return HostPortProblem::kUnbracketedIpv6;
  }
  if (host.empty() || host.find_first_of("[]") != std::string_view::npos) {
    return HostPortProblem::kNoHost;
  }
  if (port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string_view::npos) {
    return HostPortProblem::kPortNotNumber;
  }
  const int number = std::stoi(std::string(port));
  if (out != nullptr) *out = HostPort{std::string(host), number};
  if (number < min_port || number > 65535) return HostPortProblem::kPortOutOfRange;
  return HostPortProblem::kNone;
}

StatusOr<HostPort> ParseHostPort(std::string_view text, const std::string& field, int min_port) {
  HostPort result;
  const std::string not_host_port = field + ": \"" + std::string(text) + "\" is not HOST:PORT";
  switch (SplitHostPort(text, min_port, &result)) {
    case HostPortProblem::kNone:
      return result;
    case HostPortProblem::kNoPort:
    case HostPortProblem::kNoHost:
      return InvalidArgument(not_host_port);
    case HostPortProblem::kUnbracketedIpv6:
      return InvalidArgument(not_host_port + " (an IPv6 host goes in brackets: [::1]:PORT)");
    case HostPortProblem::kPortNotNumber:
      return InvalidArgument(not_host_port + " (the port must be a number)");
    case HostPortProblem::kPortOutOfRange:
      return InvalidArgument(field + ": port " + std::to_string(result.port) + " is outside " +
                             std::to_string(min_port) + "..65535");
  }
  return Internal(field + ": unknown HOST:PORT problem");
}

}  // namespace geotrain::io
