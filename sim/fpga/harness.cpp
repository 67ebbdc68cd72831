#include "harness.hpp"

#include <fmt/format.h>

#include "netagg/error.hpp"

namespace netagg::sim {

#if NETAGG_HAVE_RTL
std::unique_ptr<FpgaModel> make_rtl_model_impl(const std::string& trace_fst);
#endif
#if NETAGG_HAVE_HLS
std::unique_ptr<FpgaModel> make_hls_model_impl();
#endif

bool rtl_model_available() { return NETAGG_HAVE_RTL; }
bool hls_model_available() { return NETAGG_HAVE_HLS; }

std::unique_ptr<FpgaModel> make_rtl_model([[maybe_unused]] const std::string& trace_fst) {
#if NETAGG_HAVE_RTL
  return make_rtl_model_impl(trace_fst);
#else
  throw Error(Errc::kUnsupported,
              "this build has no RTL model: Verilator or hw/rtl/netagg_aggregator.sv was missing "
              "at configure time (NETAGG_VERILATOR)");
#endif
}

std::unique_ptr<FpgaModel> make_hls_model() {
#if NETAGG_HAVE_HLS
  return make_hls_model_impl();
#else
  throw Error(Errc::kUnsupported,
              "this build has no HLS C model (hls/ was missing at configure "
              "time)");
#endif
}

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
