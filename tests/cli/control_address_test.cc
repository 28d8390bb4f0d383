// Where the control commands find the coordinator, and how gRPC errors become Status values.
#include "cli/control_address.h"

#include <gtest/gtest.h>

#include "cli/control_grpc_status.h"

namespace geotrain::cli {
namespace {

TEST(CoordinatorAddressTest, FlagThenEnvironmentThenDefault) {
  StatusOr<CoordinatorAddress> address = ResolveCoordinatorAddress("flag-host:1", "env-host:2");
  ASSERT_TRUE(address.ok());
  EXPECT_EQ(address->target, "flag-host:1");
  EXPECT_EQ(address->origin, "--coordinator");

  address = ResolveCoordinatorAddress("", "env-host:2");
  ASSERT_TRUE(address.ok());
  EXPECT_EQ(address->target, "env-host:2");
  EXPECT_EQ(address->origin, "GEOTRAIN_COORDINATOR");

  for (const char* unset : {static_cast<const char*>(nullptr), ""}) {
    address = ResolveCoordinatorAddress("", unset);
    ASSERT_TRUE(address.ok());
    EXPECT_EQ(address->target, "127.0.0.1:7070");
    EXPECT_EQ(address->origin, "default");
  }
}

TEST(CoordinatorAddressTest, AcceptsHostPortIpv6AndUnixSockets) {
  for (const char* good : {"localhost:7070", "10.1.2.3:1", "[::1]:65535", "unix:/tmp/c.sock"}) {
    EXPECT_TRUE(CheckCoordinatorAddress(good, "--coordinator").ok()) << good;
  }
}

TEST(CoordinatorAddressTest, RejectsBadValuesNamingTheFieldAndTheReason) {
  const struct {
    const char* value;
    const char* reason;
  } cases[] = {{"localhost", "has no port"},    {":7070", "has no host"},
               {"host:", "has no valid port"},  {"host:70x", "not a number"},
               {"host:0", "outside 1-65535"},   {"host:65536", "outside 1-65535"},
               {"::1:7070", "not in brackets"}, {"unix:", "no socket path"}};
  for (const auto& c : cases) {
    const Status status = CheckCoordinatorAddress(c.value, "GEOTRAIN_COORDINATOR");
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << c.value;
    EXPECT_EQ(status.message().rfind("GEOTRAIN_COORDINATOR: '", 0), 0u) << status.message();
    EXPECT_NE(status.message().find(c.reason), std::string::npos) << status.message();
  }
  const StatusOr<CoordinatorAddress> address = ResolveCoordinatorAddress("", "nonsense");
  ASSERT_FALSE(address.ok());
  EXPECT_NE(address.status().message().find("GEOTRAIN_COORDINATOR"), std::string::npos);
}

TEST(GrpcStatusTest, KeepsCodesGeotrainHasAndNamesTheOthers) {
  EXPECT_TRUE(FromGrpcStatus(grpc::Status::OK).ok());
  const Status invalid =
      FromGrpcStatus(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "a: bad\nb: worse"));
  EXPECT_EQ(invalid.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(invalid.message(), "a: bad\nb: worse");
  EXPECT_EQ(FromGrpcStatus(grpc::Status(grpc::StatusCode::UNAVAILABLE, "x")).code(),
            StatusCode::kUnavailable);
  EXPECT_EQ(FromGrpcStatus(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "x")).code(),
            StatusCode::kDeadlineExceeded);
  const Status unimplemented =
      FromGrpcStatus(grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "no WatchJob"));
  EXPECT_EQ(unimplemented.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(unimplemented.message(), "UNIMPLEMENTED: no WatchJob");
  EXPECT_EQ(FromGrpcStatus(grpc::Status(grpc::StatusCode::CANCELLED, "x")).code(),
            StatusCode::kInternal);
}

}  // namespace
}  // namespace geotrain::cli
