// SPDX-License-Identifier: Apache-2.0
// The subcommands of netagg-ctl. Each device's control plane adds its own from its own file, so
// netagg_ctl.cpp knows nothing of the devices.
#pragma once

namespace CLI {
class App;
}

namespace netagg::ctl {

// Exit status for bad input (options, job files, a job the device cannot take), as the daemons.
inline constexpr int kExitBadInput = 2;

// `netagg-ctl p4 bmv2|tofino --job FILE ...`: the switch's table entries (ctl_p4.cpp).
void add_p4_command(CLI::App& app);

// `netagg-ctl fpga ...`: the FPGA aggregator's control plane (ctl_fpga.cpp).
void add_fpga_command(CLI::App& app);

}  // namespace netagg::ctl
