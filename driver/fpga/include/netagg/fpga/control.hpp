// SPDX-License-Identifier: Apache-2.0
// Control plane of the FPGA aggregator: job table, aggregator address and counters through its
// CSRs (formats/csr.json, generated view netagg/fpga_csr.hpp). Device-independent: it sees
// the device only as a CsrBus (the Verilator harness, the HLS C model, later a card over XRT).
//
// The job table is written indirectly: select an entry (JOB_INDEX) and a rank (WORKER_INDEX),
// write the fields, then COMMIT a command with a new sequence number; the design acts once per
// sequence change. program_job() first removes the entry, then stores every worker, then the
// job with its valid bit (and its parent, JOB_PARENT_*, for a child in a tree), so the device
// never holds a valid job with missing workers.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "netagg/fpga/csr_bus.hpp"
#include "netagg/fpga_csr.hpp"
#include "netagg/job.hpp"
#include "netagg/wire.hpp"

namespace netagg::fpga {

inline constexpr unsigned kLanes = 16;  // 32-bit lanes per 512-bit beat (fixed by the design)

// What the device reports in VERSION and FEATURES.
struct DeviceInfo {
  unsigned design_version = 0;
  unsigned wire_version = 0;
  unsigned num_ports = 0;
  unsigned max_jobs = 0;
  unsigned slots = 0;
  unsigned max_beats = 0;
  unsigned max_workers = 32;  // the worker bitmap's width (not in FEATURES: fixed by the design)
  // FEATURES bit 4: JOB_ENTRY_* read the job table back (a design without it reads them as 0).
  bool job_table_readback = false;
  // Largest count of a packet a slot holds, any data type (bf16 accumulates in fp32).
  unsigned max_elements() const { return kLanes * max_beats; }
};

// Reads VERSION and FEATURES. Throws Error(kUnsupported) if the device speaks another wire
// format version than this build, Error(kTransport) if it reports nonsense (no ports, no slots).
DeviceInfo read_device_info(CsrBus& bus);

struct AggregatorAddress {
  wire::Mac mac{0x02, 0x6e, 0x61, 0x67, 0x00, 0x01};  // locally administered ("nag")
  std::uint32_t ip = 0x7F000001;                      // host order
  std::uint16_t udp_port = wire::kUdpPort;
};

// AGG_MAC, AGG_IP and AGG_UDP_PORT: the source of result frames; AGG_UDP_PORT is also the UDP
// destination port ingress frames must carry.
void set_aggregator_address(CsrBus& bus, const AggregatorAddress& address);

// The port a worker's frames arrive on and its results leave on: the job's switch_port if given,
// else rank mod num_ports.
unsigned worker_port(const WorkerSpec& worker, unsigned num_ports);
// The job's MAC for the worker, or one derived from its address (locally administered, unique
// per ip:port with overwhelming probability; the aggregator checks IP and port, not the MAC).
wire::Mac worker_mac(const WorkerSpec& worker);
// Trees: the port a job's frames to its parent leave on (and the parent's results arrive on):
// the parent's switch_port if given, else 0; and the parent's MAC, or one derived from its
// address as for a worker.
unsigned parent_port(const ParentSpec& parent);
wire::Mac parent_mac(const ParentSpec& parent);

// Throws Error(kConfig) naming the first reason the job cannot go into entry job_index: index
// beyond MAX_JOBS, more workers than the bitmap, slots outside the pool, elements per packet
// beyond what a slot holds, a switch_port beyond NUM_PORTS; for a job with a parent (a child
// in a tree): the parent's switch_port beyond NUM_PORTS, the parent's slots beyond 16 bits.
void check_job(const DeviceInfo& info, const JobSpec& job, unsigned job_index);
// The same for a whole job table (entry i = jobs[i]): also distinct ids, disjoint slot ranges.
void check_jobs(const DeviceInfo& info, std::span<const JobSpec> jobs);

// Installs the job in entry job_index (replacing what was there; the entry's slots are cleared)
// and sets the aggregator address. Checks the job first (check_job). Waits until the device is
// no longer busy clearing slots; throws Error(kTransport) if it stays busy.
void program_job(CsrBus& bus, const JobSpec& job, unsigned job_index,
                 const AggregatorAddress& aggregator);
// The job-table writes of program_job alone: no checks, no address registers, worker ports as
// worker_port(worker, num_ports). The device checks what it is given once more (a job it cannot
// hold is stored as not valid, frames beyond a slot's capacity are dropped), and tests program
// such jobs on purpose to reach those checks. A job with a parent on a device whose
// JOB_PARENT_ID does not read back (a design before aggregation trees) throws
// Error(kUnsupported) before the job is stored.
void store_job(CsrBus& bus, const JobSpec& job, unsigned job_index, unsigned num_ports);
// Removes entry job_index and clears its slots.
void remove_job(CsrBus& bus, unsigned job_index);

// One job table entry as the device holds it: JOB_INDEX selects it, JOB_ENTRY_* read it.
struct JobTableEntry {
  unsigned entry = 0;
  bool valid = false;  // the entry holds a job; every field below is 0 when it does not
  std::uint16_t job_id = 0;
  unsigned workers = 0;
  std::uint16_t slot_base = 0;
  std::uint16_t slot_count = 0;
  unsigned elements_per_packet = 0;
  std::optional<std::uint16_t> parent_job_id;  // a child in a tree: the job's id at its parent
};
// Reads entry `entry` back (it stays selected in JOB_INDEX). A design without the readback
// (DeviceInfo::job_table_readback false) reads every entry as empty.
JobTableEntry read_job_entry(CsrBus& bus, unsigned entry);

// Where a file's jobs go in the job table (netagg-ctl fpga job add).
struct Placement {
  // The first job's entry, the others in the entries after it. None: each job into the lowest
  // entry that holds no job and that no earlier job of the file takes.
  std::optional<unsigned> first_entry;
  // An entry that holds the same job id may be written over; with first_entry, also an entry
  // that holds another job. Without it such an entry is refused.
  bool replace = false;
};
struct PlacedJob {
  unsigned entry = 0;
  // The job the entry held and that storing this one replaces (only with Placement::replace).
  std::optional<std::uint16_t> replaces;
};
// The entries `jobs` go to in a device whose table reads `table` (entries 0..MAX_JOBS-1, from
// read_job_entry), the jobs checked (check_jobs, check_job at their entries). Writes nothing.
// Throws Error(kConfig) for a job id already in the table ("job N already in entry E") or an
// entry of first_entry that holds another job, unless replace; a job id already in an entry
// other than the one first_entry gives it (two entries would hold it); no free entry (the
// message names the table's size); slots that overlap those of a job the table keeps. On a
// design without the readback it throws Error(kUnsupported) unless first_entry and replace are
// both given (the jobs then go there, unchecked against the table).
std::vector<PlacedJob> place_jobs(const DeviceInfo& info, std::span<const JobSpec> jobs,
                                  std::span<const JobTableEntry> table, const Placement& placement);

// COMMIT's commands on the entry JOB_INDEX selects (and the rank WORKER_INDEX selects).
enum class Command : std::uint32_t {
  kStoreJob = csr::kCommitStoreJob,
  kStoreWorker = csr::kCommitStoreWorker,
  kRemoveJob = csr::kCommitRemoveJob,
};
// Issues `command` with the next sequence number (the device acts once per change) and waits
// until the device is no longer busy.
void commit(CsrBus& bus, Command command);
// Polls STATUS until busy clears; throws Error(kTransport) if it stays set.
void wait_not_busy(CsrBus& bus);

// CONTROL: soft reset (slots, job table and counters cleared) and clearing the counters.
void soft_reset(CsrBus& bus);
void clear_counters(CsrBus& bus);

struct Counter {
  std::string_view name;  // as in formats/csr.json, e.g. "dropped_foreign_source"
  std::uint64_t value = 0;
};
// Every counter of the map, in its order (each read as COUNTER_INDEX, COUNTER_LO, COUNTER_HI).
std::vector<Counter> read_counters(CsrBus& bus);
// One counter by its index in the map, read the same way (an index the map does not have reads
// whatever the device answers for it: 0 on this design).
std::uint64_t read_counter(CsrBus& bus, std::uint32_t index);

}  // namespace netagg::fpga
