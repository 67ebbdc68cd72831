// SPDX-License-Identifier: Apache-2.0
// `netagg-ctl fpga ...`: the FPGA aggregator's control plane on the command line (load, job
// add/list/remove, stats, reset) against an Alveo card (--device N, over XRT) or a running
// netagg-fpgad (--sim IP:PORT, its CSR control channel). See driver/README.md.
#pragma once

#include <CLI/CLI.hpp>

namespace netagg::ctl {

// Adds the `fpga` subcommand to `app`. Its callbacks report errors on stderr ("netagg-ctl fpga:
// ...") and throw CLI::RuntimeError with the exit status: 2 for bad input (job file, options, a
// job the device cannot hold, a build without XRT), 1 when the device fails or is not there.
// The caller's `catch (const CLI::ParseError& e) { return app.exit(e); }` returns that status.
void add_fpga_command(CLI::App& app);

}  // namespace netagg::ctl
