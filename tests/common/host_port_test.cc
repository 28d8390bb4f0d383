// ParseHostPort: IPv4, host names and [IPv6]:port, and errors that name the field.
#include "common/io/host_port.h"

#include <gtest/gtest.h>

namespace geotrain::io {
namespace {

TEST(HostPortTest, ParsesEveryHostForm) {
  const struct {
    const char* text;
    const char* host;
    int port;
    const char* again;
  } cases[] = {{"10.0.0.1:7070", "10.0.0.1", 7070, "10.0.0.1:7070"},
               {"coordinator.internal:1", "coordinator.internal", 1, "coordinator.internal:1"},
               {"[::1]:65535", "::1", 65535, "[::1]:65535"},
               {"[::]:0", "::", 0, "[::]:0"},
               {"0.0.0.0:0", "0.0.0.0", 0, "0.0.0.0:0"}};
  for (const auto& c : cases) {
    StatusOr<HostPort> parsed = ParseHostPort(c.text, "--listen");
    ASSERT_TRUE(parsed.ok()) << c.text << ": " << parsed.status().ToString();
    EXPECT_EQ(parsed->host, c.host);
    EXPECT_EQ(parsed->port, c.port);
    EXPECT_EQ(parsed->ToString(), c.again);
  }
}

TEST(HostPortTest, ErrorsNameTheFieldAndTheProblem) {
  const struct {
    const char* text;
    int min_port;
    HostPortProblem problem;
    const char* message;
  } cases[] = {
      {"9401", 0, HostPortProblem::kNoPort, "--flag: \"9401\" is not HOST:PORT"},
      {"[::1]", 0, HostPortProblem::kNoPort, "--flag: \"[::1]\" is not HOST:PORT"},
      {":9401", 0, HostPortProblem::kNoHost, "--flag: \":9401\" is not HOST:PORT"},
      {"[]:1", 0, HostPortProblem::kNoHost, "--flag: \"[]:1\" is not HOST:PORT"},
      {"[::1:1", 0, HostPortProblem::kNoHost, "--flag: \"[::1:1\" is not HOST:PORT"},
      {"::1:7070", 0, HostPortProblem::kUnbracketedIpv6,
       "--flag: \"::1:7070\" is not HOST:PORT (an IPv6 host goes in brackets: [::1]:PORT)"},
      {"host:", 0, HostPortProblem::kPortNotNumber,
       "--flag: \"host:\" is not HOST:PORT (the port must be a number)"},
      {"host:http", 0, HostPortProblem::kPortNotNumber,
       "--flag: \"host:http\" is not HOST:PORT (the port must be a number)"},
      {"host:123456", 0, HostPortProblem::kPortNotNumber,
       "--flag: \"host:123456\" is not HOST:PORT (the port must be a number)"},
      {"host:65536", 0, HostPortProblem::kPortOutOfRange, "--flag: port 65536 is outside 0..65535"},
      {"host:0", 1, HostPortProblem::kPortOutOfRange, "--flag: port 0 is outside 1..65535"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(SplitHostPort(c.text, c.min_port, nullptr), c.problem) << c.text;
    const Status status = ParseHostPort(c.text, "--flag", c.min_port).status();
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << c.text;
    EXPECT_EQ(status.message(), c.message);
  }
}

}  // namespace
}  // namespace geotrain::io
