# SPDX-License-Identifier: Apache-2.0
# Packages the SystemVerilog aggregator (hw/rtl/) as a Vitis RTL kernel (.xo). Run by
# hw/vitis/Makefile (`make xclbin KERNEL=rtl`):
#
#   vivado -mode batch -source package_kernel.tcl -tclargs XO RTL_DIR CSR_PKG PART NUM_PORTS
#
# The sources are the generated CSR package, then every file of RTL_DIR/files.txt in its order:
# the one file list that CMake's Verilator targets and scripts/hw/synth.sh read too.
# The kernel is user managed (no ap_ctrl block: it runs from reset, as the HLS top's ap_ctrl_none):
# the host reaches it only through s_axi_control with xrt::ip (driver/fpga/src/xrt_device.cpp).
#
# NOT RUN HERE: no Vivado on the machine this was written on.

if {[llength $argv] != 4} {
  puts "usage: package_kernel.tcl XO RTL_DIR PART NUM_PORTS"
  exit 1
}
lassign $argv xo rtl_dir part num_ports

set sources [list]
set fh [open [file join $rtl_dir files.txt] r]
foreach line [split [read $fh] "\n"] {
  set line [string trim $line]
  if {$line eq "" || [string index $line 0] eq "#"} { continue }
  set path [file join $rtl_dir $line]
  if {![file exists $path]} {
    puts "package_kernel.tcl: files.txt names $line, which does not exist"
    exit 1
  }
  lappend sources $path
}
close $fh

create_project -force netagg_kernel ./netagg_kernel -part $part
add_files -norecurse $sources
set_property file_type SystemVerilog [get_files *.sv]
set_property top netagg_aggregator [current_fileset]
update_compile_order -fileset sources_1

ipx::package_project -root_dir ./ip -vendor netagg.org -library kernel -taxonomy /KernelIP \
  -import_files -set_current true
set core [ipx::current_core]
set_property name netagg_aggregator $core
set_property display_name "netagg in-network aggregator" $core
# The ports used (the rest are tied off inside the design).
set_property value $num_ports [ipx::get_user_parameters NUM_PORTS -of_objects $core]

# Interfaces: ap_clk/ap_rst_n, s_axi_control (AXI4-Lite), rx_<i>/tx_<i> (AXI4-Stream). Vivado
# infers them from the Vitis port names; make the clock association explicit.
ipx::infer_bus_interfaces xilinx.com:interface:axis_rtl:1.0 $core
ipx::infer_bus_interfaces xilinx.com:interface:aximm_rtl:1.0 $core
set clk [ipx::get_bus_interfaces ap_clk -of_objects $core]
set busses {s_axi_control}
for {set i 0} {$i < 4} {incr i} { lappend busses rx_$i tx_$i }
set_property value [join $busses :] [ipx::add_bus_parameter ASSOCIATED_BUSIF $clk]
set_property value ap_rst_n [ipx::add_bus_parameter ASSOCIATED_RESET $clk]

# The CSR address space: formats/csr.json addr_bits (12: 4 KiB).
set map [ipx::add_memory_map s_axi_control $core]
set_property slave_memory_map_ref s_axi_control [ipx::get_bus_interfaces s_axi_control -of_objects $core]
set block [ipx::add_address_block reg0 $map]
set_property range 4096 $block

set_property sdx_kernel true $core
set_property sdx_kernel_type rtl $core
set_property ipi_drc {ignore_freq_hz true} $core
ipx::create_xgui_files $core
ipx::update_checksums $core
ipx::check_integrity -kernel $core
ipx::save_core $core

package_xo -force -xo_path $xo -kernel_name netagg_aggregator -ip_directory ./ip \
  -ctrl_protocol user_managed
puts "package_kernel.tcl: wrote $xo"
