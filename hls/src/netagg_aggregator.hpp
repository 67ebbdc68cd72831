// SPDX-License-Identifier: Apache-2.0
// The synthesized top of the FPGA aggregator (docs/fpga-aggregator.md, "Top-level ports").
// Kernel code: C++14.
#ifndef NETAGG_HLS_NETAGG_AGGREGATOR_HPP
#define NETAGG_HLS_NETAGG_AGGREGATOR_HPP

#include <hls_stream.h>
#include <stdint.h>

#include "netagg_hls/csr14.hpp"
#include "netagg_hls/frame.hpp"
#include "netagg_hls/params.hpp"

// One iteration of the free-running kernel (ap_ctrl_none: Vitis restarts it for ever): CSRs
// polled, the head frame of every ingress port that has one processed as one group, results
// written. The scalar arguments are the AXI4-Lite registers of formats/csr.json
// (NETAGG_HLS_CSR_PORTS, generated): inputs are the read-write registers, pointers the read-only
// ones.
extern "C" void netagg_aggregator(hls::stream<netagg::fpga::AxisBeat> rx[netagg::fpga::NUM_PORTS],
                                  hls::stream<netagg::fpga::AxisBeat> tx[netagg::fpga::NUM_PORTS],
                                  NETAGG_HLS_CSR_PORTS);

#endif  // NETAGG_HLS_NETAGG_AGGREGATOR_HPP
