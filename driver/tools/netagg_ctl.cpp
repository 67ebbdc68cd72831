// SPDX-License-Identifier: Apache-2.0
// netagg-ctl: the control planes of netagg's devices on one command line.
//   netagg-ctl p4 bmv2|tofino --job FILE [--job FILE ...] [--switch-mac MAC] [--switch-ip IP]
//                             [--as NAME] [--peer IP=MAC,PORT ...] [-o FILE]
// Every subcommand does its work in its callback; a netagg::Error thrown there (a bad job file,
// a job the device cannot take) is printed and ends the program with status 2, as does a bad
// command line. A subcommand that reports its own errors throws CLI::RuntimeError(status).
#include <csignal>
#include <cstdio>

#include <CLI/CLI.hpp>

#include "ctl_commands.hpp"
#include "netagg/error.hpp"

int main(int argc, char** argv) {
  ::signal(SIGPIPE, SIG_IGN);  // `netagg-ctl ... | head` must not die by signal
  CLI::App app{"netagg-ctl: control planes of the netagg devices"};
  app.require_subcommand(1);
  netagg::ctl::add_p4_command(app);
  netagg::ctl::add_fpga_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::RuntimeError& e) {
    return app.exit(e);  // a subcommand's own status, already reported (fpga: 1 = device failed)
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : netagg::ctl::kExitBadInput;
  } catch (const netagg::Error& e) {
    std::fprintf(stderr, "netagg-ctl: %s\n", e.what());
    return netagg::ctl::kExitBadInput;
  }
  return 0;
}
