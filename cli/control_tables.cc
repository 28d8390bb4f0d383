#include "cli/control_tables.h"

#include <cstdio>
#include <map>
#include <set>
#include <utility>

#include "cli/control_format.h"
#include "cli/control_job_state.h"
#include "cli/text_table.h"

namespace geotrain::cli {
namespace {

// A send kind as `geotrain status` names it in the adaptive compression table.
const char* TrafficKindName(v1::TrafficKind kind) {
  switch (kind) {
    case v1::TRAFFIC_KIND_ACTIVATION:
      return "forward";
    case v1::TRAFFIC_KIND_GRADIENT:
      return "backward";
    case v1::TRAFFIC_KIND_DATA_PARALLEL:
      return "data-parallel";
    case v1::TRAFFIC_KIND_EMBEDDING:
      return "embedding";
    default:
      return "?";
  }
}

std::string OrDash(const std::string& text) { return text.empty() ? "-" : text; }

// The line above a list from a coordinator whose state store failed: what it shows may include a
// change that was refused, and it accepts none until it is restarted.
std::string StoreFailureLine(const std::string& failure) {
  if (failure.empty()) return "";
  return "coordinator: state store failed: " + failure + "; no changes accepted\n";
}

// One-way latency as a WAN operator reads it: "12ms", "3.5ms", "0.2ms", "1.2s".
std::string FormatLatency(double seconds) {
  if (seconds >= 1) return FormatNumber("%.1fs", seconds);
  const double ms = seconds * 1000;
  return FormatNumber(ms >= 10 ? "%.0fms" : "%.1fms", ms);
}

// "118 MB/s 12ms"; either half "-" when not measured, the whole cell "-" when neither is.
std::string FormatLinkCell(const v1::Link& link) {
  const bool throughput = link.throughput_bytes_per_second() > 0;
  const bool latency = link.latency_seconds() > 0;
  if (!throughput && !latency) return "-";
  const std::string rate = throughput ? FormatByteRate(link.throughput_bytes_per_second()) : "-";
  return latency ? rate + " " + FormatLatency(link.latency_seconds()) : rate;
}

void AddDirectionRow(TextTable& table, const std::string& name, uint64_t raw, uint64_t wire) {
  table.AddRow({name, FormatBytes(static_cast<double>(raw)), FormatBytes(static_cast<double>(wire)),
                FormatCompressionRatio(raw, wire)});
}

std::string Indent(const std::string& lines, const std::string& prefix) {
  std::string out;
  size_t begin = 0;
  while (begin < lines.size()) {
    const size_t end = lines.find('\n', begin);
    out += prefix + lines.substr(begin, end - begin) + "\n";
    if (end == std::string::npos) break;
    begin = end + 1;
  }
  return out;
}

// "cuda:NVIDIA H100 80GB HBM3 x8" for a worker with eight of them.
std::string DeviceCell(const v1::WorkerCapabilities& caps) {
  if (caps.cuda_device_count() <= 1) return OrDash(caps.device_kind());
  return caps.device_kind() + " x" + std::to_string(caps.cuda_device_count());
}

}  // namespace

std::string FormatJobStatus(const v1::Job& job) {
  const v1::JobProgress& p = job.progress();
  TextTable fields({"id", job.id()});
  fields.AddRow({"name", OrDash(job.name())});
  fields.AddRow({"state", JobStateName(job.state())});
  fields.AddRow({"message", OrDash(job.message())});
  if (!job.waiting_for().empty()) fields.AddRow({"waiting for", job.waiting_for()});
  fields.AddRow({"grid", std::to_string(job.num_stages()) + " stages x " +
                             std::to_string(job.replicas()) + " replicas"});
  fields.AddRow({"generation", std::to_string(job.generation())});
  fields.AddRow(
      {"restarts", std::to_string(job.restarts()) + " of " + std::to_string(job.max_restarts())});
  fields.AddRow({"steps lost", std::to_string(job.steps_lost())});
  fields.AddRow({"step", FormatStepOfTotal(p)});
  fields.AddRow({"loss", p.step() > 0 ? FormatNumber("%.3f", p.first_loss()) + " -> " +
                                            FormatNumber("%.3f", p.loss())
                                      : "-"});
  fields.AddRow({"eval loss", p.eval_step() > 0 ? FormatNumber("%.3f", p.eval_loss()) + " (step " +
                                                      std::to_string(p.eval_step()) + ")"
                                                : "-"});
  if (p.has_eval_scores()) {
    fields.AddRow({"eval scores", FormatNumber("accuracy %.3f", p.eval_scores().accuracy()) +
                                      FormatNumber(", F1 %.3f", p.eval_scores().f1()) +
                                      FormatNumber(", MCC %.3f", p.eval_scores().mcc())});
  }
  fields.AddRow({"tokens/s", p.tokens_per_second() > 0 ? FormatCount(p.tokens_per_second()) : "-"});
  fields.AddRow({"wire rate",
                 p.wire_bytes_per_second() > 0 ? FormatByteRate(p.wire_bytes_per_second()) : "-"});
  fields.AddRow(
      {"step time", p.step_seconds() > 0 ? FormatNumber("%.2f s", p.step_seconds()) : "-"});
  fields.AddRow({"checkpoint",
                 p.checkpoint_step() > 0 ? "step " + std::to_string(p.checkpoint_step()) : "-"});
  fields.AddRow({"ETA", p.eta_seconds() > 0 && !IsFinishedJobState(job.state())
                            ? FormatDuration(p.eta_seconds())
                            : "-"});

  TextTable bytes({"bytes", "raw", "wire", "ratio"});
  AddDirectionRow(bytes, "forward", p.raw_bytes_forward(), p.wire_bytes_forward());
  AddDirectionRow(bytes, "backward", p.raw_bytes_backward(), p.wire_bytes_backward());
  AddDirectionRow(bytes, "data-parallel", p.raw_bytes_dp(), p.wire_bytes_dp());
  AddDirectionRow(bytes, "embedding", p.raw_bytes_embedding(), p.wire_bytes_embedding());
  AddDirectionRow(bytes, "total", p.raw_bytes(), p.wire_bytes());

  std::string out = fields.Render() + "\n" + bytes.Render() + "\n";
  if (job.placements().empty()) {
    out += "placements: none\n";
  } else {
    TextTable placements({"stage", "replica", "worker", "region"});
    for (const v1::Placement& placement : job.placements()) {
      placements.AddRow({std::to_string(placement.stage()), std::to_string(placement.replica()),
                         placement.worker_id(), OrDash(placement.region())});
    }
    out += "placements:\n" + Indent(placements.Render(), "  ");
  }
  if (job.compression().empty()) return out;
  TextTable compression({"stage", "replica", "sends", "bits", "topk", "since step", "link",
                         "transfer", "compute", "error", "changes"});
  for (const v1::LinkCompression& link : job.compression()) {
    compression.AddRow(
        {std::to_string(link.stage()), std::to_string(link.replica()), TrafficKindName(link.kind()),
         std::to_string(link.bits()),
         link.topk_ratio() > 0 ? FormatNumber("%.3g", link.topk_ratio()) : "-",
         link.effective_step() > 0 ? std::to_string(link.effective_step()) : "start",
         link.throughput_bytes_per_second() > 0 ? FormatByteRate(link.throughput_bytes_per_second())
                                                : "-",
         link.transfer_seconds() > 0 ? FormatNumber("%.3f s", link.transfer_seconds()) : "-",
         link.compute_seconds() > 0 ? FormatNumber("%.3f s", link.compute_seconds()) : "-",
         link.relative_error() > 0 ? FormatNumber("%.3f", link.relative_error()) : "-",
         std::to_string(link.changes())});
  }
  return out + "adaptive compression:\n" + Indent(compression.Render(), "  ");
}

std::string FormatJobList(const v1::ListJobsResponse& jobs, int64_t now_unix_ms) {
  TextTable table({"ID", "NAME", "STATE", "STEP", "LOSS", "AGE"});
  for (const v1::Job& job : jobs.jobs()) {
    table.AddRow({job.id(), OrDash(job.name()), JobStateName(job.state()),
                  FormatStepOfTotal(job.progress()),
                  job.progress().step() > 0 ? FormatNumber("%.3f", job.progress().loss()) : "-",
                  FormatAge(job.submitted_unix_ms(), now_unix_ms)});
  }
  return StoreFailureLine(jobs.state_store_failure()) + table.Render();
}

std::string FormatWorkerList(const v1::ListWorkersResponse& workers, int64_t now_unix_ms) {
  TextTable table(
      {"ID", "STATE", "REGION", "ADDRESS", "DEVICE", "MEMORY", "CPUS", "TASK", "HEARTBEAT"});
  for (const v1::Worker& worker : workers.workers()) {
    const v1::WorkerCapabilities& caps = worker.capabilities();
    const std::string task = worker.job_id().empty()
                                 ? "-"
                                 : worker.job_id() + " s" + std::to_string(worker.stage()) + "r" +
                                       std::to_string(worker.replica());
    const std::string heartbeat =
        worker.last_heartbeat_unix_ms() > 0
            ? FormatAge(worker.last_heartbeat_unix_ms(), now_unix_ms) + " ago"
            : "-";
    table.AddRow({worker.id(), WorkerStateName(worker.state()), OrDash(caps.region()),
                  OrDash(caps.advertise_address()), DeviceCell(caps),
                  caps.device_memory_bytes() > 0
                      ? FormatBytes(static_cast<double>(caps.device_memory_bytes()))
                      : "-",
                  caps.cpu_count() > 0 ? std::to_string(caps.cpu_count()) : "-", task, heartbeat});
  }
  return StoreFailureLine(workers.state_store_failure()) + table.Render();
}

std::string FormatLinkMatrix(const v1::LinkMatrix& links) {
  // Every worker that appears at either end, with its region; sorted by id for a stable layout.
  std::map<std::string, std::string> regions;
  std::map<std::pair<std::string, std::string>, const v1::Link*> by_ends;
  for (const v1::Link& link : links.links()) {
    regions.emplace(link.src_worker_id(), link.src_region());
    regions.emplace(link.dst_worker_id(), link.dst_region());
    by_ends[{link.src_worker_id(), link.dst_worker_id()}] = &link;
  }
  if (regions.empty()) return "no links (fewer than two live workers)\n";
  const auto label = [&](const std::string& id) {
    const std::string& region = regions.at(id);
    return region.empty() ? id : id + " (" + region + ")";
  };
  std::vector<std::string> header = {"from \\ to"};
  for (const auto& [id, region] : regions) header.push_back(label(id));
  TextTable table(header);
  for (const auto& [src, src_region] : regions) {
    std::vector<std::string> row = {label(src)};
    for (const auto& [dst, dst_region] : regions) {
      const auto it = by_ends.find({src, dst});
      row.push_back(it == by_ends.end() ? "-" : FormatLinkCell(*it->second));
    }
    table.AddRow(std::move(row));
  }
  return table.Render();
}

}  // namespace geotrain::cli
