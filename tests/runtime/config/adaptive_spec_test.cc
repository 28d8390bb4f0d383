// compression.adaptive in the job YAML: the boolean and mapping forms, every key's type and range
// named with its line, the "nothing to adapt" check, and the round trip through JobSpecToYaml.
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "runtime/job_spec.h"

namespace geotrain::runtime {
namespace {

// A job with something to adapt (two stages, fixpoint forward); line 6 is the first appended.
constexpr char kAdaptable[] =
    "name: t\nmodel: {dir: m}\ndata: {train: [a.txt]}\npipeline: {stages: 2}\n"
    "compression:\n";
constexpr char kForwardFixpoint[] = "  forward: {codec: fixpoint, bits: 6}\n";

StatusOr<JobSpec> ParseAdaptable(const std::string& adaptive_lines) {
  return ParseJobSpec(std::string(kAdaptable) + adaptive_lines + kForwardFixpoint);
}

TEST(AdaptiveSpecTest, BooleanFormTurnsItOnWithDefaults) {
  StatusOr<JobSpec> spec = ParseAdaptable("  adaptive: true\n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  const AdaptiveCompressionSettings& a = spec->base.compression.adaptive;
  const AdaptiveCompressionSettings defaults;
  EXPECT_TRUE(a.enabled);
  EXPECT_EQ(a.min_bits, defaults.min_bits);
  EXPECT_EQ(a.max_bits, defaults.max_bits);
  EXPECT_EQ(a.hide_fraction, defaults.hide_fraction);
  EXPECT_EQ(a.interval_steps, defaults.interval_steps);

  spec = ParseAdaptable("  adaptive: off\n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_FALSE(spec->base.compression.adaptive.enabled);

  // Absent and null keep it off.
  spec = ParseAdaptable("  adaptive: ~\n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_FALSE(spec->base.compression.adaptive.enabled);
}

TEST(AdaptiveSpecTest, MappingFormReadsEveryKey) {
  StatusOr<JobSpec> spec = ParseAdaptable(
      "  adaptive:\n"
      "    min_bits: 3\n"
      "    max_bits: 7\n"
      "    max_relative_error: 0.2\n"
      "    hide_fraction: 0.9\n"
      "    raise_fraction: 0.4\n"
      "    interval_steps: 5\n"
      "    announce_steps: 4\n"
      "    min_topk_ratio: 0.05\n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  const AdaptiveCompressionSettings& a = spec->base.compression.adaptive;
  EXPECT_TRUE(a.enabled) << "a mapping without `enabled` means enabled";
  EXPECT_EQ(a.min_bits, 3);
  EXPECT_EQ(a.max_bits, 7);
  EXPECT_EQ(a.max_relative_error, 0.2);
  EXPECT_EQ(a.hide_fraction, 0.9);
  EXPECT_EQ(a.raise_fraction, 0.4);
  EXPECT_EQ(a.interval_steps, 5);
  EXPECT_EQ(a.announce_steps, 4);
  EXPECT_EQ(a.min_topk_ratio, 0.05);

  spec = ParseAdaptable("  adaptive: {enabled: false, min_bits: 4}\n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_FALSE(spec->base.compression.adaptive.enabled);
  EXPECT_EQ(spec->base.compression.adaptive.min_bits, 4);

  spec = ParseAdaptable("  adaptive: {}\n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_TRUE(spec->base.compression.adaptive.enabled);
}

TEST(AdaptiveSpecTest, EachBadKeyOrRangeIsNamedWithItsLine) {
  const std::pair<std::string, std::string> cases[] = {
      {"  adaptive: maybe\n",
       "compression.adaptive (line 6): expected true, false or a mapping, got \"maybe\""},
      {"  adaptive: [1]\n",
       "compression.adaptive (line 6): expected true, false or a mapping, "
       "got a list"},
      {"  adaptive:\n    min_bitz: 3\n", "compression.adaptive.min_bitz (line 7): unknown key"},
      {"  adaptive:\n    enabled: sure\n",
       "compression.adaptive.enabled (line 7): expected true or false, got \"sure\""},
      {"  adaptive:\n    min_bits: 2.5\n",
       "compression.adaptive.min_bits (line 7): expected an integer, got \"2.5\""},
      {"  adaptive:\n    hide_fraction: most\n",
       "compression.adaptive.hide_fraction (line 7): expected a number, got \"most\""},
      {"  adaptive:\n    interval_steps: [1]\n",
       "compression.adaptive.interval_steps (line 7): expected an integer, got a list"},
      {"  adaptive: {min_bits: 2, min_bits: 3}\n",
       "compression.adaptive.min_bits (line 6): duplicate key"},
      {"  adaptive:\n    min_bits: 1\n",
       "compression.adaptive.min_bits (line 7): 1 is outside [2, 8]"},
      {"  adaptive:\n    max_bits: 9\n",
       "compression.adaptive.max_bits (line 7): 9 is outside [2, 8]"},
      {"  adaptive:\n    min_bits: 6\n    max_bits: 4\n",
       "compression.adaptive.max_bits: 4 is below min_bits 6 (line 8)"},
      {"  adaptive:\n    max_relative_error: 0\n",
       "compression.adaptive.max_relative_error (line 7): 0 is outside (0, 100]"},
      {"  adaptive:\n    hide_fraction: 1.5\n",
       "compression.adaptive.hide_fraction (line 7): 1.5 is outside (0, 1]"},
      {"  adaptive:\n    hide_fraction: 0\n",
       "compression.adaptive.hide_fraction (line 7): 0 is outside (0, 1]"},
      {"  adaptive:\n    raise_fraction: -0.1\n",
       "compression.adaptive.raise_fraction (line 7): -0.1 is outside (0, 1]"},
      {"  adaptive:\n    hide_fraction: 0.6\n    raise_fraction: 0.6\n",
       "compression.adaptive.raise_fraction: 0.6 is not below hide_fraction 0.6 (the hysteresis "
       "band between them must not be empty) (line 8)"},
      {"  adaptive:\n    interval_steps: 0\n",
       "compression.adaptive.interval_steps (line 7): 0 is outside [1, 1000000]"},
      {"  adaptive:\n    announce_steps: -2\n",
       "compression.adaptive.announce_steps (line 7): -2 is outside [1, 1000000]"},
      {"  adaptive:\n    min_topk_ratio: 0\n",
       "compression.adaptive.min_topk_ratio (line 7): 0 is outside (0, 1]"},
      {"  adaptive:\n    min_topk_ratio: 1.5\n",
       "compression.adaptive.min_topk_ratio (line 7): 1.5 is outside (0, 1]"},
      // Ranges are checked with the switch off too: the block is still read and written back.
      {"  adaptive: {enabled: false, max_bits: 12}\n",
       "compression.adaptive.max_bits (line 6): 12 is outside [2, 8]"},
  };
  for (const auto& [lines, expected] : cases) {
    StatusOr<JobSpec> spec = ParseAdaptable(lines);
    ASSERT_FALSE(spec.ok()) << lines;
    EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument) << lines;
    // Exactly that one problem: no "N problems:" header, no consequence of it.
    EXPECT_EQ(spec.status().message(), expected) << lines;
  }
}

TEST(AdaptiveSpecTest, ReportsNoConsequenceOfAFractionThatFailedToParse) {
  // hide_fraction keeps its default 0.8, below raise_fraction 0.9: not a second problem.
  StatusOr<JobSpec> spec = ParseAdaptable("  adaptive: {hide_fraction: x, raise_fraction: 0.9}\n");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().message(),
            "compression.adaptive.hide_fraction (line 6): expected a number, got \"x\"");
}

TEST(AdaptiveSpecTest, NothingToAdaptIsAProblemNamingWhatIsNeeded) {
  const std::string minimal = "name: t\nmodel: {dir: m}\ndata: {train: [a.txt]}\n";
  const std::string kNeeds =
      "compression.adaptive: nothing to adapt: it needs pipeline.stages > 1 with a "
      "compression.forward or compression.backward codec of fixpoint, delta, delta-lowbits or "
      "tah, or data_parallel.replicas > 1 with data_parallel.mode cocktail";
  const std::string refused[] = {
      // No adjustable codec anywhere.
      minimal + "compression: {adaptive: true}\n",
      // Adjustable codecs but no link to use them on.
      minimal + "compression: {adaptive: true, forward: {codec: fixpoint}}\n",
      minimal +
          "data_parallel: {mode: cocktail, codec: {codec: cocktail}}\n"
          "compression: {adaptive: true}\n",
      // Links whose codecs have no bits to adjust.
      minimal +
          "pipeline: {stages: 2}\ndata_parallel: {replicas: 2, mode: powersgd}\n"
          "compression: {adaptive: {min_bits: 3}, forward: {codec: topk}}\n",
  };
  for (const std::string& yaml : refused) {
    StatusOr<JobSpec> spec = ParseJobSpec(yaml);
    ASSERT_FALSE(spec.ok()) << yaml;
    EXPECT_EQ(spec.status().message().rfind(kNeeds + " (line ", 0), 0u)
        << yaml << " -> " << spec.status().message();
  }

  // tah's low units take bits - 1, so it needs max_bits 3 at least.
  StatusOr<JobSpec> tah =
      ParseJobSpec(minimal +
                   "pipeline: {stages: 2}\ncompression:\n  forward: {codec: tah}\n"
                   "  adaptive: {max_bits: 2}\n");
  ASSERT_FALSE(tah.ok());
  EXPECT_EQ(tah.status().message(),
            "compression.adaptive.max_bits: 2 leaves the tah codec of compression.forward no "
            "bits to choose (it needs 3) (line 7)");

  const std::string accepted[] = {
      minimal +
          "pipeline: {stages: 2}\ncompression: {adaptive: true, backward: {codec: fixpoint}}\n",
      minimal + "pipeline: {stages: 3}\ncompression: {adaptive: true, forward: {codec: tah}}\n",
      minimal + "pipeline: {stages: 2}\ncompression: {adaptive: true, forward: {codec: delta}}\n",
      minimal +
          "data_parallel: {replicas: 2, mode: cocktail, codec: {codec: cocktail}}\n"
          "compression: {adaptive: true}\n",
      // Off: nothing is needed.
      minimal + "compression: {adaptive: false}\n",
  };
  for (const std::string& yaml : accepted) {
    StatusOr<JobSpec> spec = ParseJobSpec(yaml);
    EXPECT_TRUE(spec.ok()) << yaml << " -> " << spec.status().ToString();
  }
}

TEST(AdaptiveSpecTest, RoundTripsThroughJobSpecToYaml) {
  StatusOr<JobSpec> spec = ParseAdaptable(
      "  adaptive: {min_bits: 3, max_bits: 6, max_relative_error: 0.15, hide_fraction: 0.7,\n"
      "             raise_fraction: 0.35, interval_steps: 6, announce_steps: 3,\n"
      "             min_topk_ratio: 0.03125}\n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  const std::string yaml = JobSpecToYaml(*spec);
  // The mapping form, every key, the switch included.
  EXPECT_NE(yaml.find("  adaptive:\n    enabled: true\n    min_bits: 3\n    max_bits: 6\n"
                      "    max_relative_error: 0.15\n    hide_fraction: 0.7\n"
                      "    raise_fraction: 0.35\n    interval_steps: 6\n    announce_steps: 3\n"
                      "    min_topk_ratio: 0.03125\n"),
            std::string::npos)
      << yaml;
  StatusOr<JobSpec> again = ParseJobSpec(yaml);
  ASSERT_TRUE(again.ok()) << again.status().ToString() << "\n" << yaml;
  const AdaptiveCompressionSettings& x = spec->base.compression.adaptive;
  const AdaptiveCompressionSettings& y = again->base.compression.adaptive;
  EXPECT_EQ(x.enabled, y.enabled);
  EXPECT_EQ(x.min_bits, y.min_bits);
  EXPECT_EQ(x.max_bits, y.max_bits);
  EXPECT_EQ(x.max_relative_error, y.max_relative_error);
  EXPECT_EQ(x.hide_fraction, y.hide_fraction);
  EXPECT_EQ(x.raise_fraction, y.raise_fraction);
  EXPECT_EQ(x.interval_steps, y.interval_steps);
  EXPECT_EQ(x.announce_steps, y.announce_steps);
  EXPECT_EQ(x.min_topk_ratio, y.min_topk_ratio);
  EXPECT_EQ(JobSpecToYaml(*again), yaml);

  // Off, written as `enabled: false`, reads back off (a job without adjustable codecs included).
  StatusOr<JobSpec> off = ParseJobSpec("name: t\nmodel: {dir: m}\ndata: {train: [a.txt]}\n");
  ASSERT_TRUE(off.ok());
  const std::string off_yaml = JobSpecToYaml(*off);
  EXPECT_NE(off_yaml.find("  adaptive:\n    enabled: false\n"), std::string::npos) << off_yaml;
  StatusOr<JobSpec> off_again = ParseJobSpec(off_yaml);
  ASSERT_TRUE(off_again.ok()) << off_again.status().ToString();
  EXPECT_FALSE(off_again->base.compression.adaptive.enabled);
}

}  // namespace
}  // namespace geotrain::runtime
