// CoordinatorCore: a job's life on workers. Placement, the ranks' task states, completion,
// failure and recovery, step reports and log lines. Every function here runs under mu_.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>

#include "coordinator/coordinator_core.h"
#include "coordinator/job_state_machine.h"

namespace geotrain::coordinator {
namespace {

// Longer log lines are cut: the store keeps 20000 lines per job and WatchJob sends them whole.
constexpr size_t kMaxLogLineBytes = 16 * 1024;

bool IsEndedTaskState(v1::TaskState state) {
  return state == v1::TASK_STATE_SUCCEEDED || state == v1::TASK_STATE_FAILED ||
         state == v1::TASK_STATE_STOPPED;
}

std::string RankName(int stage, int replica, const std::string& worker_id) {
  return "stage " + std::to_string(stage) + ", replica " + std::to_string(replica) + " on " +
         worker_id;
}

}  // namespace

bool CoordinatorCore::TryPlace(JobEntry& entry, std::vector<PlacementCandidate>* idle) {
  v1::Job& job = entry.job;
  const size_t ranks = static_cast<size_t>(entry.figures.num_stages) * entry.figures.replicas;
  const std::vector<PlacementCandidate> eligible =
      CandidatesFor(*idle, entry.cuda_devices_needed, ranks);
  std::optional<PlannedPlacement> plan =
      eligible.size() >= ranks ? PlanPlacement(entry, eligible) : std::nullopt;
  if (!plan) {
    SetWaitingFor(
        entry, WaitingForWorkers(ranks, entry.cuda_devices_needed, eligible.size(), idle->size()));
    return false;
  }
  const std::vector<v1::Placement>* placements = &plan->placements;
  idle->erase(std::remove_if(idle->begin(), idle->end(),
                             [&](const PlacementCandidate& c) {
                               return std::any_of(placements->begin(), placements->end(),
                                                  [&](const v1::Placement& p) {
                                                    return p.worker_id() == c.worker_id;
                                                  });
                             }),
              idle->end());

  const v1::Job before = job;
  const uint32_t generation = job.generation() + 1;
  const bool resume = generation > 1;
  job.set_generation(generation);
  job.clear_placements();
  entry.ranks.assign(placements->size(), RankTask{});
  std::string where;
  for (size_t r = 0; r < placements->size(); ++r) {
    const v1::Placement& p = (*placements)[r];
    *job.add_placements() = p;
    entry.ranks[r].worker_id = p.worker_id();
    where += (r == 0 ? "" : ", ") + p.worker_id() + " (stage " + std::to_string(p.stage()) +
             ", replica " + std::to_string(p.replica()) + ")";
  }
  entry.steps.StartGeneration(generation);
  std::string why = "placed generation " + std::to_string(generation) + " on " + where;
  if (plan->planned) {
    char figures[160];
    std::snprintf(figures, sizeof(figures),
                  " (planned from %s: estimated step %.3g s, in-order %.3g s; searched %.2g s)",
                  plan->start.c_str(), plan->planned_seconds, plan->inorder_seconds,
                  plan->planner_seconds);
    why += figures;
  }
  if (resume) {
    why += "; resuming from the newest complete checkpoint (step " +
           std::to_string(job.progress().checkpoint_step()) + ")";
  }
  // The generation goes on record, durably (a power cut included), before any rank hears of it:
  // the ranks derive their frame nonces from the job's key and the generation, so a coordinator
  // that came back without the record would hand the same generation out again and repeat them.
  if (!Transition(entry, v1::JOB_STATE_PLACING, why) ||
      !Write("syncing generation " + std::to_string(generation) + " of " + job.id() + " to disk",
             [&] { return store_->Sync(); })
           .ok()) {
    // Not on record: no worker hears of this generation, and the job waits as it was. (A
    // record that did reach the disk only makes a restarted coordinator skip the generation.)
    job = before;
    entry.ranks.clear();
    return false;
  }

  for (size_t r = 0; r < placements->size(); ++r) {
    const v1::Placement& p = (*placements)[r];
    WorkerEntry* worker = FindWorker(p.worker_id());
    v1::CoordinatorMessage message;
    v1::Assignment* assignment = message.mutable_assign();
    assignment->set_job_id(job.id());
    assignment->set_generation(generation);
    assignment->set_stage(p.stage());
    assignment->set_replica(p.replica());
    assignment->set_spec_yaml(job.spec_yaml());
    assignment->set_resume(resume);
    assignment->mutable_rendezvous()->set_job_id(job.id());
    assignment->mutable_rendezvous()->set_generation(generation);
    *assignment->mutable_placements() = job.placements();
    assignment->set_frame_key(entry.frame_key);
    worker->open_tasks[{job.id(), generation}] = {p.stage(), p.replica()};
    worker->session->Send(message);
    RefreshWorkerState(*worker);
  }
  // Re-placed ranks start from the spec's codec settings: tell them the adapted ones again, from
  // the first step they run.
  if (resume && entry.adaptive) {
    SendCodecChanges(entry, entry.adaptive->Reannounce(job.progress().checkpoint_step() + 1));
  }
  return true;
}

void CoordinatorCore::CheckStarted(JobEntry& entry) {
  if (entry.job.state() != v1::JOB_STATE_PLACING || entry.ranks.empty()) return;
  const bool all_started = std::all_of(entry.ranks.begin(), entry.ranks.end(),
                                       [](const RankTask& rank) { return rank.Started(); });
  if (all_started) {
    Transition(entry, v1::JOB_STATE_RUNNING,
               "every rank of generation " + std::to_string(entry.job.generation()) + " started");
  }
}

void CoordinatorCore::StartRecovery(JobEntry& entry, const std::string& why) {
  v1::Job& job = entry.job;
  if (job.state() != v1::JOB_STATE_PLACING && job.state() != v1::JOB_STATE_RUNNING) return;
  // Restored when the transition is not on record: the restart and the rollback never happened.
  const v1::Job before = job;
  job.set_restarts(job.restarts() + 1);
  if (job.restarts() > job.max_restarts()) {
    if (!FinishJob(entry, v1::JOB_STATE_FAILED,
                   why + "; giving up: " + std::to_string(job.max_restarts()) +
                       " restarts allowed (training.max_restarts) and all were used")) {
      job = before;
    }
    return;
  }
  const int64_t lost = StepAggregator::RollBackToCheckpoint(job.mutable_progress());
  job.set_steps_lost(job.steps_lost() + lost);
  entry.steps.StartGeneration(job.generation());
  entry.stop_deadline_ms = clock_->NowMonotonicMs() + options_.stop_timeout_ms;
  if (!Transition(entry, v1::JOB_STATE_RECOVERING,
                  why + " (restart " + std::to_string(job.restarts()) + " of " +
                      std::to_string(job.max_restarts()) + "; " + std::to_string(lost) +
                      " steps since the checkpoint of step " +
                      std::to_string(job.progress().checkpoint_step()) + " are redone)")) {
    job = before;
    return;
  }
  for (const RankTask& rank : entry.ranks) {
    if (!rank.Ended()) {
      SendStop(rank.worker_id, job.id(), job.generation(), job.id() + " is recovering: " + why);
    }
  }
  Wake();
}

bool CoordinatorCore::FinishJob(JobEntry& entry, v1::JobState to, const std::string& why) {
  v1::Job& job = entry.job;
  if (!Transition(entry, to, why)) return false;
  const std::string reason = job.id() + " " + JobStateName(to) + ": " + why;
  for (const RankTask& rank : entry.ranks) {
    if (!rank.Ended()) {
      SendStop(rank.worker_id, job.id(), job.generation(), reason);
    } else if (!rank.lost) {
      SendForget(rank.worker_id, job.id(), job.generation());
    }
  }
  // Ranks still running stay open tasks of their workers until they report an end, which then
  // takes the stale-task path (ForgetTask).
  entry.ranks.clear();
  entry.steps.StartGeneration(job.generation());
  if (scopes_ != nullptr) scopes_->DropJob(job.id());
  // No rank of an ended job may seal or open a frame again: its key goes. (A failed delete is
  // the store's error state, as any write; the key of an ended job is deleted at the next load.)
  entry.frame_key.clear();
  Write("deleting the frame key of the ended " + job.id(),
        [&] { return store_->DeleteFrameKey(job.id()); });
  Wake();
  return true;
}

void CoordinatorCore::FinishStops(JobEntry& entry, bool timed_out) {
  v1::Job& job = entry.job;
  std::string stragglers;
  for (const RankTask& rank : entry.ranks) {
    if (!rank.Ended()) {
      stragglers += (stragglers.empty() ? "" : ", ") + rank.worker_id;
    } else if (!rank.lost) {
      SendForget(rank.worker_id, job.id(), job.generation());
    }
  }
  if (scopes_ != nullptr) scopes_->DropScope(job.id(), job.generation());
  entry.ranks.clear();
  if (timed_out) {
    // Those workers stay BUSY (never placed again) until they report the task ended.
    AppendEvent(entry, "stop timeout: " + stragglers + " did not confirm stopping generation " +
                           std::to_string(job.generation()) + " within " +
                           std::to_string(options_.stop_timeout_ms) + " ms; placing without them");
    spdlog::warn("{}: {} did not confirm stopping within {} ms", job.id(), stragglers,
                 options_.stop_timeout_ms);
  }
}

void CoordinatorCore::RankLost(JobEntry& entry, size_t rank, const std::string& why) {
  entry.ranks[rank].lost = true;
  if (entry.job.state() == v1::JOB_STATE_RECOVERING) {
    AppendEvent(entry, why);
  } else {
    StartRecovery(entry, why);
  }
}

void CoordinatorCore::ApplyTaskStatus(WorkerEntry& worker, const v1::TaskStatus& task) {
  const std::string& worker_id = worker.record.id();
  const bool ended = IsEndedTaskState(task.state());
  const std::pair<std::string, uint32_t> key{task.job_id(), task.generation()};
  if (ended) {
    worker.open_tasks.erase(key);
  } else {
    worker.open_tasks[key] = {task.stage(), task.replica()};
  }

  JobEntry* entry = FindJob(task.job_id());
  std::string stale;
  size_t r = 0;
  if (entry == nullptr) {
    stale = task.job_id() + " is unknown to this coordinator";
  } else if (!HoldsPlacement(entry->job.state())) {
    stale = task.job_id() + " is " + JobStateName(entry->job.state());
  } else if (task.generation() != entry->job.generation()) {
    stale = "generation " + std::to_string(task.generation()) + " of " + task.job_id() +
            " was replaced by generation " + std::to_string(entry->job.generation());
  } else {
    const int num_stages = entry->figures.num_stages;
    r = static_cast<size_t>(task.replica()) * num_stages + task.stage();
    if (task.stage() < 0 || task.stage() >= num_stages || task.replica() < 0 ||
        task.replica() >= entry->figures.replicas || entry->ranks.empty() ||
        entry->ranks[r].worker_id != worker_id) {
      stale = "stage " + std::to_string(task.stage()) + ", replica " +
              std::to_string(task.replica()) + " of " + task.job_id() +
              " is not placed on this worker";
    }
  }
  if (!stale.empty()) {
    if (ended) {
      SendForget(worker_id, task.job_id(), task.generation());
    } else {
      spdlog::info("worker {}: stopping a task that is not current: {}", worker_id, stale);
      SendStop(worker_id, task.job_id(), task.generation(), stale);
    }
    return;
  }

  JobEntry& job = *entry;
  RankTask& rank = job.ranks[r];
  const std::string who = RankName(task.stage(), task.replica(), worker_id);
  if (rank.lost) {
    // Given up on (its worker was declared dead); the job is recovering without it.
    if (ended) {
      SendForget(worker_id, task.job_id(), task.generation());
    } else {
      SendStop(worker_id, task.job_id(), task.generation(),
               task.job_id() + " is recovering without " + who);
    }
    return;
  }
  rank.state = task.state();

  std::string failure;
  if (task.state() == v1::TASK_STATE_FAILED) {
    failure = who + " failed (exit code " + std::to_string(task.exit_code()) + ")" +
              (task.message().empty() ? "" : ": " + task.message());
  }

  if (job.job.state() == v1::JOB_STATE_RECOVERING) {
    if (task.state() == v1::TASK_STATE_FAILED && task.permanent()) {
      FinishJob(job, v1::JOB_STATE_FAILED, failure + " (a configuration error: not retried)");
    } else if (ended) {
      // FinishStops sends the ForgetTask once every rank is accounted for.
      Wake();
    } else {
      SendStop(worker_id, task.job_id(), task.generation(), task.job_id() + " is recovering");
    }
    return;
  }

  switch (task.state()) {
    case v1::TASK_STATE_STARTING:
    case v1::TASK_STATE_RUNNING:
      CheckStarted(job);
      break;
    case v1::TASK_STATE_SUCCEEDED:
      CheckStarted(job);
      if (std::all_of(job.ranks.begin(), job.ranks.end(), [](const RankTask& rank) {
            return rank.state == v1::TASK_STATE_SUCCEEDED;
          })) {
        FinishJob(job, v1::JOB_STATE_SUCCEEDED,
                  "every rank of generation " + std::to_string(job.job.generation()) + " finished");
      }
      break;
    case v1::TASK_STATE_FAILED:
      if (task.permanent()) {
        FinishJob(job, v1::JOB_STATE_FAILED, failure + " (a configuration error: not retried)");
      } else {
        StartRecovery(job, failure);
      }
      break;
    case v1::TASK_STATE_STOPPED:
      StartRecovery(job, who + " stopped without being asked to");
      break;
    default:
      break;
  }
}

void CoordinatorCore::ApplyStepReports(WorkerEntry& worker, const v1::StepReports& reports) {
  const int64_t now = clock_->NowUnixMs();
  for (const v1::StepReport& report : reports.reports()) {
    JobEntry* entry = FindJob(report.job_id());
    if (entry == nullptr || entry->ranks.empty() ||
        (entry->job.state() != v1::JOB_STATE_PLACING &&
         entry->job.state() != v1::JOB_STATE_RUNNING) ||
        report.generation() != entry->job.generation()) {
      continue;  // an abandoned placement's late report
    }
    const int num_stages = entry->figures.num_stages;
    if (report.stage() < 0 || report.stage() >= num_stages || report.replica() < 0 ||
        report.replica() >= entry->figures.replicas) {
      spdlog::warn(
          "worker {}: step report for {} names stage {}, replica {}, outside the job; "
          "ignored",
          worker.record.id(), report.job_id(), report.stage(), report.replica());
      continue;
    }
    RankTask& rank =
        entry->ranks[static_cast<size_t>(report.replica()) * num_stages + report.stage()];
    if (rank.worker_id != worker.record.id() || rank.lost) continue;
    rank.reported_step = true;
    AddPassiveSamples(*entry, worker.record.id(), report);
    ObserveForTuning(*entry, worker, report);
    std::optional<v1::JobStep> step = entry->steps.Add(report, now, entry->job.mutable_progress());
    if (step) {
      if (!Write("writing step " + std::to_string(step->step()) + " of " + entry->job.id(), [&] {
             return store_->PutStep(entry->job.id(), *step);
           }).ok()) {
        return;
      }
      entry->progress_dirty = true;
      BumpVersion();
      AdaptCompression(*entry, step->step());
    }
    CheckStarted(*entry);
  }
}

void CoordinatorCore::ApplyLogLines(WorkerEntry& worker, const v1::LogLines& lines) {
  const int64_t now = clock_->NowUnixMs();
  std::map<std::string, std::vector<v1::SequencedLogLine>> by_job;
  for (const v1::LogLine& line : lines.lines()) {
    JobEntry* entry = FindJob(line.job_id());
    if (entry == nullptr) {
      spdlog::debug("worker {}: log line for unknown job '{}'; dropped", worker.record.id(),
                    line.job_id());
      continue;
    }
    v1::SequencedLogLine sequenced;
    sequenced.set_sequence(++entry->last_log_sequence);
    *sequenced.mutable_line() = line;
    // The session says who sent it; the field is not trusted.
    sequenced.mutable_line()->set_worker_id(worker.record.id());
    if (line.unix_ms() == 0) sequenced.mutable_line()->set_unix_ms(now);
    if (line.text().size() > kMaxLogLineBytes) {
      std::string* text = sequenced.mutable_line()->mutable_text();
      // Cut at a character boundary: proto3 strings must stay valid UTF-8.
      size_t cut = kMaxLogLineBytes;
      while (cut > 0 && (static_cast<unsigned char>((*text)[cut]) & 0xC0) == 0x80) --cut;
      text->resize(cut);
      text->append(" [truncated]");
    }
    by_job[line.job_id()].push_back(std::move(sequenced));
  }
  for (const auto& [job_id, batch] : by_job) {
    if (!Write("appending " + std::to_string(batch.size()) + " log lines of " + job_id, [&] {
           return store_->AppendLogLines(job_id, batch);
         }).ok()) {
      return;
    }
  }
  if (!by_job.empty()) BumpVersion();
}

}  // namespace geotrain::coordinator
