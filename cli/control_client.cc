#include "cli/control_client.h"

#include <grpcpp/client_context.h>

#include <algorithm>
#include <chrono>

#include "cli/control_grpc_status.h"

namespace geotrain::cli {
namespace {

class GrpcJobUpdateStream final : public JobUpdateStream {
 public:
  GrpcJobUpdateStream(const CoordinatorClient& client, v1::Coordinator::Stub& stub,
                      const v1::WatchJobRequest& request)
      : client_(client), job_id_(request.job_id()) {
    reader_ = stub.WatchJob(&context_, request);
  }
  ~GrpcJobUpdateStream() override {
    // Leaving a stream early (an error above) must not block on a job that runs for hours.
    if (!finished_) {
      context_.TryCancel();
      reader_->Finish();
    }
  }

  bool Next(v1::JobUpdate* update) override { return reader_->Read(update); }

  Status Finish() override {
    finished_ = true;
    return client_.Explain(reader_->Finish(), "WatchJob", job_id_);
  }

 private:
  const CoordinatorClient& client_;
  std::string job_id_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReader<v1::JobUpdate>> reader_;
  bool finished_ = false;
};

std::string Seconds(int64_t ms) {
  const int64_t whole = ms / 1000;
  return ms % 1000 == 0 ? std::to_string(whole) + " s" : std::to_string(ms) + " ms";
}

}  // namespace

CoordinatorClient::CoordinatorClient(CoordinatorAddress address,
                                     std::shared_ptr<grpc::Channel> channel, int64_t timeout_ms)
    : address_(std::move(address)),
      channel_(std::move(channel)),
      stub_(v1::Coordinator::NewStub(channel_)),
      timeout_ms_(timeout_ms) {}

void CoordinatorClient::SetDeadline(grpc::ClientContext& context) const {
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms_));
}

Status CoordinatorClient::Explain(const grpc::Status& status, const std::string& rpc,
                                  const std::string& job_id) const {
  if (status.ok()) return OkStatus();
  const std::string where =
      "the coordinator at " + address_.target + " (" +
      (address_.origin == "default" ? std::string("the default") : "from " + address_.origin) + ")";
  // Whether a connection was up tells "cannot connect" from "connected, but it did not answer".
  const bool connected = channel_->GetState(false) == GRPC_CHANNEL_READY;
  // Streams are opened after a unary call reached the address, so a break there says nothing
  // about the address being wrong.
  const std::string hint =
      rpc == "WatchJob" ? std::string() : "; is it running? " + CoordinatorAddressHint();
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
      if (connected) {
        return Unavailable(where + " is unavailable (" + rpc + "): " + status.error_message());
      }
      return Unavailable("cannot reach " + where + ": " + status.error_message() + hint);
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      if (connected) {
        return Status(StatusCode::kDeadlineExceeded, where + " did not answer " + rpc + " within " +
                                                         Seconds(timeout_ms_) +
                                                         " (--timeout-seconds)");
      }
      return Unavailable("cannot reach " + where + " within " + Seconds(timeout_ms_) + hint);
    case grpc::StatusCode::NOT_FOUND:
      if (!job_id.empty() && status.error_message().find(job_id) == std::string::npos) {
        return NotFound("job " + job_id + ": " + status.error_message());
      }
      return FromGrpcStatus(status);
    default:
      return FromGrpcStatus(status);
  }
}

StatusOr<v1::Job> CoordinatorClient::SubmitJob(const v1::SubmitJobRequest& request) {
  grpc::ClientContext context;
  SetDeadline(context);
  v1::Job job;
  const grpc::Status status = stub_->SubmitJob(&context, request, &job);
  if (!status.ok()) return Explain(status, "SubmitJob", "");
  return job;
}

StatusOr<v1::Job> CoordinatorClient::GetJob(const std::string& job_id) {
  grpc::ClientContext context;
  SetDeadline(context);
  v1::GetJobRequest request;
  request.set_job_id(job_id);
  v1::Job job;
  const grpc::Status status = stub_->GetJob(&context, request, &job);
  if (!status.ok()) return Explain(status, "GetJob", job_id);
  return job;
}

StatusOr<v1::JobSteps> CoordinatorClient::GetJobSteps(const std::string& job_id,
                                                      int64_t after_step) {
  grpc::ClientContext context;
  SetDeadline(context);
  v1::GetJobStepsRequest request;
  request.set_job_id(job_id);
  request.set_after_step(after_step);
  v1::JobSteps steps;
  const grpc::Status status = stub_->GetJobSteps(&context, request, &steps);
  if (!status.ok()) return Explain(status, "GetJobSteps", job_id);
  return steps;
}

StatusOr<v1::ListJobsResponse> CoordinatorClient::ListJobs(bool include_finished) {
  grpc::ClientContext context;
  SetDeadline(context);
  v1::ListJobsRequest request;
  request.set_include_finished(include_finished);
  v1::ListJobsResponse response;
  const grpc::Status status = stub_->ListJobs(&context, request, &response);
  if (!status.ok()) return Explain(status, "ListJobs", "");
  return response;
}

StatusOr<v1::Job> CoordinatorClient::CancelJob(const std::string& job_id) {
  grpc::ClientContext context;
  SetDeadline(context);
  v1::CancelJobRequest request;
  request.set_job_id(job_id);
  v1::Job job;
  const grpc::Status status = stub_->CancelJob(&context, request, &job);
  if (!status.ok()) return Explain(status, "CancelJob", job_id);
  return job;
}

StatusOr<v1::ListWorkersResponse> CoordinatorClient::ListWorkers(bool include_dead) {
  grpc::ClientContext context;
  SetDeadline(context);
  v1::ListWorkersRequest request;
  request.set_include_dead(include_dead);
  v1::ListWorkersResponse response;
  const grpc::Status status = stub_->ListWorkers(&context, request, &response);
  if (!status.ok()) return Explain(status, "ListWorkers", "");
  return response;
}

StatusOr<v1::LinkMatrix> CoordinatorClient::GetLinks() {
  grpc::ClientContext context;
  SetDeadline(context);
  v1::LinkMatrix links;
  const grpc::Status status = stub_->GetLinks(&context, v1::GetLinksRequest(), &links);
  if (!status.ok()) return Explain(status, "GetLinks", "");
  return links;
}

std::unique_ptr<JobUpdateStream> CoordinatorClient::WatchJob(const v1::WatchJobRequest& request) {
  // Only a reopened watch waits: a first one against a closed port fails at once, as every call.
  if (watch_opened_ && channel_->GetState(/*try_to_connect=*/true) != GRPC_CHANNEL_READY) {
    channel_->WaitForConnected(std::chrono::system_clock::now() +
                               std::chrono::milliseconds(std::min<int64_t>(timeout_ms_, 5000)));
  }
  watch_opened_ = true;
  return std::make_unique<GrpcJobUpdateStream>(*this, *stub_, request);
}

}  // namespace geotrain::cli
