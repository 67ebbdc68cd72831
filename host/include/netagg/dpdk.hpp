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

}  // namespace netagg::dpdk
