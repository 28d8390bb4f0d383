#include "coordinator/job_state_machine.h"

#include <gtest/gtest.h>

#include <set>
#include <utility>

namespace geotrain::coordinator {
namespace {

using v1::JobState;

const JobState kAll[] = {v1::JOB_STATE_UNSPECIFIED, v1::JOB_STATE_QUEUED,
                         v1::JOB_STATE_PLACING,     v1::JOB_STATE_RUNNING,
                         v1::JOB_STATE_RECOVERING,  v1::JOB_STATE_SUCCEEDED,
                         v1::JOB_STATE_FAILED,      v1::JOB_STATE_CANCELLED};

TEST(JobStateMachineTest, AllowsExactlyTheDocumentedTransitions) {
  const std::set<std::pair<JobState, JobState>> allowed = {
      {v1::JOB_STATE_QUEUED, v1::JOB_STATE_PLACING},
      {v1::JOB_STATE_QUEUED, v1::JOB_STATE_CANCELLED},
      {v1::JOB_STATE_PLACING, v1::JOB_STATE_RUNNING},
      {v1::JOB_STATE_PLACING, v1::JOB_STATE_RECOVERING},
      {v1::JOB_STATE_PLACING, v1::JOB_STATE_FAILED},
      {v1::JOB_STATE_PLACING, v1::JOB_STATE_CANCELLED},
      {v1::JOB_STATE_RUNNING, v1::JOB_STATE_SUCCEEDED},
      {v1::JOB_STATE_RUNNING, v1::JOB_STATE_FAILED},
      {v1::JOB_STATE_RUNNING, v1::JOB_STATE_CANCELLED},
      {v1::JOB_STATE_RUNNING, v1::JOB_STATE_RECOVERING},
      {v1::JOB_STATE_RECOVERING, v1::JOB_STATE_PLACING},
      {v1::JOB_STATE_RECOVERING, v1::JOB_STATE_FAILED},
      {v1::JOB_STATE_RECOVERING, v1::JOB_STATE_CANCELLED},
  };
  for (JobState from : kAll) {
    for (JobState to : kAll) {
      EXPECT_EQ(IsAllowedTransition(from, to), allowed.count({from, to}) == 1)
          << JobStateName(from) << " -> " << JobStateName(to);
    }
  }
}

TEST(JobStateMachineTest, TerminalStatesHaveNoWayOut) {
  for (JobState from : {v1::JOB_STATE_SUCCEEDED, v1::JOB_STATE_FAILED, v1::JOB_STATE_CANCELLED}) {
    EXPECT_TRUE(IsTerminalJobState(from));
    EXPECT_FALSE(HoldsPlacement(from));
    for (JobState to : kAll) EXPECT_FALSE(IsAllowedTransition(from, to));
  }
  EXPECT_FALSE(IsTerminalJobState(v1::JOB_STATE_RECOVERING));
  EXPECT_TRUE(HoldsPlacement(v1::JOB_STATE_RECOVERING));
  EXPECT_FALSE(HoldsPlacement(v1::JOB_STATE_QUEUED));
}

TEST(JobStateMachineTest, NamesEveryState) {
  EXPECT_STREQ(JobStateName(v1::JOB_STATE_QUEUED), "queued");
  EXPECT_STREQ(JobStateName(v1::JOB_STATE_RECOVERING), "recovering");
  EXPECT_STREQ(JobStateName(v1::JOB_STATE_CANCELLED), "cancelled");
  EXPECT_STREQ(JobStateName(static_cast<JobState>(99)), "unspecified");
}

}  // namespace
}  // namespace geotrain::coordinator
