/* SPDX-License-Identifier: Apache-2.0 */
/* The XDP program netagg_steer.bpf.c and the DPDK transport that configures it share this: the
 * map the transport fills with the address its XDP socket serves, and the names both look up. C,
 * so that the BPF program (clang -target bpf) and libnetagg (C++) include the one definition. */
#ifndef NETAGG_STEER_H
#define NETAGG_STEER_H

#include <linux/types.h>

/* The name of the program's one-entry array of struct netagg_steer_address (the map's C name
 * in netagg_steer.bpf.c, which must stay the same), by which the transport finds it. */
#define NETAGG_STEER_ADDRESS_MAP "netagg_addr"

/* The IPv4 address and UDP port whose frames go to the XDP socket, both in network byte order;
 * ip 0: not configured yet, every frame goes to the kernel. */
struct netagg_steer_address {
  __u32 ip;
  __u16 port;
  __u16 zero;
};

#endif
