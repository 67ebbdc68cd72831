// SPDX-License-Identifier: Apache-2.0
// driver/fpga against a scripted CSR bus: which registers program_job writes with which packing
// (formats/csr.json), the commit sequence numbers, the busy wait, the checks of a job against
// the device, counters. The models (RTL, HLS) run the same calls in fpga_model_test.cpp; here
// the register-level contract is checked without a model.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <set>
#include <vector>

#include "netagg/error.hpp"
#include "netagg/fpga/control.hpp"
#include "netagg/fpga_csr.hpp"

namespace netagg::fpga {
namespace {

namespace reg = csr;
using ::testing::HasSubstr;

// A register file that logs each command: on a COMMIT whose sequence changed it snapshots the
// registers the command uses. STATUS reads busy for `busy_reads` reads after each command.
class ScriptedBus : public CsrBus {
 public:
  struct Command {
    std::uint32_t command = 0;
    std::map<std::uint32_t, std::uint32_t> registers;  // snapshot at the commit
  };

  ScriptedBus() {
    regs_[reg::kVersion] = (1u << 16) | wire::kVersion;
    // NUM_PORTS 4, MAX_JOBS 8, log2(SLOTS) 6, MAX_BEATS 16: the spec's defaults.
    regs_[reg::kFeatures] = 4u | (8u << 8) | (6u << 16) | (16u << 24);
  }

  std::uint32_t read32(std::uint32_t address) override {
    ++reads_;
    if (address == reg::kStatus) {
      if (busy_left_ > 0) {
        --busy_left_;
        return 1;
      }
      return 0;
    }
    if (address == reg::kCounterLo) {
      latched_ = counters_[regs_[reg::kCounterIndex]];
      return static_cast<std::uint32_t>(latched_);
    }
    if (address == reg::kCounterHi) return static_cast<std::uint32_t>(latched_ >> 32);
    return regs_[address];
  }

  void write32(std::uint32_t address, std::uint32_t value) override {
    const std::uint32_t before = regs_[address];
    regs_[address] = value;
    if ((address == reg::kCommit || address == reg::kControl) && (value >> 16) != (before >> 16)) {
      Command c{value & 3, regs_};
      if (address == reg::kControl) c.command |= 0x100;  // mark CONTROL commands
      commands.push_back(c);
      busy_left_ = busy_reads;
    }
  }

  std::uint32_t reg_value(std::uint32_t address) { return regs_[address]; }
  void set(std::uint32_t address, std::uint32_t value) { regs_[address] = value; }

  std::vector<Command> commands;
  int busy_reads = 3;
  std::map<std::uint32_t, std::uint64_t> counters_;
  int reads_ = 0;

 private:
  std::map<std::uint32_t, std::uint32_t> regs_;
  int busy_left_ = 0;
  std::uint64_t latched_ = 0;
};

JobSpec two_worker_job() {
  JobSpec job;
  job.job_id = 0x1234;
  job.slot_base = 8;
  job.slot_count = 16;
  job.elements_per_packet = 200;
  job.workers.push_back({0, Endpoint{0x0A000001, 31000}, wire::Mac{0x02, 0, 0, 0, 0, 0x11}, 3});
  job.workers.push_back({1, Endpoint{0x0A000002, 31001}, std::nullopt, std::nullopt});
  return job;
}

TEST(FpgaControl, ProgramJobWritesTheMapsFieldsAndCommitsInOrder) {
  ScriptedBus bus;
  bus.set(reg::kCommit, 0x00070000);  // a previous sequence number: the next one is 8
  AggregatorAddress agg;
  agg.mac = {0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF};
  agg.ip = 0xC0A80001;
  agg.udp_port = 20034;
  program_job(bus, two_worker_job(), 5, agg);

  EXPECT_EQ(bus.reg_value(reg::kAggMacLo), 0xCCDDEEFFu);  // bytes 2..5, byte 2 in 31:24
  EXPECT_EQ(bus.reg_value(reg::kAggMacHi), 0xAABBu);      // bytes 0..1, byte 0 in 15:8
  EXPECT_EQ(bus.reg_value(reg::kAggIp), 0xC0A80001u);
  EXPECT_EQ(bus.reg_value(reg::kAggUdpPort), 20034u);

  // Remove the entry, store each worker, then the job with its valid bit.
  ASSERT_EQ(bus.commands.size(), 4u);
  const auto& remove = bus.commands[0];
  EXPECT_EQ(remove.command, 3u);
  EXPECT_EQ(remove.registers.at(reg::kJobIndex), 5u);
  EXPECT_EQ(remove.registers.at(reg::kCommit) >> 16, 8u);

  const auto& w0 = bus.commands[1];
  EXPECT_EQ(w0.command, 2u);
  EXPECT_EQ(w0.registers.at(reg::kCommit) >> 16, 9u);
  EXPECT_EQ(w0.registers.at(reg::kJobIndex), 5u);
  EXPECT_EQ(w0.registers.at(reg::kWorkerIndex), 0u);
  EXPECT_EQ(w0.registers.at(reg::kWorkerIp), 0x0A000001u);
  EXPECT_EQ(w0.registers.at(reg::kWorkerUdpPort), (3u << 16) | 31000u);  // switch_port 3
  EXPECT_EQ(w0.registers.at(reg::kWorkerMacLo), 0x00000011u);
  EXPECT_EQ(w0.registers.at(reg::kWorkerMacHi), 0x0200u);

  const auto& w1 = bus.commands[2];
  EXPECT_EQ(w1.command, 2u);
  EXPECT_EQ(w1.registers.at(reg::kWorkerIndex), 1u);
  EXPECT_EQ(w1.registers.at(reg::kWorkerIp), 0x0A000002u);
  EXPECT_EQ(w1.registers.at(reg::kWorkerUdpPort), (1u << 16) | 31001u);  // rank 1 mod 4 ports
  const wire::Mac derived = worker_mac(two_worker_job().workers[1]);
  EXPECT_EQ(w1.registers.at(reg::kWorkerMacHi), (std::uint32_t(derived[0]) << 8) | derived[1]);

  const auto& store = bus.commands[3];
  EXPECT_EQ(store.command, 1u);
  EXPECT_EQ(store.registers.at(reg::kCommit) >> 16, 11u);
  EXPECT_EQ(store.registers.at(reg::kJobIndex), 5u);
  EXPECT_EQ(store.registers.at(reg::kJobId), 0x80001234u);
  EXPECT_EQ(store.registers.at(reg::kJobWorkers), 2u);
  EXPECT_EQ(store.registers.at(reg::kJobSlots), (16u << 16) | 8u);
  EXPECT_EQ(store.registers.at(reg::kJobElements), 200u);
}

TEST(FpgaControl, TheSequenceWrapsAndRemoveAndControlCommandsAct) {
  ScriptedBus bus;
  bus.set(reg::kCommit, 0xFFFF0000);
  remove_job(bus, 2);
  ASSERT_EQ(bus.commands.size(), 1u);
  EXPECT_EQ(bus.commands[0].command, 3u);
  EXPECT_EQ(bus.commands[0].registers.at(reg::kCommit) >> 16, 0u);
  EXPECT_EQ(bus.commands[0].registers.at(reg::kJobIndex), 2u);
  soft_reset(bus);
  clear_counters(bus);
  ASSERT_EQ(bus.commands.size(), 3u);
  EXPECT_EQ(bus.commands[1].command, 0x101u);
  EXPECT_EQ(bus.commands[2].command, 0x102u);
  EXPECT_EQ(bus.reg_value(reg::kControl) >> 16, 2u);
}

TEST(FpgaControl, WaitsWhileBusyAndGivesUpOnADeviceThatStaysBusy) {
  ScriptedBus bus;
  bus.busy_reads = 1000;
  const int before = bus.reads_;
  remove_job(bus, 0);
  EXPECT_GE(bus.reads_ - before, 1001) << "returned while STATUS still said busy";
  bus.busy_reads = 1 << 30;
  try {
    remove_job(bus, 0);
    ADD_FAILURE() << "a device busy forever must be an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kTransport);
    EXPECT_THAT(e.what(), HasSubstr("still busy"));
  }
}

// store_job writes what it is given, also what check_job refuses (the device's own checks are
// what tests reach that way), and leaves the address registers alone.
TEST(FpgaControl, StoreJobWritesTheEntryWithoutChecks) {
  ScriptedBus bus;
  JobSpec job = two_worker_job();
  job.elements_per_packet = 4000;  // more than a slot holds
  job.workers[0].switch_port = 9;  // no such port
  EXPECT_THROW(check_job(read_device_info(bus), job, 0), Error);
  const int reads_before = bus.reads_;
  store_job(bus, job, 2, 3);
  ASSERT_EQ(bus.commands.size(), 4u);
  EXPECT_EQ(bus.commands[1].registers.at(reg::kWorkerUdpPort), (9u << 16) | 31000u);
  EXPECT_EQ(bus.commands[2].registers.at(reg::kWorkerUdpPort), (1u << 16) | 31001u);
  EXPECT_EQ(bus.commands[3].registers.at(reg::kJobIndex), 2u);
  EXPECT_EQ(bus.commands[3].registers.at(reg::kJobElements), 4000u);
  EXPECT_EQ(bus.reg_value(reg::kAggIp), 0u);
  EXPECT_EQ(bus.reg_value(reg::kFeatures), 4u | (8u << 8) | (6u << 16) | (16u << 24));
  // Reads: the sequence number before each command and STATUS after it, no VERSION/FEATURES.
  EXPECT_EQ(bus.reads_ - reads_before, 4 * (1 + 4));
}

TEST(FpgaControl, CommitUsesTheNextSequenceAndWaitsUntilIdle) {
  ScriptedBus bus;
  bus.set(reg::kCommit, 0x00410002);
  bus.set(reg::kJobIndex, 6);
  const int before = bus.reads_;
  commit(bus, Command::kStoreJob);
  ASSERT_EQ(bus.commands.size(), 1u);
  EXPECT_EQ(bus.commands[0].command, 1u);
  EXPECT_EQ(bus.commands[0].registers.at(reg::kCommit), 0x00420001u);
  EXPECT_EQ(bus.commands[0].registers.at(reg::kJobIndex), 6u);
  EXPECT_EQ(bus.reads_ - before, 1 + 4);  // COMMIT, then STATUS until not busy (3 busy reads)
  bus.busy_reads = 1 << 30;
  EXPECT_THROW(commit(bus, Command::kRemoveJob), Error) << "STATUS never clears";
  EXPECT_THROW(wait_not_busy(bus), Error);
}

TEST(FpgaControl, DeviceInfoAndItsChecks) {
  ScriptedBus bus;
  const DeviceInfo info = read_device_info(bus);
  EXPECT_EQ(info.design_version, 1u);
  EXPECT_EQ(info.wire_version, wire::kVersion);
  EXPECT_EQ(info.num_ports, 4u);
  EXPECT_EQ(info.max_jobs, 8u);
  EXPECT_EQ(info.slots, 64u);
  EXPECT_EQ(info.max_beats, 16u);
  EXPECT_EQ(info.max_elements(), 256u);

  bus.set(reg::kVersion, (1u << 16) | (wire::kVersion + 1));
  try {
    read_device_info(bus);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::kUnsupported);
    EXPECT_THAT(e.what(), HasSubstr("wire format version"));
  }
  bus.set(reg::kVersion, (1u << 16) | wire::kVersion);
  bus.set(reg::kFeatures, 0);
  EXPECT_THROW(read_device_info(bus), Error);
}

TEST(FpgaControl, JobsThatDoNotFitAreRefusedWithTheReason) {
  ScriptedBus bus;
  const DeviceInfo info = read_device_info(bus);
  const auto refused = [&](const JobSpec& job, unsigned index, const std::string& why) {
    try {
      check_job(info, job, index);
      ADD_FAILURE() << "accepted; expected: " << why;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::kConfig);
      EXPECT_THAT(e.what(), HasSubstr(why));
    }
  };
  JobSpec ok = two_worker_job();
  EXPECT_NO_THROW(check_job(info, ok, 7));
  refused(ok, 8, "job table entry 8 does not exist");
  JobSpec j = ok;
  j.slot_base = 60;
  j.slot_count = 5;
  refused(j, 0, "uses slots [60, 65) but the FPGA aggregator has 64 slots");
  j = ok;
  j.elements_per_packet = 257;  // a slot holds 256 accumulators, whatever the data type
  refused(j, 0, "elements_per_packet 257 is out of range [1, 256]");
  j.elements_per_packet = 256;
  EXPECT_NO_THROW(check_job(info, j, 0));
  j = ok;
  j.workers[1].switch_port = 4;
  refused(j, 0, "rank 1: switch_port 4 but the FPGA aggregator has ports 0..3");
  j = ok;
  j.workers.clear();
  for (std::uint16_t r = 0; r < 33; ++r)
    j.workers.push_back({r, Endpoint{0x0A000001, std::uint16_t(1000 + r)}, {}, {}});
  refused(j, 0, "33 workers; the worker bitmap allows 1 to 32");

  // A table: distinct ids, disjoint slots, at most MAX_JOBS entries.
  JobSpec a = ok, b = ok;
  b.job_id = 7;
  b.slot_base = 24;
  const std::vector<JobSpec> fine = {a, b};
  EXPECT_NO_THROW(check_jobs(info, fine));
  b.slot_base = 23;
  std::vector<JobSpec> overlap = {a, b};
  EXPECT_THROW(
      {
        try {
          check_jobs(info, overlap);
        } catch (const Error& e) {
          EXPECT_THAT(e.what(),
                      HasSubstr("job 7: slots [23, 39) overlap slots [8, 24) of job 4660"));
          throw;
        }
      },
      Error);
  b = a;
  std::vector<JobSpec> twice = {a, b};
  EXPECT_THROW(check_jobs(info, twice), Error);
  std::vector<JobSpec> nine(9, ok);
  EXPECT_THROW(check_jobs(info, nine), Error);
}

JobSpec job_on_slots(std::uint16_t id, std::uint16_t base, std::uint16_t count) {
  JobSpec job = two_worker_job();
  job.job_id = id;
  job.slot_base = base;
  job.slot_count = count;
  return job;
}

// place_jobs against a job table as read back: free entries, the same job id or another job's
// entry only with replace, the slots of the jobs the table keeps, a full table; and a design that
// cannot read its table back.
TEST(FpgaControl, JobsGoToFreeEntriesAndReplaceOnlyWhenAsked) {
  ScriptedBus bus;
  DeviceInfo info = read_device_info(bus);
  EXPECT_FALSE(info.job_table_readback) << "this bus has no FEATURES bit 4";
  info.job_table_readback = true;
  std::vector<JobTableEntry> table(8);
  for (unsigned e = 0; e < 8; ++e) table[e].entry = e;
  table[0] = {0, true, 4, 2, 0, 8, 16, std::nullopt};
  table[2] = {2, true, 7, 2, 16, 8, 16, std::uint16_t{40}};
  const auto refused = [&](std::vector<JobSpec> jobs, Placement p, const std::string& why) {
    try {
      place_jobs(info, jobs, table, p);
      ADD_FAILURE() << "placed; expected: " << why;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::kConfig);
      EXPECT_THAT(e.what(), HasSubstr(why));
    }
  };

  std::vector<PlacedJob> placed =
      place_jobs(info, std::vector{job_on_slots(9, 8, 8), job_on_slots(10, 24, 8)}, table, {});
  ASSERT_EQ(placed.size(), 2u);
  EXPECT_EQ(placed[0].entry, 1u);
  EXPECT_EQ(placed[1].entry, 3u);
  EXPECT_FALSE(placed[0].replaces || placed[1].replaces);

  refused({job_on_slots(4, 0, 8)}, {}, "job 4 already in entry 0: give --replace");
  refused({job_on_slots(4, 0, 8)}, {.first_entry = 0}, "job 4 already in entry 0");
  placed = place_jobs(info, std::vector{job_on_slots(4, 32, 8)}, table,
                      {.first_entry = std::nullopt, .replace = true});
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed[0].entry, 0u);
  EXPECT_EQ(placed[0].replaces, std::optional<std::uint16_t>(4));
  refused({job_on_slots(4, 32, 8)}, {.first_entry = 5, .replace = true},
          "job 4 already in entry 0: storing it in entry 5 as well");

  refused({job_on_slots(11, 40, 8)}, {.first_entry = 2}, "entry 2 holds job 7: give --replace");
  placed = place_jobs(info, std::vector{job_on_slots(11, 16, 8)}, table,
                      {.first_entry = 2, .replace = true});
  EXPECT_EQ(placed.at(0).entry, 2u);
  EXPECT_EQ(placed.at(0).replaces, std::optional<std::uint16_t>(7));
  placed = place_jobs(info, std::vector{job_on_slots(11, 40, 8)}, table, {.first_entry = 5});
  EXPECT_EQ(placed.at(0).entry, 5u);

  refused({job_on_slots(12, 4, 8)}, {},
          "job 12: slots [4, 12) overlap slots [0, 8) of job 4 in "
          "entry 0");
  refused({job_on_slots(12, 20, 8)}, {.first_entry = 1, .replace = true},
          "overlap slots [16, 24) of job 7 in entry 2");

  for (unsigned e = 0; e < 8; ++e)
    if (!table[e].valid) table[e] = {e, true, std::uint16_t(20 + e), 2, 0, 0, 16, std::nullopt};
  refused({job_on_slots(13, 40, 8)}, {},
          "job 13: no free entry: the FPGA aggregator's job table has 8 entries");

  // A design without the readback: only an explicit entry, with replace.
  info.job_table_readback = false;
  for (const Placement& p : {Placement{}, Placement{.first_entry = 3}}) {
    try {
      place_jobs(info, std::vector{job_on_slots(13, 40, 8)}, {}, p);
      ADD_FAILURE() << "placed on a device that cannot read its table back";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::kUnsupported);
      EXPECT_THAT(e.what(), HasSubstr("cannot read its job table back"));
    }
  }
  placed = place_jobs(info, std::vector{job_on_slots(13, 40, 8)}, {},
                      {.first_entry = 3, .replace = true});
  EXPECT_EQ(placed.at(0).entry, 3u);
  // Such a design reads every entry as empty.
  EXPECT_FALSE(read_job_entry(bus, 1).valid);
  EXPECT_EQ(bus.reg_value(reg::kJobIndex), 1u);
}

TEST(FpgaControl, CountersAreReadAsLatchedSixtyFourBitValuesByName) {
  ScriptedBus bus;
  for (std::uint32_t i = 0; i < reg::kCounterCount; ++i)
    bus.counters_[i] = (std::uint64_t(i + 1) << 32) | (i * 3);
  const std::vector<Counter> counters = read_counters(bus);
  ASSERT_EQ(counters.size(), reg::kCounterCount);
  for (std::uint32_t i = 0; i < counters.size(); ++i) {
    EXPECT_EQ(counters[i].name, reg::kCounterNames[i]);
    EXPECT_EQ(counters[i].value, (std::uint64_t(i + 1) << 32) | (i * 3)) << counters[i].name;
  }
  EXPECT_EQ(read_counter(bus, 5), (std::uint64_t(6) << 32) | 15);
  EXPECT_EQ(read_counter(bus, 999), 0u);
  EXPECT_EQ(counters[0].name, "frames_in");
  EXPECT_EQ(counters[reg::index(reg::Counter::kDroppedForeignSource)].name,
            "dropped_foreign_source");
}

TEST(FpgaControl, WorkerPortsAndDerivedMacs) {
  WorkerSpec w{6, Endpoint{0x7F000001, 40000}, std::nullopt, std::nullopt};
  EXPECT_EQ(worker_port(w, 4), 2u);
  EXPECT_EQ(worker_port(w, 1), 0u);
  w.switch_port = 1;
  EXPECT_EQ(worker_port(w, 4), 1u);

  std::set<wire::Mac> macs;
  for (std::uint16_t port = 40000; port < 40100; ++port) {
    const wire::Mac m = worker_mac({0, Endpoint{0x7F000001, port}, std::nullopt, std::nullopt});
    EXPECT_EQ(m[0] & 0x03, 0x02) << "locally administered unicast";
    EXPECT_EQ(m, worker_mac({3, Endpoint{0x7F000001, port}, std::nullopt, 2})) << "deterministic";
    macs.insert(m);
  }
  EXPECT_EQ(macs.size(), 100u);
  const wire::Mac given{1, 2, 3, 4, 5, 6};
  EXPECT_EQ(worker_mac({0, Endpoint{1, 1}, given, std::nullopt}), given);
}

}  // namespace
}  // namespace netagg::fpga
