// SPDX-License-Identifier: Apache-2.0
// A small owner of a GLPK problem: columns and rows are declared, the matrix is collected as
// triplets and loaded once, then solved by the simplex method or branch and bound.
#pragma once

#include <functional>
#include <string>
#include <vector>

struct glp_prob;

namespace netagg::plan {

class LinearProgram {
 public:
  explicit LinearProgram(bool maximize);
  ~LinearProgram();
  LinearProgram(const LinearProgram&) = delete;
  LinearProgram& operator=(const LinearProgram&) = delete;

  // Indices from 0. `upper` may be +infinity.
  int add_column(double lower, double upper, double objective, bool integer = false);
  int add_row_upper(double upper);  // row <= upper
  int add_row_fixed(double value);  // row == value
  void add(int row, int column, double value);

  int columns() const { return static_cast<int>(col_lower_.size()); }
  int rows() const { return static_cast<int>(row_lower_.size()); }
  std::size_t nonzeros() const { return values_.size(); }

  // Solves the LP (relaxation); returns false, with `error()` set, unless an optimum was found.
  bool solve(bool verbose = false);
  // Branch and bound after solve(); `incumbent` (column values, if not empty) is offered as a
  // heuristic solution. Returns false if no integer solution was found. `optimal()` says whether
  // the search finished; `gap()` is the relative gap left.
  bool solve_integer(double time_limit_seconds, const std::vector<double>& incumbent,
                     bool verbose = false);

  double objective() const { return objective_; }
  double value(int column) const { return values_out_[column]; }
  bool optimal() const { return optimal_; }
  double gap() const { return gap_; }
  const std::string& error() const { return error_; }

 private:
  void load();

  bool maximize_;
  std::vector<double> col_lower_, col_upper_, col_objective_;
  std::vector<bool> col_integer_;
  std::vector<double> row_lower_, row_upper_;
  std::vector<int> row_index_, col_index_;
  std::vector<double> values_;
  glp_prob* lp_ = nullptr;
  double objective_ = 0;
  std::vector<double> values_out_;
  bool optimal_ = false;
  double gap_ = 0;
  std::string error_;
};

}  // namespace netagg::plan
