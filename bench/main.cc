// geotrain-bench SUBCOMMAND [--quick]: benchmarks printing one JSON object per line.
#include <CLI/CLI.hpp>

#include "bench/codecs_bench.h"

int main(int argc, char** argv) {
  CLI::App app{"geotrain benchmarks: one JSON object per line on stdout"};
  app.require_subcommand(1);

  geotrain::bench::CodecsBenchOptions codecs;
  CLI::App* codecs_cmd = app.add_subcommand("codecs", "encode/decode speed, ratio and error of every codec");
  codecs_cmd->add_flag("--quick", codecs.quick, "fewer repetitions (CI smoke run)");
  codecs_cmd->add_option("--reps", codecs.reps, "timed repetitions per measurement (best is kept)");
  codecs_cmd->add_option("--filter", codecs.filter, "only settings whose name contains this");

  CLI11_PARSE(app, argc, argv);
  if (codecs_cmd->parsed()) return geotrain::bench::RunCodecsBench(codecs);
  return 2;
}
