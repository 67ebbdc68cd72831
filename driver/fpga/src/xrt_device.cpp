// SPDX-License-Identifier: Apache-2.0
// The FPGA aggregator on an Alveo card, over XRT's native C++ API: xrt::device opens the card,
// xrt::xclbin reads the file, load_xclbin programs it, and xrt::ip gives the aggregator's
// AXI4-Lite registers (the kernel is user managed / ap_ctrl_none, so XRT never starts it: it
// runs from reset on). Compiled when CMake finds XRT (NETAGG_XRT); xrt_none.cpp otherwise.
//
// Not run on a card here (no Alveo on the build machine): the error paths before a card answers
// (XILINX_XRT, no device, the xclbin file checks) are tested; load and register access are not.
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

// XRT 2.13 (Debian libxrt-dev): headers in /usr/include/xrt, the native C++ API partly still in
// experimental/.
#include <experimental/xrt_ip.h>
#include <experimental/xrt_xclbin.h>
#include <version.h>
#include <xrt/xrt_device.h>
#include <xrt/xrt_uuid.h>

#include "netagg/error.hpp"
#include "netagg/fpga/device.hpp"

namespace netagg::fpga {
namespace {

namespace fs = std::filesystem;

// What to check when XRT cannot open the card: the usual causes, most likely first.
constexpr const char* kDeviceChecklist =
    "check that `xbutil examine` lists the card at that index, that the xocl and xclmgmt "
    "drivers are loaded (`lsmod | grep xocl`), that this user may open /dev/dri/renderD*, and "
    "that XILINX_XRT names the XRT the drivers came with";

class XrtBus final : public CsrBus {
 public:
  XrtBus(xrt::device device, xrt::ip ip, std::string name)
      : device_(std::move(device)), ip_(std::move(ip)), name_(std::move(name)) {}

  std::uint32_t read32(std::uint32_t address) override {
    try {
      return ip_.read_register(address);
    } catch (const std::exception& e) {
      throw Error(Errc::kTransport, fmt::format("{}: register read of 0x{:03x} failed: {}", name_,
                                                address, e.what()));
    }
  }
  void write32(std::uint32_t address, std::uint32_t value) override {
    try {
      ip_.write_register(address, value);
    } catch (const std::exception& e) {
      throw Error(Errc::kTransport, fmt::format("{}: register write of 0x{:03x} failed: {}", name_,
                                                address, e.what()));
    }
  }

 private:
  xrt::device device_;  // kept open as long as the registers are used
  xrt::ip ip_;
  std::string name_;
};

// XRT 2.13's shim loader dlopens $XILINX_XRT/lib/libxrt_core.so.2 and throws "XILINX_XRT not set"
// without it (checked here: XRT 2.13 on Debian 12). Later XRT finds its libraries without the
// variable, so the check is limited to the versions that need it.
void check_xrt_environment(unsigned index) {
#if XRT_VERSION_CODE <= XRT_VERSION(2, 13)
  const char* root = std::getenv("XILINX_XRT");
  if (root == nullptr || *root == '\0')
    throw Error(Errc::kConfig,
                fmt::format("Alveo device {}: XILINX_XRT is not set. XRT {} loads its core library "
                            "from $XILINX_XRT/lib/libxrt_core.so.2: run `source "
                            "/opt/xilinx/xrt/setup.sh` (Xilinx's XRT package), or with Debian's "
                            "libxrt1 point XILINX_XRT at a folder whose lib/ is a link to "
                            "/usr/lib/x86_64-linux-gnu",
                            index, xrt_build_version));
  const fs::path core = fs::path(root) / "lib" / "libxrt_core.so.2";
  std::error_code ec;
  if (!fs::exists(core, ec))
    throw Error(Errc::kConfig,
                fmt::format("Alveo device {}: XILINX_XRT={} but {} does not exist: XILINX_XRT must "
                            "name the XRT install (the folder holding lib/libxrt_core.so.2)",
                            index, root, core.string()));
#else
  (void)index;
#endif
}

std::string join(const std::vector<std::string>& names) {
  if (names.empty()) return "none";
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// "kernel:cu" of the aggregator in the xclbin, or "" (with what is there in `found`).
std::string find_ip(const xrt::xclbin& xclbin, const XrtOptions& o,
                    std::vector<std::string>& found) {
  for (const auto& ip : xclbin.get_ips()) {
    const std::string name = ip.get_name();
    found.push_back(name);
    const std::string prefix = o.kernel + ":";
    if (name.rfind(prefix, 0) != 0) continue;
    if (o.compute_unit.empty() || name == prefix + o.compute_unit) return name;
  }
  return "";
}

xrt::xclbin read_xclbin(const XrtOptions& o, std::string& ip_name) {
  const fs::path file(o.xclbin);
  std::error_code ec;
  if (!fs::exists(file, ec))
    throw Error(Errc::kConfig, fmt::format("{}: no such xclbin file", o.xclbin));
  if (fs::is_directory(file, ec))
    throw Error(Errc::kConfig, fmt::format("{}: is a directory, not an xclbin", o.xclbin));
  xrt::xclbin xclbin;
  try {
    xclbin = xrt::xclbin(o.xclbin);
  } catch (const std::exception& e) {
    throw Error(Errc::kConfig,
                fmt::format("{}: not a valid xclbin (XRT: {}); rebuild it with `make xclbin`",
                            o.xclbin, e.what()));
  }
  std::vector<std::string> found;
  ip_name = find_ip(xclbin, o, found);
  if (ip_name.empty()) {
    const std::string wanted =
        o.compute_unit.empty() ? o.kernel + ":*" : o.kernel + ":" + o.compute_unit;
    throw Error(Errc::kConfig,
                fmt::format("{}: holds no {} compute unit (its IPs: {}): not a netagg aggregator "
                            "xclbin",
                            o.xclbin, wanted, join(found)));
  }
  return xclbin;
}

// "netagg_aggregator:cu" -> "netagg_aggregator:{cu}", the xrt::ip name syntax.
std::string ip_selector(const std::string& ip_name) {
  const auto colon = ip_name.find(':');
  if (colon == std::string::npos) return ip_name;
  return fmt::format("{}:{{{}}}", ip_name.substr(0, colon), ip_name.substr(colon + 1));
}

}  // namespace

bool xrt_available() { return true; }

std::string check_xclbin(const XrtOptions& options) {
  std::string ip_name;
  read_xclbin(options, ip_name);
  return ip_name;
}

std::unique_ptr<Device> open_xrt_device(const XrtOptions& o) {
  // The file first: its problems need no card and are the user's to fix.
  std::string ip_name;
  std::optional<xrt::xclbin> xclbin;
  if (!o.xclbin.empty()) xclbin = read_xclbin(o, ip_name);
  check_xrt_environment(o.index);

  xrt::device device;
  try {
    device = xrt::device(o.index);
  } catch (const std::exception& e) {
    throw Error(Errc::kTransport, fmt::format("cannot open Alveo device {} (XRT: {}): {}", o.index,
                                              e.what(), kDeviceChecklist));
  }

  std::string shell = "?";
  try {
    shell = device.get_info<xrt::info::device::name>();
  } catch (const std::exception&) {
  }
  xrt::uuid uuid;
  if (xclbin) {
    try {
      uuid = device.load_xclbin(*xclbin);
    } catch (const std::exception& e) {
      throw Error(Errc::kTransport,
                  fmt::format("Alveo device {} ({}): loading {} failed (XRT: {}); the xclbin was "
                              "built for platform {}",
                              o.index, shell, o.xclbin, e.what(), xclbin->get_xsa_name()));
    }
  } else {
    try {
      uuid = device.get_xclbin_uuid();
    } catch (const std::exception&) {
    }
    if (!uuid)
      throw Error(Errc::kConfig,
                  fmt::format("Alveo device {}: no xclbin loaded by netagg; run `netagg-ctl fpga "
                              "--device {} load --xclbin FILE` or give --xclbin",
                              o.index, o.index));
    ip_name = o.compute_unit.empty() ? o.kernel : o.kernel + ":" + o.compute_unit;
  }

  const std::string name = o.xclbin.empty()
                               ? fmt::format("Alveo device {} ({})", o.index, shell)
                               : fmt::format("Alveo device {} ({}, {})", o.index, shell, o.xclbin);
  xrt::ip ip;
  try {
    ip = xrt::ip(device, uuid, ip_selector(ip_name));
  } catch (const std::exception& e) {
    throw Error(Errc::kTransport,
                fmt::format("{}: cannot open the registers of {} (XRT: {}); another process may "
                            "hold the compute unit",
                            name, ip_name, e.what()));
  }
  auto result = std::make_unique<Device>(
      std::make_unique<XrtBus>(std::move(device), std::move(ip), name), name);
  result->identify();  // a kernel that is not our aggregator fails here, naming the xclbin
  return result;
}

}  // namespace netagg::fpga
