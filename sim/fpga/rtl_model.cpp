// The RTL aggregator (hw/rtl/netagg_aggregator.sv) behind the harness; built only when Verilator
// and the RTL are there (sim/fpga/CMakeLists.txt).
#include "Vnetagg_aggregator.h"
#include "harness.hpp"
#include "rtl_harness.hpp"

namespace netagg::sim {

// The RTL's first result beat leaves about 20 cycles after the last beat of the contribution
// that completes a round (the adder pipelines, then the slot memory; replication streams without
// gaps): 64 quiet cycles cover it with room. Too few would not lose results, only delay them to
// the next batch (sim/fpga/README.md).
constexpr std::uint64_t kRtlQuietCycles = 64;

std::unique_ptr<FpgaModel> make_rtl_model_impl(const std::string& trace_fst) {
  return std::make_unique<RtlHarness<Vnetagg_aggregator, NETAGG_RTL_PORTS>>("rtl", trace_fst,
                                                                            kRtlQuietCycles);
}

}  // namespace netagg::sim
