// SPDX-License-Identifier: Apache-2.0
// The synthesized top: a thin wrapper over one static Aggregator, which is the hardware's
// state (job table, slot memory, counters, registers). This is the only static of hls/; the C
// simulation and the tests own their Aggregator instances.
//
// Register offsets: NETAGG_HLS_CSR_INTERFACE (netagg_hls/csr14.hpp, generated from
// formats/csr.json) gives every read-write register its offset in the map, except CONTROL
// (0x008): Vitis reserves 0x00-0x0F of an s_axilite bundle for its own control registers.
// CONTROL and the read-only registers (VERSION, FEATURES, STATUS, COUNTER_LO/HI; Vitis adds an
// _ap_vld register after each output) are placed by Vitis: read their offsets from the generated
// xnetagg_aggregator_hw.h. None of this has been run through Vitis HLS here (no Vitis on this
// machine).
#include "netagg_aggregator.hpp"

#include "netagg_hls/aggregator.hpp"
#include "netagg_hls/csr14.hpp"

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
                                  uint32_t* status, uint32_t* counter_lo, uint32_t* counter_hi) {
#pragma HLS INTERFACE axis register both port = rx
#pragma HLS INTERFACE axis register both port = tx
  NETAGG_HLS_CSR_INTERFACE
#pragma HLS INTERFACE s_axilite port = return bundle = control
#pragma HLS INTERFACE ap_ctrl_none port = return
  static netagg::fpga::Aggregator<netagg::fpga::DefaultParams> aggregator;

  const netagg::fpga::CsrInputs in = {control,
                                      agg_mac_lo,
                                      agg_mac_hi,
                                      agg_ip,
                                      agg_udp_port,
                                      job_index,
                                      job_id,
                                      job_workers,
                                      job_slots,
                                      job_elements,
                                      worker_index,
                                      worker_ip,
                                      worker_udp_port,
                                      worker_mac_lo,
                                      worker_mac_hi,
                                      commit,
                                      counter_index,
                                      job_parent_id,
                                      job_parent_rank,
                                      job_parent_slots,
                                      job_parent_ip,
                                      job_parent_udp_port,
                                      job_parent_mac_lo,
                                      job_parent_mac_hi};
  aggregator.apply_csr_inputs(in);
  aggregator.step(rx, tx);
  netagg::fpga::CsrOutputs out;
  aggregator.csr_outputs(out);
  *version = out.version;
  *features = out.features;
  *status = out.status;
  *counter_lo = out.counter_lo;
  *counter_hi = out.counter_hi;
}
