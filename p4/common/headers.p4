/* netagg: header declarations shared by the TNA and the v1model program.
 *
 * The netagg header mirrors host/include/netagg/wire.hpp field for field, in the same order and
 * with the same widths (22 bytes, big-endian; the payload starts at frame byte 64). The only
 * rename: the C++ field `type` is `msg_type` here, because `type` is a P4 keyword.
 * tests/p4/p4_mirror_test.cpp parses this file and checks the netagg, udp, ipv4 and ethernet
 * headers against host/include/netagg/wire_fields.hpp, itself checked against wire::encode_frame.
 */
#ifndef NETAGG_HEADERS_P4
#define NETAGG_HEADERS_P4

#include "constants.p4"

typedef bit<48> mac_addr_t;
typedef bit<32> ipv4_addr_t;

header ethernet_h {
    mac_addr_t dst_addr;
    mac_addr_t src_addr;
    bit<16>    ether_type;
}

header arp_h {                       /* Ethernet/IPv4 ARP only (hw_type 1, proto 0x0800) */
    bit<16>     hw_type;
    bit<16>     proto_type;
    bit<8>      hw_addr_len;
    bit<8>      proto_addr_len;
    bit<16>     opcode;
    mac_addr_t  sender_hw_addr;
    ipv4_addr_t sender_proto_addr;
    mac_addr_t  target_hw_addr;
    ipv4_addr_t target_proto_addr;
}

header ipv4_h {                      /* no options: netagg frames have IHL 5 */
    bit<4>      version;
    bit<4>      ihl;
    bit<6>      dscp;
    bit<2>      ecn;                 /* FrameAddress::ecn: low two bits of the TOS byte */
    bit<16>     total_len;
    bit<16>     identification;
    bit<3>      flags;
    bit<13>     frag_offset;
    bit<8>      ttl;
    bit<8>      protocol;
    bit<16>     hdr_checksum;
    ipv4_addr_t src_addr;
    ipv4_addr_t dst_addr;
}

header icmp_h {                      /* echo request / reply: identifier and sequence in `rest` */
    bit<8>  icmp_type;
    bit<8>  code;
    bit<16> checksum;
    bit<32> rest;
}

header udp_h {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

header netagg_h {
    bit<8>  version;                 /* wire::kVersion */
    bit<8>  msg_type;                /* wire `type`: 1 contribution, 2 result */
    bit<8>  dtype;                   /* 0 int32, 1 fp32, 2 bf16 */
    bit<8>  flags;                   /* bit 0: set; bits 1..7 zero */
    bit<16> job_id;
    bit<16> rank;
    bit<16> slot;
    bit<16> count;                   /* elements in the payload */
    bit<16> exponent;                /* int16 block exponent (two's complement), max-reduced */
    bit<32> seq;
    bit<32> reserved;                /* zero */
}

/* One int32 payload element (big-endian, as the wire carries it). */
header netagg_lane_h {
    bit<32> value;
}

#endif /* NETAGG_HEADERS_P4 */
