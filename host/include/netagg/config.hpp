// SPDX-License-Identifier: Apache-2.0
// How a worker is configured: from a JSON file and/or the environment a launcher sets.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "netagg/job.hpp"
#include "netagg/stats.hpp"
#include "netagg/wire.hpp"

namespace netagg {

struct EngineParams;  // netagg/engine.hpp: what engine_params() gives the library's engines

// How fp32 tensors travel: block floating point int32 (for integer aggregators: the switch),
// fp32 as is and added in fp32 (the FPGA aggregator's adder trees), or fp32 summed exactly as
// 64-bit fixed point and rounded once (dtype fp32_exact: an FPGA aggregator with FEATURES bit 5;
// the same bits whatever the arrival order, docs/exact-fp32.md).
enum class FloatWire { kBlockInt32, kFp32, kFp32Exact };
// Whether the aggregator adds floats (fp32 or fp32-exact: an FPGA aggregator), so bf16 can go.
constexpr bool adds_floats(FloatWire w) { return w != FloatWire::kBlockInt32; }

// What a worker does when its aggregator stops answering (docs/fallback.md): finish the
// all-reduce with the other workers over Gloo, or fail with a timeout error.
enum class Fallback { kGloo, kOff };

// The DPDK transport (transport "dpdk"; docs/configuration.md, "The DPDK transport"). The EAL
// options are given to rte_eal_init once per process; the rest configure one port.
struct DpdkConfig {
  // ---- EAL (one per process; every transport of a process must ask for the same) ----
  std::string lcores = "0";           // EAL -l: the cores the EAL may use
  std::vector<std::string> vdevs;     // EAL --vdev each, e.g. "net_af_packet0,iface=veth1"
  bool no_huge = false;               // --no-huge: plain memory, for tests without hugepages
  bool no_pci = false;                // --no-pci: do not probe PCI devices (vdevs only)
  std::uint32_t memory_mb = 0;        // -m; 0: 256 with no_huge, else the EAL's default
  std::string file_prefix;            // --file-prefix; empty: --no-shconf (no shared files)
  std::vector<std::string> eal_args;  // appended to the EAL's arguments as they are
  // ---- the port ----
  std::uint16_t port = 0;                   // DPDK port id
  std::optional<wire::Mac> mac;             // source MAC; default: the job's mac for the rank, else
                                            // the port's own
  std::optional<wire::Mac> aggregator_mac;  // destination MAC; default: resolved by ARP
  std::optional<std::uint32_t> next_hop;  // ARP for this IPv4 (a router) instead of the aggregator
  Duration arp_timeout = std::chrono::seconds(3);
  std::uint16_t burst = 32;          // packets per rx/tx burst
  std::uint32_t mbufs = 8191;        // mbufs in the port's pool
  bool verify_udp_checksum = false;  // drop frames whose (non-zero) UDP checksum is wrong
  friend bool operator==(const DpdkConfig&, const DpdkConfig&) = default;
};

struct Config {
  int rank = -1;
  JobSpec job;
  Endpoint aggregator;            // defaults to job.aggregator (port 0 = not set)
  std::string transport = "udp";  // "udp" or "dpdk" (when built with DPDK)
  DpdkConfig dpdk;                // used when transport == "dpdk"
  FloatWire float_wire = FloatWire::kBlockInt32;
  Duration retransmit_timeout = std::chrono::milliseconds(20);
  Duration max_retransmit_timeout = std::chrono::milliseconds(500);
  bool adaptive_retransmit = true;  // the timeout from measured round trips (netagg/rto.hpp)
  Duration min_retransmit_timeout = std::chrono::milliseconds(1);  // its floor
  Duration job_timeout = std::chrono::seconds(10);
  bool udp_offload = true;  // UDP GSO/GRO in the udp transport (make_udp_transport)
  // The congestion window (EngineParams::congestion_control; packets sent ECN-capable).
  bool congestion_control = false;
  // Pacing: at most this many Gbit/s of UDP payload from this worker, all trees together
  // (EngineParams::pace_gbps; a Communicator gives each tree's engine its share by the trees'
  // weights). 0: off.
  double pace_gbps = 0;
  double loss = 0.0;  // injected loss per packet and direction, 0..1
  std::uint64_t loss_seed = 1;
  // The run's token on the wire (docs/wire-format.md, "Runs and epochs"): every worker of a run
  // must use the same value, and each run a new one, so that a run never receives another
  // run's sums. A Communicator refuses to start without one. Not read from a file: a file
  // outlives a run.
  std::optional<std::uint32_t> epoch;
  // The host fallback (docs/fallback.md). With kGloo and a rendezvous store, a worker whose
  // aggregator gave no result for fallback_after finishes the all-reduce with the other workers;
  // later all-reduces of the trees it finished stay on the hosts until a probe finds their
  // aggregators answering again. Without a store there is no fallback (the communicator warns).
  Fallback fallback = Fallback::kGloo;
  Duration fallback_after = std::chrono::seconds(1);
  Duration fallback_timeout = std::chrono::seconds(60);  // how long workers wait for each other
  // Where the workers meet for Gloo's rendezvous: "file:DIR", a directory every worker sees
  // (keys of a run are kept apart by its job and epoch). Empty: none.
  std::string store;

  // JSON file (docs/configuration.md). Relative job_file paths resolve against the file's folder.
  static Config from_file(const std::filesystem::path& file);
  // The environment: NETAGG_CONFIG names a file read first; then NETAGG_JOB_FILE (with
  // NETAGG_JOB_ID to pick from a multi-job file), NETAGG_RANK (else OMPI_COMM_WORLD_RANK,
  // PMI_RANK, RANK), NETAGG_WORLD_SIZE (else OMPI_COMM_WORLD_SIZE, PMI_SIZE, WORLD_SIZE; must
  // match the job), NETAGG_AGGREGATOR, NETAGG_TRANSPORT, NETAGG_FLOAT_WIRE, NETAGG_TIMEOUT_MS,
  // NETAGG_RETRANSMIT_TIMEOUT_MS, NETAGG_LOSS, NETAGG_LOSS_SEED, NETAGG_UDP_OFFLOAD,
  // NETAGG_PACE_GBPS, NETAGG_EPOCH
  // (else launcher_epoch()), and NETAGG_DPDK_* for the fields of `dpdk` (docs/configuration.md).
  // Validated before returning.
  static Config from_env();
  // Throws Error(kConfig) naming the first problem (kUnsupported for a transport not built in).
  void validate() const;
  // The engine of tree `tree` (0 for a job without trees).
  EngineParams engine_params(std::size_t tree = 0) const;
  // What this rank sends to in tree `tree`: the job itself (a job without trees), or its
  // aggregator's view of the tree and its rank there (docs/job-format.md, "Trees").
  WorkerView worker_view(std::size_t tree = 0) const;
  // The trees this rank runs the job on: 1 for a job without trees.
  std::size_t trees() const { return job.trees.empty() ? 1 : job.trees.size(); }
  // Where each tree's packets go: aggregator_address() for a job without trees or on one tree,
  // else each tree's aggregator of this rank.
  std::vector<Endpoint> aggregator_addresses() const;
  // `aggregator` if set, else the job's aggregator; throws Error(kConfig) if neither is.
  Endpoint aggregator_address() const;
  // The address this worker sends from: the job's entry for `rank`.
  Endpoint local_address() const;
};

// An epoch as text: decimal or 0x-prefixed hexadecimal, 0..2^32-1; `where` names the source.
std::uint32_t parse_epoch(std::string_view text, std::string_view where);
// Throws Error(kConfig) naming `where` if epoch cannot be a run token: 0, what an unset one
// reads as.
void check_epoch(std::uint32_t epoch, std::string_view where);
// An epoch all ranks of the current launch agree on, from the run identifier their launcher
// sets (TORCHELASTIC_RUN_ID, OMPI_MCA_ess_base_jobid, PMIX_NAMESPACE, SLURM_JOB_ID with
// SLURM_STEP_ID): a hash of it (never 0), or nothing when no launcher says or when its id is
// one that every launch repeats (empty, torchrun's default "none", "0"; launcher_run_id_problem
// says which).
std::optional<std::uint32_t> launcher_epoch();
// Why the launcher's run id gives no epoch, with what to set instead; nothing when it gives one
// or there is no launcher.
std::optional<std::string> launcher_run_id_problem();
// The environment's switches for one run, for a Config not made by from_env (which applies
// them): NETAGG_CONGESTION_CONTROL, NETAGG_UDP_OFFLOAD, NETAGG_PACE_GBPS, and the epoch from
// NETAGG_EPOCH, else, if none is set yet, launcher_epoch(). Throws Error(kConfig) naming a bad
// variable.
void apply_run_environment(Config& cfg);
Fallback parse_fallback(std::string_view text);  // "gloo" | "off"
std::string_view to_string(Fallback f);

// A random epoch, never 0, for a launcher that starts every worker itself (netagg-local, tests)
// or a rendezvous that shares rank 0's draw.
std::uint32_t random_epoch();

FloatWire parse_float_wire(std::string_view text);  // "int32-bfp" | "fp32" | "fp32-exact"
std::string_view to_string(FloatWire w);

// Whether this libnetagg was built with the DPDK transport.
bool dpdk_built();
// The DPDK settings alone (EAL and port) from their NETAGG_DPDK_* variables, for a process that
// is no worker (netagg-switchd --dpdk). Throws Error(kConfig) for a malformed value.
DpdkConfig dpdk_config_from_env();

// docs/configuration.md's tables of the settings, as Markdown, generated from the table that
// the config file and the environment are read by (tests/host/config_doc_test checks the page).
enum class ConfigTable { kSettings, kDpdk };
std::string config_settings_markdown(ConfigTable table);

}  // namespace netagg
