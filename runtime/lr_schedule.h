// LearningRate: the learning rate of one optimizer step under OptimizerSettings' schedule.
//
// A function of the step alone, so every rank computes the same value and a resumed run needs
// no scheduler state in its checkpoint.
//
// Convention: step i (counted from 0) uses the rate Hugging Face's schedulers report after i + 1
// scheduler steps, i.e. their lr_lambda(t) at t = i + 1. HF's Trainer itself calls
// optimizer.step() before scheduler.step(), so its step i uses lr_lambda(i): its first step runs
// at rate 0 whenever there is a warm-up. With t = i + 1 no step is wasted at the start; the last
// step (total_steps - 1) runs at min_lr exactly. With W = lr_warmup_steps and T = total_steps:
//
//   t <= W    lr * t / W                                  (linear warm-up from 0)
//   t >  W    p = min(1, (t - W) / max(1, T - W))         (decay progress)
//             constant  lr
//             linear    min_lr + (lr - min_lr) * (1 - p)
//             cosine    min_lr + (lr - min_lr) * (1 + cos(pi * p)) / 2
//
// These are HF's get_{constant,linear,cosine}_schedule_with_warmup, with a floor of min_lr applied
// as in get_cosine_with_min_lr_schedule_with_warmup (min_lr + (lr - min_lr) * factor), and p
// clamped, so steps past T stay at min_lr where HF's cosine would climb again. Thread-safe (pure).
#pragma once

#include <cstdint>

#include "runtime/stage_assignment.h"

namespace geotrain::runtime {

// A negative step counts as step 0.
double LearningRate(const OptimizerSettings& settings, int64_t step, int64_t total_steps);

}  // namespace geotrain::runtime
