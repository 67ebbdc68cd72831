// SPDX-License-Identifier: Apache-2.0
// The DPDK transport: netagg packets in Ethernet/IPv4/UDP frames built and parsed in mbufs, sent
// and received in bursts on one DPDK port, with ARP for the aggregator's MAC. Only in a
// libnetagg built with DPDK (netagg::dpdk_built()); the communicator picks it for
// Config::transport == "dpdk". docs/configuration.md ("The DPDK transport") lists the options.
//
// The EAL can be initialised once per process. The first DPDK transport (or init_eal) starts it
// with its DpdkConfig's EAL options; every later one must ask for the same options, else it gets
// Error(kConfig) saying what differs. Each transport holds its port alone while it lives.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "netagg/config.hpp"
#include "netagg/job.hpp"
#include "netagg/transport.hpp"
#include "netagg/wire.hpp"

namespace netagg::dpdk {

// The arguments rte_eal_init gets for cfg (argv[0] included).
std::vector<std::string> eal_arguments(const DpdkConfig& cfg);

// Starts the EAL of this process with cfg's EAL options, or checks that it runs with them.
// Throws Error(kConfig) with what to do when the EAL cannot start (no hugepages, bad vdev, ...)
// or when it was started with other options.
void init_eal(const DpdkConfig& cfg);

// A transport on port cfg.port for the worker at `local` (its IPv4 address and UDP port, as the
// job registers it) talking to `aggregator`. `job_mac` is the job's MAC for this worker, used as
// the source MAC unless cfg.mac is set. Resolves the aggregator's MAC (or cfg.next_hop's) by ARP
// unless cfg.aggregator_mac is set; throws Error(kTransport) if nobody answers in
// cfg.arp_timeout. `max_packet` is the largest netagg packet it will send (header + payload),
// checked against the port's MTU (Error(kConfig) if it does not fit).
std::unique_ptr<Transport> make_transport(const DpdkConfig& cfg, const Endpoint& local,
                                          const std::optional<wire::Mac>& job_mac,
                                          const Endpoint& aggregator, std::size_t max_packet);

// One DPDK port as a pipe of whole Ethernet frames, for an aggregator daemon that builds and
// parses its frames itself (netagg-switchd --dpdk). The EAL, the pool and the port are set up as
// for a transport (same registry: one claim per port and process).
class FramePort {
 public:
  virtual ~FramePort() = default;
  virtual wire::Mac mac() const = 0;
  virtual std::uint16_t mtu() const = 0;
  // One receive burst: the frames' bytes, valid until the next receive() (the port keeps their
  // buffers until then). Empty when nothing arrived; never blocks.
  virtual std::span<const std::span<const std::byte>> receive() = 0;
  // Copies the frames into the port's buffers and sends them (frames under Ethernet's minimum
  // padded); returns how many the port took: the rest are dropped after the transmit queue stayed
  // full for 200 ms, or when the pool is empty.
  virtual std::size_t send(std::span<const std::span<const std::byte>> frames) = 0;
  // On an AF_XDP port whose interface runs netagg's XDP steering program (docs/configuration.md,
  // "AF_XDP"): points it at `address`, so that only its frames and ARP for it reach the port.
  // False when there is no such program (every frame reaches the port).
  virtual bool steer(const Endpoint& address) = 0;
  virtual std::string name() const = 0;
};

// Claims and starts cfg.port (starting the EAL with cfg's options if this process has not).
// Throws Error(kConfig) or Error(kTransport) as make_transport does.
std::unique_ptr<FramePort> open_frame_port(const DpdkConfig& cfg);

}  // namespace netagg::dpdk
