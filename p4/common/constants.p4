/* netagg: constants shared by p4/tofino/netagg.p4 (TNA) and p4/bmv2/netagg.p4 (v1model).
 *
 * Every value mirrors a C++ constant; tests/p4/p4_mirror_test.cpp checks each one against
 * host/include/netagg/wire.hpp and sim/switch/switch_model.hpp (namespaces tofino, bmv2,
 * DropReason). Plain #defines: both compilers run the C preprocessor, and the values are used
 * where P4 needs compile-time numbers (register sizes, header stack sizes, parser keysets).
 */
#ifndef NETAGG_CONSTANTS_P4
#define NETAGG_CONSTANTS_P4

/* ---- wire format (wire.hpp) -------------------------------------------------------------- */
#define NETAGG_UDP_PORT 20033          /* wire::kUdpPort: contributions go to this UDP port */
#define NETAGG_WIRE_VERSION 1          /* wire::kVersion */
#define NETAGG_HEADER_SIZE 22          /* wire::kHeaderSize (bytes) */
#define NETAGG_MAX_COUNT 1024          /* wire::kMaxCount: elements per packet, any target */
#define NETAGG_MSG_CONTRIBUTION 1      /* wire::MsgType::kContribution */
#define NETAGG_MSG_RESULT 2            /* wire::MsgType::kResult */
#define NETAGG_DTYPE_INT32 0           /* wire::DataType::kInt32 (the switch adds these only) */
#define NETAGG_DTYPE_FP32 1            /* wire::DataType::kFp32 */
#define NETAGG_DTYPE_BF16 2            /* wire::DataType::kBf16 */
#define NETAGG_FLAG_SET 0x01           /* wire::kFlagSet: bit 0 of flags = the set */
#define NETAGG_FLAGS_RESERVED_MASK 0xFE /* wire::kFlagsReservedMask */

/* ---- framing ----------------------------------------------------------------------------- */
#define ETHERTYPE_IPV4 0x0800
#define ETHERTYPE_ARP 0x0806
#define IP_PROTOCOL_ICMP 1
#define IP_PROTOCOL_UDP 17
#define ARP_OPCODE_REQUEST 1
#define ARP_OPCODE_REPLY 2
#define ICMP_ECHO_REQUEST 8
#define ICMP_ECHO_REPLY 0
#define NETAGG_IP_TTL 64               /* what wire::encode_frame writes */
#define NETAGG_IP_FLAGS_DF 2           /* the 3-bit flags field with DF set */

/* ---- switch limits (switch_model.hpp, namespace tofino / bmv2) --------------------------- */
#define NETAGG_VALUE_BITS 32           /* tofino::kValueBits: one int32 lane per register */
#define NETAGG_BITMAP_BITS 32          /* tofino::kBitmapBits: one bit per worker rank */
#define NETAGG_MAX_WORKERS 32          /* sim::kMaxWorkersPerJob */
#define NETAGG_POOL_SLOTS 1024         /* tofino::kPoolSlots: slots, each with two sets */
#define NETAGG_LANES_PER_PASS 32       /* tofino::kLanesPerPass: value registers value_0..31 */
#define NETAGG_TOFINO_MAX_PASSES 2     /* tofino::kMaxPasses: 64 lanes per packet on Tofino */
#define NETAGG_BMV2_MAX_PASSES 8       /* bmv2::kMaxPasses: 256 lanes per packet on BMv2 */

/* ---- drop reasons: the index of the `drops` counter = sim::DropReason ------------------- */
#define NETAGG_DROP_MALFORMED 0
#define NETAGG_DROP_NOT_CONTRIBUTION 1
#define NETAGG_DROP_UNKNOWN_JOB 2
#define NETAGG_DROP_RANK_OUT_OF_RANGE 3
#define NETAGG_DROP_FOREIGN_SOURCE 4
#define NETAGG_DROP_SLOT_OUT_OF_RANGE 5
#define NETAGG_DROP_UNSUPPORTED_DTYPE 6
#define NETAGG_DROP_COUNT_TOO_LARGE_FOR_JOB 7
#define NETAGG_DROP_COUNT_MISMATCH 8
#define NETAGG_DROP_DUPLICATE 9
#define NETAGG_DROP_STALE 10
#define NETAGG_DROP_AHEAD 11
#define NETAGG_DROP_REASONS 12         /* sim::kDropReasonCount: size of the drops counter */

/* ---- has_round register values (docs/switch-pipeline.md) -------------------------------- */
#define NETAGG_ROUND_NONE 0            /* the set holds no round (after the job is installed) */
#define NETAGG_ROUND_OPEN 1            /* holds a round; no round of the set completed yet */
#define NETAGG_ROUND_SEEN 2            /* holds a round; completed_seq is the last completed one */

#endif /* NETAGG_CONSTANTS_P4 */
