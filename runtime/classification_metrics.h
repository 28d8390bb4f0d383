// ClassificationMetrics: what an evaluation of a sequence classifier reports, from the confusion
// counts of its predictions, as GLUE scores its tasks:
//   accuracy  correct / all;
//   f1        two classes: the F1 of class 1 (MRPC, QQP); more: the unweighted mean of every
//             class's F1 (macro F1);
//   mcc       Matthews correlation (CoLA); with more than two classes Gorodkin's R_K, which is
//             what scikit-learn's matthews_corrcoef computes. 0 when undefined (a constant
//             prediction or label), as scikit-learn returns.
// Plain arithmetic; thread-compatible.
#pragma once

#include <cstdint>
#include <vector>

namespace geotrain::runtime {

struct ClassificationMetrics {
  double accuracy = 0;
  double f1 = 0;
  double mcc = 0;
};

class ConfusionCounts {
 public:
  explicit ConfusionCounts(int64_t num_labels)
      : num_labels_(num_labels), counts_(static_cast<size_t>(num_labels * num_labels), 0.0) {}

  // One example whose true class is `label` was predicted as `predicted`.
  void Add(int64_t label, int64_t predicted) { ++counts_[Index(label, predicted)]; }
  // The counts as floats (row = true class, column = prediction), to be summed across replicas.
  std::vector<float>& counts() { return counts_; }
  int64_t num_labels() const { return num_labels_; }

  ClassificationMetrics Metrics() const;

 private:
  size_t Index(int64_t label, int64_t predicted) const {
    return static_cast<size_t>(label * num_labels_ + predicted);
  }
  double At(int64_t label, int64_t predicted) const { return counts_[Index(label, predicted)]; }

  int64_t num_labels_;
  std::vector<float> counts_;
};

}  // namespace geotrain::runtime
