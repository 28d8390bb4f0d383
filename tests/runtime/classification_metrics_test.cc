// ConfusionCounts: accuracy, F1 and MCC as GLUE (and scikit-learn) score them.
#include "runtime/classification_metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace geotrain::runtime {
namespace {

ConfusionCounts Counts(int64_t labels, const std::vector<int64_t>& truth,
                       const std::vector<int64_t>& predicted) {
  ConfusionCounts counts(labels);
  for (size_t i = 0; i < truth.size(); ++i) counts.Add(truth[i], predicted[i]);
  return counts;
}

TEST(ClassificationMetricsTest, BinaryF1IsThePositiveClassAndMccTheCorrelation) {
  // TN 5, FP 1, FN 2, TP 4.
  std::vector<int64_t> truth, predicted;
  for (auto [t, p, n] : {std::tuple{0, 0, 5}, {0, 1, 1}, {1, 0, 2}, {1, 1, 4}}) {
    for (int i = 0; i < n; ++i) {
      truth.push_back(t);
      predicted.push_back(p);
    }
  }
  const ClassificationMetrics m = Counts(2, truth, predicted).Metrics();
  EXPECT_DOUBLE_EQ(m.accuracy, 0.75);
  EXPECT_DOUBLE_EQ(m.f1, 8.0 / 11.0);
  EXPECT_NEAR(m.mcc, 18.0 / std::sqrt(5.0 * 6 * 6 * 7), 1e-12);
  // scikit-learn's matthews_corrcoef example: [+1, +1, +1, -1] vs [+1, -1, +1, +1] is -1/3.
  EXPECT_NEAR(Counts(2, {1, 1, 1, 0}, {1, 0, 1, 1}).Metrics().mcc, -1.0 / 3.0, 1e-12);
}

TEST(ClassificationMetricsTest, MulticlassF1IsTheMacroMean) {
  // scikit-learn's f1_score example: macro F1 0.2666...
  const ClassificationMetrics m = Counts(3, {0, 1, 2, 0, 1, 2}, {0, 2, 1, 0, 0, 1}).Metrics();
  EXPECT_DOUBLE_EQ(m.accuracy, 2.0 / 6.0);
  EXPECT_NEAR(m.f1, 0.8 / 3.0, 1e-12);
  EXPECT_DOUBLE_EQ(m.mcc, 0.0);
  const ClassificationMetrics perfect = Counts(3, {0, 1, 2}, {0, 1, 2}).Metrics();
  EXPECT_DOUBLE_EQ(perfect.f1, 1.0);
  EXPECT_DOUBLE_EQ(perfect.mcc, 1.0);
}

TEST(ClassificationMetricsTest, UndefinedCorrelationIsZero) {
  const ClassificationMetrics constant = Counts(2, {0, 1, 1}, {1, 1, 1}).Metrics();
  EXPECT_DOUBLE_EQ(constant.mcc, 0.0);
  EXPECT_DOUBLE_EQ(ConfusionCounts(2).Metrics().accuracy, 0.0);
}

}  // namespace
}  // namespace geotrain::runtime
