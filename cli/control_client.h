// CoordinatorClient: the CLI's calls to the geotrain.v1.Coordinator service, each returning a
// geotrain::Status that is ready to print: an unreachable coordinator is Unavailable naming the
// address and how to change it, NOT_FOUND names the job, other errors carry the coordinator's
// message. Every unary call has a deadline; WatchJob streams have none (they last as long as the
// job). Thread-compatible: one thread uses a client at a time.
#pragma once

#include <grpcpp/channel.h>

#include <memory>
#include <string>

#include "cli/control_address.h"
#include "cli/control_follow.h"
#include "common/status.h"
#include "geotrain/v1/coordinator.grpc.pb.h"

namespace geotrain::cli {

class CoordinatorClient final : public JobUpdateSource {
 public:
  // `channel` dials `address` (CreateCoordinatorChannel); `timeout_ms` bounds each unary call.
  CoordinatorClient(CoordinatorAddress address, std::shared_ptr<grpc::Channel> channel,
                    int64_t timeout_ms);

  StatusOr<v1::Job> SubmitJob(const v1::SubmitJobRequest& request);
  StatusOr<v1::Job> GetJob(const std::string& job_id) override;
  StatusOr<v1::JobSteps> GetJobSteps(const std::string& job_id, int64_t after_step);
  StatusOr<v1::ListJobsResponse> ListJobs(bool include_finished);
  StatusOr<v1::Job> CancelJob(const std::string& job_id);
  StatusOr<v1::ListWorkersResponse> ListWorkers(bool include_dead);
  StatusOr<v1::LinkMatrix> GetLinks();
  // A reopened watch (after a break) first waits, up to the request timeout but at most 5 s, for
  // a connection when the channel has none: while gRPC backs off after a coordinator restart a
  // stream would fail at once, and nothing would drive the reconnection's TLS handshake
  // (worker/coordinator_channel.h tells the story). --reconnect-seconds may be overrun by that.
  std::unique_ptr<JobUpdateStream> WatchJob(const v1::WatchJobRequest& request) override;

  // A failed call's status as the user should read it (see the class comment). `rpc` names the
  // call, `job_id` the job it was about (empty: none).
  Status Explain(const grpc::Status& status, const std::string& rpc,
                 const std::string& job_id) const;

 private:
  void SetDeadline(grpc::ClientContext& context) const;

  CoordinatorAddress address_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Coordinator::Stub> stub_;
  int64_t timeout_ms_;
  bool watch_opened_ = false;  // a WatchJob stream was opened before
};

}  // namespace geotrain::cli
