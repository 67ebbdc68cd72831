// SPDX-License-Identifier: Apache-2.0
// What the planner, the schema and the two printers share: the widths of the P4 fields, the
// replication id numbering (control.hpp) and each table's place in p4_schema().
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "netagg/p4/control.hpp"

namespace netagg::p4 {

constexpr std::uint64_t kMax48 = (std::uint64_t{1} << 48) - 1;
constexpr std::uint64_t kMax32 = 0xFFFFFFFFull;
constexpr std::uint64_t kMax16 = 0xFFFF;

constexpr std::uint16_t rid_of(std::size_t job_index, std::size_t rank) {
  return static_cast<std::uint16_t>(1 + kRidsPerJob * job_index + rank);
}
static_assert(rid_of(kMaxJobs - 1, kMaxWorkersPerJob - 1) ==
              1 + kRidsPerJob * (kMaxJobs - 1) + kMaxWorkersPerJob - 1);
static_assert(1 + kRidsPerJob * (kMaxJobs - 1) + kMaxWorkersPerJob - 1 <= kMax16);
static_assert(1 + kRidsPerJob * kMaxJobs + kMaxWorkersPerJob - 1 > kMax16,
              "kMaxJobs is the largest job count whose rids fit in bit<16>");

enum Use : std::size_t {  // index into p4_schema()
  kSwitchIdentity,
  kForward,
  kJobTable,
  kWorkerTable,
  kResultDestination,
  kParentTable,
  kParentSource,
};

// Numbers as both printers write them.
inline std::string dec(std::uint64_t v) { return std::to_string(v); }

}  // namespace netagg::p4
