// SPDX-License-Identifier: Apache-2.0
// The synthesized top: a thin wrapper over one static Aggregator, which is the hardware's
// state (job table, slot memory, counters, registers). This is the only static of hls/; the C
// simulation and the tests own their Aggregator instances.
//
// Register offsets: NETAGG_HLS_CSR_INTERFACE (netagg_hls/csr14.hpp, generated from
// formats/csr.json) gives every read-write register its offset in the map, except CONTROL
// (0x008): Vitis reserves 0x00-0x0F of an s_axilite bundle for its own control registers.
// CONTROL and the read-only registers (VERSION, FEATURES, STATUS, COUNTER_LO/HI, JOB_ENTRY_*;
// Vitis adds an _ap_vld register after each output) are placed by Vitis: read their offsets from
// the generated xnetagg_aggregator_hw.h. None of this has been run through Vitis HLS here (no Vitis
// on this machine).
#include "netagg_aggregator.hpp"

#include "netagg_hls/aggregator.hpp"
#include "netagg_hls/csr14.hpp"

extern "C" void netagg_aggregator(hls::stream<netagg::fpga::AxisBeat> rx[netagg::fpga::NUM_PORTS],
                                  hls::stream<netagg::fpga::AxisBeat> tx[netagg::fpga::NUM_PORTS],
                                  NETAGG_HLS_CSR_PORTS) {
#pragma HLS INTERFACE axis register both port = rx
#pragma HLS INTERFACE axis register both port = tx
  NETAGG_HLS_CSR_INTERFACE
#pragma HLS INTERFACE s_axilite port = return bundle = control
#pragma HLS INTERFACE ap_ctrl_none port = return
  static netagg::fpga::Aggregator<netagg::fpga::DefaultParams> aggregator;

  const netagg::fpga::CsrInputs in = {NETAGG_HLS_CSR_INPUT_FIELDS};
  aggregator.apply_csr_inputs(in);
  aggregator.step(rx, tx);
  netagg::fpga::CsrOutputs out;
  aggregator.csr_outputs(out);
  NETAGG_HLS_CSR_STORE_OUTPUTS(out)
}
