// SPDX-License-Identifier: Apache-2.0
#include "harness.hpp"

#include <fmt/format.h>

#include "netagg/error.hpp"

namespace netagg::sim {

#if NETAGG_HAVE_RTL
std::unique_ptr<FpgaModel> make_rtl_model_impl(const std::string& trace_fst, RtlBuild build);
#endif
std::unique_ptr<FpgaModel> make_hls_model_impl();

bool rtl_model_available() { return NETAGG_HAVE_RTL; }

std::unique_ptr<FpgaModel> make_rtl_model([[maybe_unused]] const std::string& trace_fst,
                                          [[maybe_unused]] RtlBuild build) {
#if NETAGG_HAVE_RTL
  return make_rtl_model_impl(trace_fst, trace_fst.empty() ? build : RtlBuild::kTraced);
#else
  throw Error(Errc::kUnsupported,
              "this build has no RTL model: it was configured without Verilator "
              "(NETAGG_VERILATOR)");
#endif
}

std::unique_ptr<FpgaModel> make_hls_model() { return make_hls_model_impl(); }

std::unique_ptr<FpgaModel> make_fpga_model(const std::string& kind, const std::string& trace_fst) {
  if (kind == "rtl") return make_rtl_model(trace_fst);
  if (kind == "hls") {
    if (!trace_fst.empty())
      throw Error(Errc::kConfig, "--trace: the HLS C model has no waveform; use --model rtl");
    return make_hls_model();
  }
  throw Error(Errc::kConfig, fmt::format("--model: '{}' is not rtl or hls", kind));
}

}  // namespace netagg::sim
