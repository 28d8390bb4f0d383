// The Transport conformance suite (transport_conformance_test.cc): one body of tests for the
// contract of net/transport.h, instantiated once per implementation:
//   INSTANTIATE_TEST_SUITE_P(Fake, TransportConformanceTest, ::testing::Values(FakeKind()), ...)
// in fake_transport_test.cc, and the same with Gloo in gloo_transport_test.cc.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "tests/net/transport_test_util.h"

namespace geotrain::net::testing {

class TransportConformanceTest : public ::testing::TestWithParam<TransportKind> {
 protected:
  // A group of `size` ranks of the implementation under test; fails the test if it cannot.
  TransportGroup MakeGroup(int size) {
    TransportGroup group = GetParam().create(size);
    EXPECT_TRUE(group.status.ok()) << group.status.ToString();
    EXPECT_EQ(group.ranks.size(), static_cast<size_t>(group.status.ok() ? size : 0));
    return group;
  }
};

// For INSTANTIATE_TEST_SUITE_P's name generator.
inline std::string KindName(const ::testing::TestParamInfo<TransportKind>& info) {
  return info.param.name;
}

}  // namespace geotrain::net::testing
