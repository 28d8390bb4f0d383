#include "runtime/stage_links.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "net/fake_transport.h"
#include "net/gloo_transport.h"
#include "runtime/dp_backend.h"

namespace geotrain::runtime {
namespace {

// One group of the job: its name, and its members as global ranks in group-rank order.
struct GroupSpec {
  std::string name;
  std::vector<int> members;
  // Which StageLinks slot a member stores it in.
  enum class Slot { kPipeline, kDataParallel, kEmbedding } slot;
};

// Every group of the job, in the global order in which ranks join them.
std::vector<GroupSpec> JobGroups(int num_stages, int dp_size, bool embedding_groups, bool fused) {
  auto rank_of = [num_stages](int replica, int stage) { return replica * num_stages + stage; };
  std::vector<GroupSpec> groups;
  for (int r = 0; r < dp_size; ++r) {
    for (int s = 0; s + 1 < num_stages; ++s) {
      groups.push_back({"pipe/r" + std::to_string(r) + "/s" + std::to_string(s),
                        {rank_of(r, s), rank_of(r, s + 1)},
                        GroupSpec::Slot::kPipeline});
    }
  }
  if (dp_size > 1) {
    for (int s = 0; s < num_stages; ++s) {
      GroupSpec group{"dp/s" + std::to_string(s), {}, GroupSpec::Slot::kDataParallel};
      for (int r = 0; r < dp_size; ++r) group.members.push_back(rank_of(r, s));
      groups.push_back(std::move(group));
    }
  }
  if (embedding_groups) {
    if (fused) {
      GroupSpec group{"embed", {}, GroupSpec::Slot::kEmbedding};
      for (int r = 0; r < dp_size; ++r) {
        group.members.push_back(rank_of(r, 0));
        group.members.push_back(rank_of(r, num_stages - 1));
      }
      groups.push_back(std::move(group));
    } else {
      for (int r = 0; r < dp_size; ++r) {
        groups.push_back({"embed/r" + std::to_string(r),
                          {rank_of(r, 0), rank_of(r, num_stages - 1)},
                          GroupSpec::Slot::kEmbedding});
      }
    }
  }
  return groups;
}

// Stores `transport` in the slot `group` means for the member at group rank `group_rank`.
void Place(const GroupSpec& group, int group_rank, std::unique_ptr<net::Transport> transport,
           StageLinks* links) {
  switch (group.slot) {
    case GroupSpec::Slot::kPipeline:
      (group_rank == 0 ? links->downstream : links->upstream) = std::move(transport);
      break;
    case GroupSpec::Slot::kDataParallel:
      links->data_parallel = std::move(transport);
      break;
    case GroupSpec::Slot::kEmbedding:
      links->embedding = std::move(transport);
      break;
  }
}

// The NCCL twin of the data-parallel group, when the rule of dp_backend.h picks it.
Status ConnectDeviceDataParallel(const StageAssignment& assignment,
                                 c10::intrusive_ptr<c10d::Store> store, const std::string& job_name,
                                 StageLinks* links) {
  if (ChooseDataParallelBackend(assignment) != DataParallelBackend::kNccl) return OkStatus();
  StatusOr<DeviceName> device = ParseDeviceName(assignment.device);
  if (!device.ok()) return device.status().WithContext("model.device");
  net::NcclAllReduceOptions options;
  options.rank = assignment.dp_rank;
  options.size = assignment.dp_size;
  options.device_index = device->index;
  options.group_name = job_name + "/dp/s" + std::to_string(assignment.stage);
  options.timeout =
      std::chrono::milliseconds(static_cast<int64_t>(assignment.training.timeout_seconds * 1000));
  GEOTRAIN_ASSIGN_OR_RETURN(links->data_parallel_device,
                            net::CreateNcclAllReduce(options, std::move(store)));
  return OkStatus();
}

int GroupRankOf(const GroupSpec& group, int global_rank) {
  for (size_t i = 0; i < group.members.size(); ++i) {
    if (group.members[i] == global_rank) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace

bool NeedsEmbeddingGroup(const StageAssignment& assignment, bool tied_embeddings) {
  return tied_embeddings && assignment.num_stages > 1;
}

bool UsesFusedEmbeddingGroup(const StageAssignment& assignment) {
  // CocktailSGD syncs models, not gradients, so the fused gradient all-reduce does not apply.
  return assignment.compression.fused_embedding_sync &&
         assignment.compression.data_parallel.mode != DataParallelMode::kCocktail;
}

StatusOr<StageLinks> ConnectGlooStageLinks(const StageAssignment& assignment, bool tied_embeddings,
                                           c10::intrusive_ptr<c10d::Store> store,
                                           const std::string& bind_address,
                                           const std::string& job_name,
                                           const std::string& frame_key) {
  StageLinks links;
  const int me = assignment.global_rank();
  // One budget for all of this rank's groups: joined one after another, each only gets what the
  // ones before it left, so the connect phase as a whole honours training.timeout_seconds.
  const net::Deadline connect_deadline(
      std::chrono::milliseconds(static_cast<int64_t>(assignment.training.timeout_seconds * 1000)));
  for (const GroupSpec& group : JobGroups(assignment.num_stages, assignment.dp_size,
                                          NeedsEmbeddingGroup(assignment, tied_embeddings),
                                          UsesFusedEmbeddingGroup(assignment))) {
    const int group_rank = GroupRankOf(group, me);
    if (group_rank < 0) continue;
    net::GlooTransportOptions options;
    options.rank = group_rank;
    options.size = static_cast<int>(group.members.size());
    options.bind_address = bind_address;
    options.group_name = job_name + "/" + group.name;
    options.frame_key = frame_key;
    options.connect_timeout = connect_deadline.budget();
    options.connect_deadline = connect_deadline;
    if (connect_deadline.Expired()) {
      return Status(StatusCode::kDeadlineExceeded,
                    "joining group " + group.name + ": training.timeout_seconds (" +
                        std::to_string(connect_deadline.budget().count()) +
                        " ms) was spent joining the groups before it");
    }
    auto transport = net::CreateGlooTransport(options, store);
    if (!transport.ok()) {
      return transport.status().WithContext("joining group " + group.name);
    }
    Place(group, group_rank, std::move(transport).value(), &links);
  }
  GEOTRAIN_RETURN_IF_ERROR(ConnectDeviceDataParallel(assignment, store, job_name, &links)
                               .WithContext("joining the NCCL data-parallel group"));
  return links;
}

std::vector<StageLinks> CreateFakeJobLinks(int num_stages, int dp_size, bool tied_embeddings,
                                           bool fused_embedding_sync,
                                           const std::string& frame_key) {
  std::vector<StageLinks> links(static_cast<size_t>(num_stages * dp_size));
  for (const GroupSpec& group :
       JobGroups(num_stages, dp_size, tied_embeddings && num_stages > 1, fused_embedding_sync)) {
    net::FakeTransportOptions options;
    options.size = static_cast<int>(group.members.size());
    options.frame_key = frame_key;
    options.group_name = "fake/" + group.name;
    auto created = net::CreateFakeTransportGroup(options);
    if (!created.ok()) {
      std::fprintf(stderr, "CreateFakeJobLinks: %s\n", created.status().ToString().c_str());
      std::abort();
    }
    auto transports = std::move(created).value();
    for (size_t i = 0; i < group.members.size(); ++i) {
      Place(group, static_cast<int>(i), std::move(transports[i]), &links[group.members[i]]);
    }
  }
  return links;
}

}  // namespace geotrain::runtime
