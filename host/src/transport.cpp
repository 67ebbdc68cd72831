// SPDX-License-Identifier: Apache-2.0
// The transport a configuration names (netagg/transport.hpp, make_transport): UDP to the job's
// aggregators, or DPDK when libnetagg was built with it.
#include <vector>

#include <fmt/format.h>

#include "netagg/config.hpp"
#include "netagg/dpdk.hpp"
#include "netagg/error.hpp"
#include "netagg/transport.hpp"
#include "netagg/wire.hpp"

namespace netagg {

std::unique_ptr<Transport> make_transport(const Config& cfg) {
  if (cfg.transport == "udp") {
    const std::vector<Endpoint> aggregators = cfg.aggregator_addresses();
    return make_udp_transport(cfg.local_address(), aggregators, cfg.udp_offload,
                              cfg.congestion_control);
  }
  if (cfg.transport == "dpdk" && cfg.trees() > 1)
    throw Error(Errc::kUnsupported,
                fmt::format("transport: dpdk talks to one aggregator, and job {} runs on {} trees "
                            "(use udp)",
                            cfg.job.job_id, cfg.trees()));
  if (cfg.transport == "dpdk") {
#ifdef NETAGG_HAVE_DPDK
    const auto& worker = cfg.job.workers.at(static_cast<std::size_t>(cfg.rank));
    // The largest packet: a full chunk of 4-byte elements (int32, fp32 or block floating point).
    const std::size_t max_packet = wire::kHeaderSize + cfg.job.elements_per_packet * 4u;
    return dpdk::make_transport(cfg.dpdk, cfg.local_address(), worker.mac, cfg.aggregator_address(),
                                max_packet);
#else
    throw Error(Errc::kUnsupported,
                "transport: 'dpdk' is not built into this libnetagg (available: udp)");
#endif
  }
  throw Error(Errc::kConfig, fmt::format("transport: '{}' is not one of udp, dpdk", cfg.transport));
}

#ifndef NETAGG_HAVE_DPDK
std::unique_ptr<dpdk::FramePort> dpdk::open_frame_port(const DpdkConfig&) {
  throw Error(Errc::kUnsupported,
              "dpdk: not built into this libnetagg (libdpdk-dev, configure with -DNETAGG_DPDK=ON)");
}
#endif

}  // namespace netagg
