// SPDX-License-Identifier: Apache-2.0
#include "glpk.hpp"

#include <glpk.h>

#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace netagg::plan {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

int bound_type(double lower, double upper) {
  const bool has_lower = std::isfinite(lower), has_upper = std::isfinite(upper);
  if (has_lower && has_upper) return lower == upper ? GLP_FX : GLP_DB;
  if (has_lower) return GLP_LO;
  if (has_upper) return GLP_UP;
  return GLP_FR;
}

std::string simplex_error(int code) {
  switch (code) {
    case GLP_EBADB:
      return "invalid initial basis";
    case GLP_ESING:
      return "singular basis";
    case GLP_ECOND:
      return "ill-conditioned basis";
    case GLP_EBOUND:
      return "inconsistent bounds";
    case GLP_EFAIL:
      return "solver failure";
    case GLP_EITLIM:
      return "iteration limit";
    case GLP_ETMLIM:
      return "time limit";
    case GLP_ENOPFS:
      return "no primal feasible solution";
    case GLP_ENODFS:
      return "no dual feasible solution";
    default:
      return fmt::format("GLPK error {}", code);
  }
}

struct Heuristic {
  const std::vector<double>* incumbent;
  bool offered = false;
};

void callback(glp_tree* tree, void* info) {
  auto* h = static_cast<Heuristic*>(info);
  if (glp_ios_reason(tree) != GLP_IHEUR || h->offered || h->incumbent->empty()) return;
  h->offered = true;
  std::vector<double> x(h->incumbent->size() + 1);
  for (std::size_t i = 0; i < h->incumbent->size(); ++i) x[i + 1] = (*h->incumbent)[i];
  glp_ios_heur_sol(tree, x.data());
}

}  // namespace

LinearProgram::LinearProgram(bool maximize) : maximize_(maximize) {}

LinearProgram::~LinearProgram() {
  if (lp_) glp_delete_prob(lp_);
}

int LinearProgram::add_column(double lower, double upper, double objective, bool integer) {
  col_lower_.push_back(lower);
  col_upper_.push_back(upper);
  col_objective_.push_back(objective);
  col_integer_.push_back(integer);
  return columns() - 1;
}

int LinearProgram::add_row_upper(double upper) {
  row_lower_.push_back(-kInf);
  row_upper_.push_back(upper);
  return rows() - 1;
}

int LinearProgram::add_row_fixed(double value) {
  row_lower_.push_back(value);
  row_upper_.push_back(value);
  return rows() - 1;
}

void LinearProgram::add(int row, int column, double value) {
  row_index_.push_back(row + 1);
  col_index_.push_back(column + 1);
  values_.push_back(value);
}

void LinearProgram::load() {
  lp_ = glp_create_prob();
  glp_set_obj_dir(lp_, maximize_ ? GLP_MAX : GLP_MIN);
  if (rows() > 0) glp_add_rows(lp_, rows());
  if (columns() > 0) glp_add_cols(lp_, columns());
  for (int r = 0; r < rows(); ++r)
    glp_set_row_bnds(lp_, r + 1, bound_type(row_lower_[r], row_upper_[r]),
                     std::isfinite(row_lower_[r]) ? row_lower_[r] : 0,
                     std::isfinite(row_upper_[r]) ? row_upper_[r] : 0);
  for (int c = 0; c < columns(); ++c) {
    glp_set_col_bnds(lp_, c + 1, bound_type(col_lower_[c], col_upper_[c]),
                     std::isfinite(col_lower_[c]) ? col_lower_[c] : 0,
                     std::isfinite(col_upper_[c]) ? col_upper_[c] : 0);
    glp_set_obj_coef(lp_, c + 1, col_objective_[c]);
  }
  // GLPK's arrays start at index 1.
  std::vector<int> ia{0}, ja{0};
  std::vector<double> ar{0};
  ia.insert(ia.end(), row_index_.begin(), row_index_.end());
  ja.insert(ja.end(), col_index_.begin(), col_index_.end());
  ar.insert(ar.end(), values_.begin(), values_.end());
  glp_load_matrix(lp_, static_cast<int>(values_.size()), ia.data(), ja.data(), ar.data());
}

bool LinearProgram::solve(bool verbose) {
  glp_term_out(verbose ? GLP_ON : GLP_OFF);  // glp_scale_prob and others print otherwise
  if (!lp_) load();
  glp_scale_prob(lp_, GLP_SF_AUTO);
  glp_smcp parm;
  glp_init_smcp(&parm);
  parm.msg_lev = verbose ? GLP_MSG_ON : GLP_MSG_OFF;
  parm.presolve = GLP_OFF;  // branch and bound needs the basis of the original problem
  // Bixby's crash basis: on the fat trees' programs the simplex method then takes a third of
  // the time it takes from the standard basis (docs/routing.md, "Solve times").
  glp_cpx_basis(lp_);
  int code = glp_simplex(lp_, &parm);
  if (code == GLP_ESING || code == GLP_ECOND || code == GLP_EFAIL) {
    // Start again from an advanced basis: GLPK's advice for a numerically hard start.
    glp_adv_basis(lp_, 0);
    code = glp_simplex(lp_, &parm);
  }
  if (code != 0) {
    error_ = simplex_error(code);
    return false;
  }
  if (glp_get_status(lp_) != GLP_OPT) {
    error_ = fmt::format("the LP has no optimum (GLPK status {})", glp_get_status(lp_));
    return false;
  }
  objective_ = glp_get_obj_val(lp_);
  values_out_.resize(columns());
  for (int c = 0; c < columns(); ++c) values_out_[c] = glp_get_col_prim(lp_, c + 1);
  optimal_ = true;
  return true;
}

bool LinearProgram::solve_integer(double time_limit_seconds, const std::vector<double>& incumbent,
                                  bool verbose) {
  glp_term_out(verbose ? GLP_ON : GLP_OFF);
  for (int c = 0; c < columns(); ++c)
    if (col_integer_[c]) glp_set_col_kind(lp_, c + 1, GLP_IV);
  Heuristic heuristic{&incumbent};
  glp_iocp parm;
  glp_init_iocp(&parm);
  parm.msg_lev = verbose ? GLP_MSG_ON : GLP_MSG_OFF;
  parm.presolve = GLP_OFF;
  parm.tm_lim = static_cast<int>(std::min(time_limit_seconds * 1000, 2e9));
  parm.cb_func = callback;
  parm.cb_info = &heuristic;
  parm.fp_heur = GLP_ON;
  parm.gmi_cuts = GLP_OFF;
  const int code = glp_intopt(lp_, &parm);
  const int status = glp_mip_status(lp_);
  if (status != GLP_OPT && status != GLP_FEAS) {
    error_ = code ? simplex_error(code) : "no integer solution";
    optimal_ = false;
    return false;
  }
  optimal_ = status == GLP_OPT && code == 0;
  objective_ = glp_mip_obj_val(lp_);
  values_out_.resize(columns());
  for (int c = 0; c < columns(); ++c) values_out_[c] = glp_mip_col_val(lp_, c + 1);
  // The gap between the best solution and the best bound left when the search stopped.
  gap_ = 0;
  if (!optimal_) {
    error_ = code == GLP_ETMLIM ? "time limit" : simplex_error(code);
    gap_ = -1;  // unknown here; the caller compares with the LP relaxation
  }
  return true;
}

}  // namespace netagg::plan
