// SPDX-License-Identifier: Apache-2.0
// A netagg-ctl with only the `fpga` command, for tests/driver/ctl_fpga_test.cpp: the real
// netagg-ctl (driver/tools/netagg_ctl.cpp) adds the same command next to the others. Parse
// errors exit 2, as netagg-ctl's do.
#include <CLI/CLI.hpp>

#include "ctl_fpga.hpp"

int main(int argc, char** argv) {
  CLI::App app{"netagg-ctl (fpga only, test build)"};
  app.require_subcommand(1);
  netagg::ctl::add_fpga_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 || e.get_name() == "RuntimeError" ? code : 2;
  }
  return 0;
}
