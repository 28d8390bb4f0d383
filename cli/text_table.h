// TextTable: columns of text padded to line up, as the control commands print lists.
#pragma once

#include <string>
#include <vector>

namespace geotrain::cli {

class TextTable {
 public:
  // `header` names the columns; every row has as many cells (missing cells print empty).
  explicit TextTable(std::vector<std::string> header);

  void AddRow(std::vector<std::string> cells);
  bool empty() const { return rows_.empty(); }

  // The header and the rows, one per line, each ending in '\n'; columns are left-aligned and
  // separated by two spaces; no trailing spaces.
  std::string Render() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace geotrain::cli
