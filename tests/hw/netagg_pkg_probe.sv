// SPDX-License-Identifier: Apache-2.0
// Test-only wrapper: exposes netagg_pkg's beat functions on ports so pkg_decode_test.cpp can run
// them on the golden frames.

`default_nettype none

module netagg_pkg_probe (
  input  logic [netagg_pkg::BEAT_BITS-1:0]     beat_i,
  output logic [7:0]                           version_o,
  output logic [7:0]                           msg_type_o,
  output logic [7:0]                           dtype_o,
  output logic [7:0]                           flags_o,
  output logic [15:0]                          job_id_o,
  output logic [15:0]                          rank_o,
  output logic [15:0]                          slot_o,
  output logic [15:0]                          count_o,
  output logic [15:0]                          exponent_o,
  output logic [31:0]                          seq_o,
  output logic [31:0]                          epoch_o,
  output logic                                 is_contribution_o,
  output logic                                 is_result_o,
  output logic                                 is_int32_o,
  output logic                                 is_fp32_o,
  output logic                                 is_bf16_o,
  output logic                                 set_o,
  output logic [netagg_pkg::HEADER_SIZE*8-1:0] header_bytes_o,
  output logic [47:0]                          eth_dst_o,
  output logic [47:0]                          eth_src_o,
  output logic [15:0]                          ethertype_o,
  output logic [31:0]                          ip_src_o,
  output logic [31:0]                          ip_dst_o,
  output logic [7:0]                           tos_o,
  output logic [15:0]                          udp_src_port_o,
  output logic [15:0]                          udp_dst_port_o,
  output logic [netagg_pkg::BEAT_BITS-1:0]     swapped32_o,
  output logic [netagg_pkg::BEAT_BITS-1:0]     swapped16_o
);

  netagg_pkg::header_t header;

  assign header = netagg_pkg::header_from_beat(beat_i);

  assign version_o  = header.version;
  assign msg_type_o = header.msg_type;
  assign dtype_o    = header.dtype;
  assign flags_o    = header.flags;
  assign job_id_o   = header.job_id;
  assign rank_o     = header.rank;
  assign slot_o     = header.slot;
  assign count_o    = header.count;
  assign exponent_o = header.exponent;
  assign seq_o      = header.seq;
  assign epoch_o = header.epoch;

  assign is_contribution_o = header.msg_type == netagg_pkg::MSG_CONTRIBUTION;
  assign is_result_o       = header.msg_type == netagg_pkg::MSG_RESULT;
  assign is_int32_o        = header.dtype == netagg_pkg::DTYPE_INT32;
  assign is_fp32_o         = header.dtype == netagg_pkg::DTYPE_FP32;
  assign is_bf16_o         = header.dtype == netagg_pkg::DTYPE_BF16;
  assign set_o             = |(header.flags & netagg_pkg::FLAG_SET);

  assign header_bytes_o = netagg_pkg::header_bytes(header);

  assign eth_dst_o      = {netagg_pkg::beat_be16(beat_i, netagg_pkg::FRM_ETH_DST_ADDR),
                           netagg_pkg::beat_be32(beat_i, netagg_pkg::FRM_ETH_DST_ADDR + 2)};
  assign eth_src_o      = {netagg_pkg::beat_be16(beat_i, netagg_pkg::FRM_ETH_SRC_ADDR),
                           netagg_pkg::beat_be32(beat_i, netagg_pkg::FRM_ETH_SRC_ADDR + 2)};
  assign ethertype_o    = netagg_pkg::beat_be16(beat_i, netagg_pkg::FRM_ETH_ETHER_TYPE);
  assign ip_src_o       = netagg_pkg::beat_be32(beat_i, netagg_pkg::FRM_IPV4_SRC_ADDR);
  assign ip_dst_o       = netagg_pkg::beat_be32(beat_i, netagg_pkg::FRM_IPV4_DST_ADDR);
  assign tos_o          = netagg_pkg::beat_u8(beat_i, netagg_pkg::FRM_IPV4_ECN);
  assign udp_src_port_o = netagg_pkg::beat_be16(beat_i, netagg_pkg::FRM_UDP_SRC_PORT);
  assign udp_dst_port_o = netagg_pkg::beat_be16(beat_i, netagg_pkg::FRM_UDP_DST_PORT);

  assign swapped32_o = netagg_pkg::swap_lanes32(beat_i);
  assign swapped16_o = netagg_pkg::swap_lanes16(beat_i);

endmodule

`default_nettype wire
