# SPDX-License-Identifier: Apache-2.0
"""The views of netagg's formats, written by scripts/gen_formats.py.

  common      names, FormatError, helpers the renderers share
  load        formats/wire.json and formats/csr.json read and checked
  cpp_host    host/include/netagg/wire_format.hpp
  switch_cpp  p4/common/switch_format.hpp
  hls         the wire layout region of hls/include/netagg_hls/frame.hpp
  sv          the wire region of hw/rtl/netagg_pkg.sv
  p4          p4/common/headers.p4, p4/common/constants.p4
  lua         formats/wireshark/netagg.lua
  docs        the generated tables of docs/wire-format.md
  csr         the CSR map's C++, HLS C++14 and SystemVerilog views
  views       every output: its path, whole file or region, and its renderer
"""
