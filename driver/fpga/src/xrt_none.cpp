// SPDX-License-Identifier: Apache-2.0
// The XRT entry points of a build without XRT (CMake NETAGG_XRT off, or XRT's headers and
// libraries not found): a clear error instead of a missing symbol.
#include <fmt/format.h>

#include "netagg/error.hpp"
#include "netagg/fpga/device.hpp"

namespace netagg::fpga {
namespace {

[[noreturn]] void no_xrt(const std::string& what) {
  throw Error(Errc::kUnsupported,
              fmt::format("{}: this build of netagg has no XRT support; install XRT (Debian: "
                          "libxrt-dev, or Xilinx's xrt package) and configure with "
                          "-DNETAGG_XRT=ON",
                          what));
}

}  // namespace

bool xrt_available() { return false; }

std::string check_xclbin(const XrtOptions& options) { no_xrt(options.xclbin); }

std::unique_ptr<Device> open_xrt_device(const XrtOptions& options) {
  no_xrt(fmt::format("Alveo device {}", options.index));
}

}  // namespace netagg::fpga
