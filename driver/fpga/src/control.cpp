// SPDX-License-Identifier: Apache-2.0
#include "netagg/fpga/control.hpp"

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "netagg/error.hpp"
#include "netagg/fpga_csr.hpp"

namespace netagg::fpga {
namespace {

namespace reg = netagg::fpga::csr;

constexpr std::uint32_t kSoftReset = reg::kControlSoftReset,
                        kClearCounters = reg::kControlClearCounters;
constexpr std::uint32_t kJobValid = reg::kJobIdValid;
constexpr std::uint32_t kParentValid = reg::kJobParentValid;
constexpr std::uint32_t kStatusBusy = reg::kStatusBusy;
// A slot clear takes a few cycles per slot; a device busy for this many polls is broken.
constexpr int kBusyPolls = 1 << 20;

std::uint32_t mac_lo(const wire::Mac& m) {
  return (std::uint32_t(m[2]) << 24) | (std::uint32_t(m[3]) << 16) | (std::uint32_t(m[4]) << 8) |
         std::uint32_t(m[5]);
}
std::uint32_t mac_hi(const wire::Mac& m) { return (std::uint32_t(m[0]) << 8) | m[1]; }

void wait_until_idle(CsrBus& bus, std::string_view what) {
  for (int i = 0; i < kBusyPolls; ++i)
    if ((bus.read32(reg::kStatus) & kStatusBusy) == 0) return;
  throw Error(Errc::kTransport, fmt::format("FPGA aggregator still busy after {} STATUS reads ({})",
                                            kBusyPolls, what));
}

// Registers that act once per change of their sequence field (bits 31:16): the next sequence
// is the one read back plus one.
void issue(CsrBus& bus, std::uint32_t address, std::uint32_t command, std::string_view what) {
  const std::uint32_t sequence = ((bus.read32(address) >> 16) + 1) & 0xFFFF;
  bus.write32(address, (sequence << 16) | command);
  wait_until_idle(bus, what);
}

std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

DeviceInfo read_device_info(CsrBus& bus) {
  const std::uint32_t version = bus.read32(reg::kVersion);
  const std::uint32_t features = bus.read32(reg::kFeatures);
  DeviceInfo info;
  info.design_version = version >> 16;
  info.wire_version = version & 0xFF;
  info.num_ports = features & 0xF;
  info.max_jobs = (features >> 8) & 0xFF;
  const unsigned log2_slots = (features >> 16) & 0xFF;
  info.slots = log2_slots < 17 ? 1u << log2_slots : 0;
  info.max_beats = features >> 24;
  info.job_table_readback = (features & reg::kFeaturesJobTableReadback) != 0;
  if (info.wire_version != wire::kVersion)
    throw Error(Errc::kUnsupported,
                fmt::format("FPGA aggregator speaks wire format version {}, this build {}",
                            info.wire_version, wire::kVersion));
  if (info.num_ports == 0 || info.max_jobs == 0 || info.slots == 0 || info.max_beats == 0)
    throw Error(Errc::kTransport,
                fmt::format("FPGA aggregator reports FEATURES 0x{:08x}: no ports, jobs, slots or "
                            "beats; is it there?",
                            features));
  return info;
}

void set_aggregator_address(CsrBus& bus, const AggregatorAddress& a) {
  bus.write32(reg::kAggMacLo, mac_lo(a.mac));
  bus.write32(reg::kAggMacHi, mac_hi(a.mac));
  bus.write32(reg::kAggIp, a.ip);
  bus.write32(reg::kAggUdpPort, a.udp_port);
}

unsigned worker_port(const WorkerSpec& worker, unsigned num_ports) {
  if (worker.switch_port) return *worker.switch_port;
  return num_ports == 0 ? 0 : worker.rank % num_ports;
}

namespace {
wire::Mac derived_mac(const Endpoint& address) {
  const std::uint64_t h = mix((std::uint64_t(address.ip) << 16) | address.port | (1ull << 63));
  return {0x02,
          std::uint8_t(h >> 32),
          std::uint8_t(h >> 24),
          std::uint8_t(h >> 16),
          std::uint8_t(h >> 8),
          std::uint8_t(h)};
}
}  // namespace

wire::Mac worker_mac(const WorkerSpec& worker) {
  return worker.mac ? *worker.mac : derived_mac(worker.address);
}

unsigned parent_port(const ParentSpec& parent) {
  return parent.switch_port ? *parent.switch_port : 0;
}

wire::Mac parent_mac(const ParentSpec& parent) {
  return parent.mac ? *parent.mac : derived_mac(parent.address);
}

void check_job(const DeviceInfo& info, const JobSpec& job, unsigned job_index) {
  const auto fail = [&](const std::string& why) {
    throw Error(Errc::kConfig, fmt::format("job {}: {}", job.job_id, why));
  };
  if (job_index >= info.max_jobs)
    fail(fmt::format("job table entry {} does not exist: the FPGA aggregator holds {} jobs",
                     job_index, info.max_jobs));
  if (job.workers.empty() || job.workers.size() > info.max_workers)
    fail(fmt::format("{} workers; the worker bitmap allows 1 to {}", job.workers.size(),
                     info.max_workers));
  if (job.slot_count == 0 || job.slot_base + job.slot_count > info.slots)
    fail(fmt::format("uses slots [{}, {}) but the FPGA aggregator has {} slots", job.slot_base,
                     job.slot_base + job.slot_count, info.slots));
  // A slot holds max_elements() accumulators of every data type (bf16 accumulates in fp32); the
  // device drops larger packets (count_too_large_for_job), docs/fpga-aggregator.md.
  const unsigned limit = std::min<unsigned>(info.max_elements(), wire::kMaxCount);
  if (job.elements_per_packet == 0 || job.elements_per_packet > limit)
    fail(fmt::format("elements_per_packet {} is out of range [1, {}] (a slot holds {} elements)",
                     job.elements_per_packet, limit, info.max_elements()));
  for (const WorkerSpec& w : job.workers)
    if (w.switch_port && *w.switch_port >= info.num_ports)
      fail(fmt::format("rank {}: switch_port {} but the FPGA aggregator has ports 0..{}", w.rank,
                       *w.switch_port, info.num_ports - 1));
  if (job.parent) {
    const ParentSpec& p = *job.parent;
    if (parent_port(p) >= info.num_ports)
      fail(fmt::format("parent: switch_port {} but the FPGA aggregator has ports 0..{}",
                       parent_port(p), info.num_ports - 1));
    if (std::uint32_t(p.slot_base) + job.slot_count > 0x10000)
      fail(fmt::format("the parent's slots [{}, {}) exceed the 16-bit slot space", p.slot_base,
                       std::uint32_t(p.slot_base) + job.slot_count));
  }
}

void check_jobs(const DeviceInfo& info, std::span<const JobSpec> jobs) {
  if (jobs.size() > info.max_jobs)
    throw Error(Errc::kConfig, fmt::format("{} jobs; the FPGA aggregator's job table holds {}",
                                           jobs.size(), info.max_jobs));
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    check_job(info, jobs[i], static_cast<unsigned>(i));
    for (std::size_t k = 0; k < i; ++k) {
      const JobSpec& a = jobs[k];
      const JobSpec& b = jobs[i];
      if (a.job_id == b.job_id)
        throw Error(Errc::kConfig, fmt::format("job {} is described twice", b.job_id));
      if (b.slot_base < a.slot_base + a.slot_count && a.slot_base < b.slot_base + b.slot_count)
        throw Error(Errc::kConfig,
                    fmt::format("job {}: slots [{}, {}) overlap slots [{}, {}) of job {}", b.job_id,
                                b.slot_base, b.slot_base + b.slot_count, a.slot_base,
                                a.slot_base + a.slot_count, a.job_id));
    }
  }
}

void program_job(CsrBus& bus, const JobSpec& job, unsigned job_index,
                 const AggregatorAddress& aggregator) {
  const DeviceInfo info = read_device_info(bus);
  check_job(info, job, job_index);
  set_aggregator_address(bus, aggregator);
  store_job(bus, job, job_index, info.num_ports);
}

void store_job(CsrBus& bus, const JobSpec& job, unsigned job_index, unsigned num_ports) {
  bus.write32(reg::kJobIndex, job_index);
  issue(bus, reg::kCommit, std::uint32_t(Command::kRemoveJob), "removing the old job");
  for (const WorkerSpec& w : job.workers) {
    const wire::Mac mac = worker_mac(w);
    bus.write32(reg::kWorkerIndex, w.rank);
    bus.write32(reg::kWorkerIp, w.address.ip);
    bus.write32(reg::kWorkerUdpPort,
                (std::uint32_t(worker_port(w, num_ports)) << 16) | w.address.port);
    bus.write32(reg::kWorkerMacLo, mac_lo(mac));
    bus.write32(reg::kWorkerMacHi, mac_hi(mac));
    issue(bus, reg::kCommit, std::uint32_t(Command::kStoreWorker), "storing a worker");
  }
  bus.write32(reg::kJobId, kJobValid | job.job_id);
  bus.write32(reg::kJobWorkers, static_cast<std::uint32_t>(job.workers.size()));
  bus.write32(reg::kJobSlots, (std::uint32_t(job.slot_count) << 16) | job.slot_base);
  bus.write32(reg::kJobElements, job.elements_per_packet);
  // The parent (trees), or none: the staging registers keep what the last job wrote.
  if (job.parent) {
    const ParentSpec& p = *job.parent;
    const wire::Mac mac = parent_mac(p);
    bus.write32(reg::kJobParentId, kParentValid | p.job_id);
    // A design without the JOB_PARENT_* registers (before trees) reads them as 0: the job would
    // be stored as a root and answer its members itself.
    if (bus.read32(reg::kJobParentId) != (kParentValid | p.job_id))
      throw Error(Errc::kUnsupported,
                  fmt::format("job {}: a child in a tree (it has a parent), but the FPGA "
                              "aggregator has no JOB_PARENT_* registers (JOB_PARENT_ID does not "
                              "read back): a design before aggregation trees",
                              job.job_id));
    bus.write32(reg::kJobParentRank, p.rank);
    bus.write32(reg::kJobParentSlots, p.slot_base);
    bus.write32(reg::kJobParentIp, p.address.ip);
    bus.write32(reg::kJobParentUdpPort,
                (std::uint32_t(std::min(parent_port(p), 15u)) << 16) | p.address.port);
    bus.write32(reg::kJobParentMacLo, mac_lo(mac));
    bus.write32(reg::kJobParentMacHi, mac_hi(mac));
  } else {
    bus.write32(reg::kJobParentId, 0);
  }
  issue(bus, reg::kCommit, std::uint32_t(Command::kStoreJob), "clearing the job's slots");
}

void remove_job(CsrBus& bus, unsigned job_index) {
  bus.write32(reg::kJobIndex, job_index);
  issue(bus, reg::kCommit, std::uint32_t(Command::kRemoveJob), "removing a job");
}

JobTableEntry read_job_entry(CsrBus& bus, unsigned entry) {
  bus.write32(reg::kJobIndex, entry);
  JobTableEntry e;
  e.entry = entry;
  const std::uint32_t id = bus.read32(reg::kJobEntryId);
  if ((id & reg::kJobEntryValid) == 0) return e;
  e.valid = true;
  e.job_id = static_cast<std::uint16_t>(id & 0xFFFF);
  e.workers = bus.read32(reg::kJobEntryWorkers);
  const std::uint32_t slots = bus.read32(reg::kJobEntrySlots);
  e.slot_base = static_cast<std::uint16_t>(slots & 0xFFFF);
  e.slot_count = static_cast<std::uint16_t>(slots >> 16);
  e.elements_per_packet = bus.read32(reg::kJobEntryElements) & 0xFFFF;
  const std::uint32_t parent = bus.read32(reg::kJobEntryParentId);
  if ((parent & reg::kJobEntryHasParent) != 0)
    e.parent_job_id = static_cast<std::uint16_t>(parent & 0xFFFF);
  return e;
}

std::vector<PlacedJob> place_jobs(const DeviceInfo& info, std::span<const JobSpec> jobs,
                                  std::span<const JobTableEntry> table,
                                  const Placement& placement) {
  check_jobs(info, jobs);
  std::vector<PlacedJob> placed;
  if (!info.job_table_readback) {
    // Which entries hold jobs is unknown: only an explicit entry, knowingly overwritten.
    if (!placement.first_entry || !placement.replace)
      throw Error(Errc::kUnsupported,
                  "the FPGA aggregator cannot read its job table back (FEATURES bit 4 clear: a "
                  "design without JOB_ENTRY_*), so whether an entry is free is unknown: give "
                  "--entry E and --replace to write entry E whatever it holds");
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      const unsigned entry = *placement.first_entry + static_cast<unsigned>(i);
      check_job(info, jobs[i], entry);
      placed.push_back({entry, std::nullopt});
    }
    return placed;
  }

  const auto held = [&](unsigned entry) -> const JobTableEntry* {
    for (const JobTableEntry& e : table)
      if (e.entry == entry && e.valid) return &e;
    return nullptr;
  };
  const auto holding = [&](std::uint16_t id) -> std::optional<unsigned> {
    for (const JobTableEntry& e : table)
      if (e.valid && e.job_id == id) return e.entry;
    return std::nullopt;
  };
  std::vector<bool> taken(info.max_jobs, false);  // entries this call stores into
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const JobSpec& job = jobs[i];
    const std::optional<unsigned> already = holding(job.job_id);
    unsigned entry = 0;
    if (placement.first_entry) {
      entry = *placement.first_entry + static_cast<unsigned>(i);
      check_job(info, job, entry);
      if (already && *already != entry)
        throw Error(Errc::kConfig,
                    fmt::format("job {} already in entry {}: storing it in entry {} as well would "
                                "give two entries one job id (the lower one takes its packets); "
                                "remove entry {} first, or leave out --entry to replace it there "
                                "(--replace)",
                                job.job_id, *already, entry, *already));
    } else if (already) {
      entry = *already;
    } else {
      bool found = false;
      for (unsigned e = 0; e < info.max_jobs && !found; ++e)
        if (!taken[e] && !held(e)) {
          entry = e;
          found = true;
        }
      if (!found)
        throw Error(Errc::kConfig,
                    fmt::format("job {}: no free entry: the FPGA aggregator's job table has {} "
                                "entries and every one holds a job{}; remove one first",
                                job.job_id, info.max_jobs,
                                jobs.size() > 1 ? " or one this file adds" : ""));
    }
    PlacedJob p{entry, std::nullopt};
    if (const JobTableEntry* old = held(entry)) {
      if (!placement.replace) {
        if (old->job_id == job.job_id)
          throw Error(Errc::kConfig, fmt::format("job {} already in entry {}: give --replace to "
                                                 "replace it",
                                                 job.job_id, entry));
        throw Error(Errc::kConfig,
                    fmt::format("entry {} holds job {}: give --replace to replace it, or leave out "
                                "--entry to take a free entry",
                                entry, old->job_id));
      }
      p.replaces = old->job_id;
    }
    taken[entry] = true;
    placed.push_back(p);
  }
  // The jobs the table keeps share no slot with the new ones (storing a job clears its slots).
  for (const JobTableEntry& e : table) {
    if (!e.valid || (e.entry < taken.size() && taken[e.entry])) continue;
    for (const JobSpec& job : jobs)
      if (job.slot_base < e.slot_base + e.slot_count &&
          e.slot_base < job.slot_base + job.slot_count)
        throw Error(
            Errc::kConfig,
            fmt::format("job {}: slots [{}, {}) overlap slots [{}, {}) of job {} in entry {}",
                        job.job_id, job.slot_base, job.slot_base + job.slot_count, e.slot_base,
                        e.slot_base + e.slot_count, e.job_id, e.entry));
  }
  return placed;
}

void commit(CsrBus& bus, Command command) {
  issue(bus, reg::kCommit, std::uint32_t(command), "a job table command");
}

void wait_not_busy(CsrBus& bus) { wait_until_idle(bus, "waiting for STATUS.busy to clear"); }

void soft_reset(CsrBus& bus) { issue(bus, reg::kControl, kSoftReset, "soft reset"); }
void clear_counters(CsrBus& bus) { issue(bus, reg::kControl, kClearCounters, "clearing counters"); }

std::vector<Counter> read_counters(CsrBus& bus) {
  std::vector<Counter> out;
  for (std::uint32_t i = 0; i < reg::kCounterNames.size(); ++i)
    out.push_back({reg::kCounterNames[i], read_counter(bus, i)});
  return out;
}

std::uint64_t read_counter(CsrBus& bus, std::uint32_t index) {
  bus.write32(reg::kCounterIndex, index);
  const std::uint64_t lo = bus.read32(reg::kCounterLo);  // latches the high half
  const std::uint64_t hi = bus.read32(reg::kCounterHi);
  return (hi << 32) | lo;
}

}  // namespace netagg::fpga
