// SPDX-License-Identifier: Apache-2.0
// The RTL aggregator with its default parameters (hw/rtl/netagg_aggregator.sv) behind the
// FpgaModel interface, in its two Verilator builds; built only when Verilator and the RTL are
// there (sim/fpga/CMakeLists.txt).
#include "Vnetagg_aggregator.h"
#include "Vnetagg_aggregator_fast.h"
#include "Vnetagg_aggregator_fast__Syms.h"
#include "harness.hpp"
#include "rtl_harness.hpp"

namespace netagg::sim {

std::unique_ptr<FpgaModel> make_rtl_model_impl(const std::string& trace_fst, RtlBuild build) {
  if (build == RtlBuild::kFast)
    return std::make_unique<RtlHarness<Vnetagg_aggregator_fast, 4, Vnetagg_aggregator_fast__Syms>>(
        RtlOptions{});
  return std::make_unique<RtlHarness<Vnetagg_aggregator, 4>>(RtlOptions{.trace_fst = trace_fst});
}

}  // namespace netagg::sim
