# SPDX-License-Identifier: Apache-2.0
# Vitis HLS project of the netagg FPGA aggregator (docs/fpga-aggregator.md, "HLS
# implementation"). From hls/:
#
#   vitis_hls -f build.tcl -tclargs csim     C simulation with tb/netagg_aggregator_tb.cpp
#   vitis_hls -f build.tcl -tclargs syn      synthesis to RTL (reports in proj/sol/syn/report)
#   vitis_hls -f build.tcl -tclargs ip       synthesis, then export as a Vivado IP (.zip)
#   vitis_hls -f build.tcl -tclargs cosim    synthesis, then RTL co-simulation with the testbench
#
# Optional environment: NETAGG_HLS_PART (default xcu250-figd2104-2L-e, Alveo U250) and
# NETAGG_HLS_CLOCK_NS (default 3.2, about 312 MHz).
#
# NOT RUN HERE: this repository was built on a machine without Vitis HLS. The kernel compiles as
# C++14 with g++ and clang against the shim headers (hls/shim/), and its C simulation runs in
# ctest (hls_csim_tb and the tests in tests/hls/), but no Xilinx tool has parsed its pragmas,
# synthesized it or co-simulated it. Expect to adjust pragmas (array partitioning of the slot
# memory, the s_axilite offsets) on the first real run; docs/fpga-aggregator.md lists what is
# known to differ from the hand-written RTL.

set mode [expr {[llength $argv] > 0 ? [lindex $argv end] : "csim"}]
if {[lsearch -exact {csim syn ip cosim} $mode] < 0} {
  puts "build.tcl: unknown mode '$mode' (csim, syn, ip, cosim)"
  exit 1
}
set part [expr {[info exists ::env(NETAGG_HLS_PART)] ? $::env(NETAGG_HLS_PART) : "xcu250-figd2104-2L-e"}]
set clock_ns [expr {[info exists ::env(NETAGG_HLS_CLOCK_NS)] ? $::env(NETAGG_HLS_CLOCK_NS) : 3.2}]

set here [file dirname [file normalize [info script]]]
set cflags "-std=c++14 -I$here/include -I$here/src"

open_project -reset proj
set_top netagg_aggregator
add_files $here/src/netagg_aggregator.cpp -cflags $cflags
add_files -tb $here/tb/netagg_aggregator_tb.cpp -cflags $cflags
open_solution -reset sol -flow_target vivado
set_part $part
create_clock -period $clock_ns -name default
# Free-running kernel: no block-level handshake; reset the control state and the registers.
config_rtl -reset all

switch $mode {
  csim {
    csim_design
  }
  syn {
    csynth_design
  }
  ip {
    csynth_design
    export_design -format ip_catalog -vendor netagg -library hls -version 1.0 \
      -description "netagg FPGA aggregator (HLS)"
  }
  cosim {
    csynth_design
    cosim_design -trace_level port
  }
}
exit 0
