// Status codes and their names; the code survives a context.
#include "common/status.h"

#include <gtest/gtest.h>

namespace geotrain {
namespace {

TEST(StatusTest, UnauthenticatedIsACodeOfItsOwn) {
  const Status status = Unauthenticated("admin token missing or wrong");
  EXPECT_EQ(status.code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(status.ToString(), "UNAUTHENTICATED: admin token missing or wrong");
  const Status with_context = status.WithContext("submitting job.yaml");
  EXPECT_EQ(with_context.code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(with_context.ToString(),
            "UNAUTHENTICATED: submitting job.yaml: admin token missing or wrong");
  EXPECT_STREQ(StatusCodeName(StatusCode::kInternal), "INTERNAL");
}

TEST(StatusTest, PermissionDeniedIsACodeOfItsOwn) {
  const Status status = PermissionDenied("worker w-2 is bound to another identity");
  EXPECT_EQ(status.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(status.ToString(), "PERMISSION_DENIED: worker w-2 is bound to another identity");
  EXPECT_EQ(status.WithContext("Register").code(), StatusCode::kPermissionDenied);
}

}  // namespace
}  // namespace geotrain
