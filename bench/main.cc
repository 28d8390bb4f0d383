// geotrain-bench SUBCOMMAND [--quick]: benchmarks printing one JSON object per line.
#include <CLI/CLI.hpp>

#include "bench/codecs_bench.h"
#include "bench/placement_bench.h"
#ifdef GEOTRAIN_BENCH_WITH_TORCH
#include "bench/stage_bench.h"
#endif
#ifdef GEOTRAIN_BENCH_WITH_RUNTIME
#include "bench/pipeline_bench.h"
#endif

int main(int argc, char** argv) {
  CLI::App app{"geotrain benchmarks: one JSON object per line on stdout"};
  app.require_subcommand(1);

  geotrain::bench::CodecsBenchOptions codecs;
  CLI::App* codecs_cmd =
      app.add_subcommand("codecs", "encode/decode speed, ratio and error of every codec");
  codecs_cmd->add_flag("--quick", codecs.quick, "fewer repetitions (CI smoke run)");
  codecs_cmd->add_option("--reps", codecs.reps, "timed repetitions per measurement (best is kept)");
  codecs_cmd->add_option("--filter", codecs.filter, "only settings whose name contains this");
  codecs_cmd
      ->add_option("--device", codecs.device, "cpu, or cuda: the CUDA codecs on device memory")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();

  geotrain::bench::PlacementBenchOptions placement;
  CLI::App* placement_cmd = app.add_subcommand(
      "placement", "planned vs in-order vs random placement on synthetic and DT-FM geo topologies");
  placement_cmd->add_option("--seed", placement.seed, "seeds topologies, random grids and planner")
      ->capture_default_str();
  placement_cmd->add_option("--planner-seed", placement.planner_seed,
                            "seeds only the planner (0: --seed), to see how plans vary by seed");
  placement_cmd->add_option("--topology", placement.topology, "only the topology of this name");
  placement_cmd->add_option("--budget", placement.budget, "planner time budget, seconds")
      ->capture_default_str();

#ifdef GEOTRAIN_BENCH_WITH_TORCH
  geotrain::bench::StageBenchOptions stage;
  CLI::App* stage_cmd =
      app.add_subcommand("stage", "forward+backward tokens/s of one pipeline stage on CPU");
  stage_cmd->add_option("--config", stage.config_path, "config.json (default: gpt2-tiny)");
  stage_cmd->add_option("--stages", stage.stages, "split the layers into this many stages")
      ->capture_default_str();
  stage_cmd->add_option("--stage", stage.stage, "the stage to time")->capture_default_str();
  stage_cmd->add_option("--seq-length", stage.seq_length, "tokens per sequence")
      ->capture_default_str();
  stage_cmd->add_option("--batch", stage.batch, "sequences per step")->capture_default_str();
  stage_cmd->add_option("--threads", stage.threads, "LibTorch threads (0: its default)")
      ->capture_default_str();
  stage_cmd->add_option("--reps", stage.reps, "timed repetitions (best is kept)")
      ->capture_default_str();
  stage_cmd->add_flag("--quick", stage.quick, "2 repetitions, seq_length 32 (CI smoke run)");
#endif

#ifdef GEOTRAIN_BENCH_WITH_RUNTIME
  geotrain::bench::PipelineBenchOptions pipeline;
  CLI::App* pipeline_cmd = app.add_subcommand(
      "pipeline", "convergence and wire bytes of compression settings, 2 stages x 2 replicas");
  pipeline_cmd->add_flag("--quick", pipeline.quick, "24 short steps per setting (CI smoke run)");
  pipeline_cmd->add_option("--steps", pipeline.steps, "training steps per setting");
  pipeline_cmd->add_option("--filter", pipeline.filter,
                           "only settings whose name contains this (and the baseline)");
#endif

  CLI11_PARSE(app, argc, argv);
  if (codecs_cmd->parsed() && codecs.device == "cuda") {
#ifdef GEOTRAIN_WITH_CUDA_CODECS
    return geotrain::bench::RunCodecsCudaBench(codecs);
#else
    std::fprintf(stderr,
                 "codecs --device cuda: this build has no CUDA codecs (configure with nvcc on PATH "
                 "or -DGEOTRAIN_CUDA=ON; docs/gpu.md)\n");
    return 2;
#endif
  }
  if (codecs_cmd->parsed()) return geotrain::bench::RunCodecsBench(codecs);
  if (placement_cmd->parsed()) return geotrain::bench::RunPlacementBench(placement);
#ifdef GEOTRAIN_BENCH_WITH_TORCH
  if (stage_cmd->parsed()) return geotrain::bench::RunStageBench(stage);
#endif
#ifdef GEOTRAIN_BENCH_WITH_RUNTIME
  if (pipeline_cmd->parsed()) return geotrain::bench::RunPipelineBench(pipeline);
#endif
  return 2;
}
