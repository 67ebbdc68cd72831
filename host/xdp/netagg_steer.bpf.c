/* SPDX-License-Identifier: Apache-2.0 */
/* The XDP program of a DPDK net_af_xdp port (vdev argument xdp_prog=PATH to the built object):
 * it steers to the port's XDP socket only the frames netagg's transport is for, and leaves every
 * other frame to the kernel:
 *   - IPv4/UDP (no options, not a fragment) to the configured address and port,
 *   - ARP whose target is the configured address (requests for it, replies to it: the transport
 *     resolves its peer's MAC and answers for its address itself, which the kernel does not own).
 * The transport writes the address into the map after the port starts (netagg_steer.h); until
 * then every frame passes to the kernel. Copy mode or zero copy alike. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "netagg_steer.h"

struct {
  __uint(type, BPF_MAP_TYPE_XSKMAP); /* the name and type net_af_xdp looks for */
  __uint(max_entries, 64);
  __type(key, __u32);
  __type(value, __u32);
} xsks_map SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct netagg_steer_address);
} netagg_addr SEC(".maps");

#define ARP_TARGET_IP 24 /* offset in an ARP packet for IPv4 over Ethernet */
#define ARP_LENGTH 28

SEC("xdp")
int netagg_steer(struct xdp_md *ctx) {
  void *data = (void *)(long)ctx->data;
  void *end = (void *)(long)ctx->data_end;
  __u32 key = 0;
  const struct netagg_steer_address *a = bpf_map_lookup_elem(&netagg_addr, &key);
  if (!a || a->ip == 0) return XDP_PASS;
  struct ethhdr *eth = data;
  if ((void *)(eth + 1) > end) return XDP_PASS;
  if (eth->h_proto == bpf_htons(ETH_P_ARP)) {
    const __u8 *arp = (const __u8 *)(eth + 1);
    if ((const void *)(arp + ARP_LENGTH) > end) return XDP_PASS;
    __u32 target;
    __builtin_memcpy(&target, arp + ARP_TARGET_IP, sizeof target);
    if (target != a->ip) return XDP_PASS;
    return bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS);
  }
  if (eth->h_proto != bpf_htons(ETH_P_IP)) return XDP_PASS;
  struct iphdr *ip = (struct iphdr *)(eth + 1);
  if ((void *)(ip + 1) > end) return XDP_PASS;
  if (ip->ihl != 5 || ip->protocol != IPPROTO_UDP || ip->daddr != a->ip) return XDP_PASS;
  if (ip->frag_off & bpf_htons(0x3FFF)) return XDP_PASS; /* a fragment: the kernel reassembles */
  struct udphdr *udp = (struct udphdr *)(ip + 1);
  if ((void *)(udp + 1) > end || udp->dest != a->port) return XDP_PASS;
  return bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS);
}

/* bpf_redirect_map and bpf_map_lookup_elem are not GPL-only; the kernel wants a license string. */
char _license[] SEC("license") = "Dual BSD/GPL";
