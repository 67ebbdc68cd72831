// SPDX-License-Identifier: Apache-2.0
// Stand-in for Xilinx's <ap_axi_sdata.h>, used only when the Vitis HLS headers are absent.
//
// ap_axiu<D, U, TI, TD>: one AXI4-Stream beat with TDATA, TKEEP, TSTRB, TUSER, TLAST, TID and
// TDEST. Zero-width side channels (U, TI, TD = 0, as netagg uses) become one unused bit here;
// Vitis leaves them out of the generated ports either way.
#ifndef NETAGG_HLS_SHIM_AP_AXI_SDATA_H
#define NETAGG_HLS_SHIM_AP_AXI_SDATA_H

#include "ap_int.h"

template <int D, int U, int TI, int TD>
struct ap_axiu {
  ap_uint<D> data;
  ap_uint<(D + 7) / 8> keep;
  ap_uint<(D + 7) / 8> strb;
  ap_uint<(U > 0 ? U : 1)> user;
  ap_uint<1> last;
  ap_uint<(TI > 0 ? TI : 1)> id;
  ap_uint<(TD > 0 ? TD : 1)> dest;
};

#endif  // NETAGG_HLS_SHIM_AP_AXI_SDATA_H
