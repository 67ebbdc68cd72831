// SPDX-License-Identifier: Apache-2.0
// The synthesized top of the FPGA aggregator (docs/fpga-aggregator.md, "Top-level ports").
// Kernel code: C++14.
#ifndef NETAGG_HLS_NETAGG_AGGREGATOR_HPP
#define NETAGG_HLS_NETAGG_AGGREGATOR_HPP

#include <hls_stream.h>
#include <stdint.h>

#include "netagg_hls/frame.hpp"
#include "netagg_hls/params.hpp"

// One iteration of the free-running kernel (ap_ctrl_none: Vitis restarts it for ever): CSRs
// polled, the head frame of every ingress port that has one processed as one group, results
// written. The scalar arguments are the AXI4-Lite registers of formats/csr.json: inputs are
// the read-write registers, pointers the read-only ones.
extern "C" void netagg_aggregator(hls::stream<netagg::fpga::AxisBeat> rx[netagg::fpga::NUM_PORTS],
                                  hls::stream<netagg::fpga::AxisBeat> tx[netagg::fpga::NUM_PORTS],
                                  uint32_t control, uint32_t agg_mac_lo, uint32_t agg_mac_hi,
                                  uint32_t agg_ip, uint32_t agg_udp_port, uint32_t job_index,
                                  uint32_t job_id, uint32_t job_workers, uint32_t job_slots,
                                  uint32_t job_elements, uint32_t worker_index, uint32_t worker_ip,
                                  uint32_t worker_udp_port, uint32_t worker_mac_lo,
                                  uint32_t worker_mac_hi, uint32_t commit, uint32_t counter_index,
                                  uint32_t job_parent_id, uint32_t job_parent_rank,
                                  uint32_t job_parent_slots, uint32_t job_parent_ip,
                                  uint32_t job_parent_udp_port, uint32_t job_parent_mac_lo,
                                  uint32_t job_parent_mac_hi, uint32_t* version, uint32_t* features,
                                  uint32_t* status, uint32_t* counter_lo, uint32_t* counter_hi);

#endif  // NETAGG_HLS_NETAGG_AGGREGATOR_HPP
