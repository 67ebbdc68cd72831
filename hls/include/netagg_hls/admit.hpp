// SPDX-License-Identifier: Apache-2.0
// Admission of an ingress frame (docs/fpga-aggregator.md, "Checks"): the frame as its port's
// ingress buffer stores it and the frame checks made there (hw/rtl/netagg_ingress.sv), the job
// table (hw/rtl/netagg_job_table.sv) and the head check against AGG_UDP_PORT, the packet fields
// and the table (hw/rtl/netagg_admit.sv). The first failing check is the drop reason; a frame
// that passes becomes a Contribution for the round decision (round.hpp).
// Kernel code: C++14, no dynamic memory, every loop bounded.
#ifndef NETAGG_HLS_ADMIT_HPP
#define NETAGG_HLS_ADMIT_HPP

#include <stdint.h>

#include "netagg_hls/csr14.hpp"
#include "netagg_hls/frame.hpp"
#include "netagg_hls/params.hpp"

namespace netagg {
namespace fpga {
namespace pipeline {

// One ingress frame as stored in its port's buffer.
template <class P>
struct Frame {
  BeatData beat[P::kMaxFrameBeats];  // beats 0..kMaxFrameBeats-1 (later beats are not stored)
  uint32_t beats;                    // beats the frame had on the wire, all of them
  uint32_t bytes;                    // its length: 64 * (beats - 1) + TKEEP bytes of the last
};

// The bytes a TKEEP marks (contiguous from byte 0 on the ports).
inline unsigned keep_bytes(uint64_t keep) {
  unsigned n = 0;
  for (int i = 0; i < 64; ++i) {
#pragma HLS UNROLL
    n += static_cast<unsigned>((keep >> i) & 1u);
  }
  return n;
}

struct JobEntry {
  bool valid;
  uint16_t id;
  uint8_t workers;
  uint16_t slot_base, slot_count, elements;
  // Trees: the job's parent (JOB_PARENT_*), where a completed round's sum goes.
  bool has_parent;
  uint16_t parent_id, parent_rank, parent_slot_base;
  uint32_t parent_ip;
  uint16_t parent_udp_port;
  uint8_t parent_port;     // the egress port towards the parent
  uint32_t parent_mac_lo;  // MAC bytes 2..5
  uint16_t parent_mac_hi;  // MAC bytes 0..1
};
struct WorkerEntry {
  uint32_t ip;
  uint16_t udp_port;
  uint8_t egress_port;
  uint32_t mac_lo;  // MAC bytes 2..5, byte 2 in bits 31:24
  uint16_t mac_hi;  // MAC bytes 0..1, byte 0 in bits 15:8
};

// A frame that passed the frame, header and job table checks: a contribution, or a result from
// a job's parent (`from_parent`; then `job` is the child's entry and `slot` its own slot).
struct Contribution {
  int job;  // job table entry
  uint8_t dtype, set, fresh, recovery, ecn, from_parent;
  uint16_t rank, slot, count;
  int16_t exponent;
  uint32_t seq, epoch;
};

// MAX_JOBS entries and MAX_WORKERS worker records per entry, written by COMMIT (aggregator.hpp)
// and looked up by every frame's checks.
template <class P>
class JobTable {
 public:
  void clear() {
    for (int j = 0; j < P::kMaxJobs; ++j) {
      jobs_[j] = JobEntry();
      for (int w = 0; w < P::kMaxWorkers; ++w) workers_[j][w] = WorkerEntry();
    }
  }

  JobEntry& job(int entry) { return jobs_[entry]; }
  const JobEntry& job(int entry) const { return jobs_[entry]; }
  WorkerEntry& worker(int entry, int rank) { return workers_[entry][rank]; }
  const WorkerEntry& worker(int entry, int rank) const { return workers_[entry][rank]; }

  int find_job(uint16_t id) const {
    for (int j = 0; j < P::kMaxJobs; ++j) {
#pragma HLS UNROLL
      if (jobs_[j].valid && jobs_[j].id == id) return j;  // the lowest entry wins
    }
    return -1;
  }
  // The job whose parent sent a result: its id at the parent and the parent's address and UDP
  // port are the frame's (the lowest entry wins).
  int find_child_job(uint16_t parent_id, uint32_t ip, uint16_t udp_port) const {
    for (int j = 0; j < P::kMaxJobs; ++j) {
#pragma HLS UNROLL
      if (jobs_[j].valid && jobs_[j].has_parent && jobs_[j].parent_id == parent_id &&
          jobs_[j].parent_ip == ip && jobs_[j].parent_udp_port == udp_port)
        return j;
    }
    return -1;
  }

 private:
  JobEntry jobs_[P::kMaxJobs];
  WorkerEntry workers_[P::kMaxJobs][P::kMaxWorkers];
};

// The exact dtypes (fp32_exact, exact_lanes): one class in a round, added as 64-bit lanes.
inline bool is_exact(unsigned dtype) {
  return dtype == layout::kDtypeFp32Exact || dtype == layout::kDtypeExactLanes;
}
// Whether this design adds `dtype` (the exact ones need P::kExact, FEATURES bit 5).
template <class P>
bool supported_dtype(unsigned dtype) {
  return P::kExact || !is_exact(dtype);
}
// count elements of `dtype` fit the job's packets and a frame's stored payload beats (an
// exact_lanes element takes two 32-bit lanes of a frame, one of the slot's 64-bit lanes).
template <class P>
bool fits_slot(unsigned dtype, unsigned count, const JobEntry& entry) {
  return count <= entry.elements && count <= static_cast<unsigned>(P::kMaxElements) &&
         count * element_size(dtype) <= static_cast<unsigned>(P::kMaxBeats * P::kBeatBytes);
}

inline void fill(const BeatData& h, int job, unsigned dtype, unsigned flags, unsigned rank,
                 uint32_t slot, unsigned count, Contribution& c) {
  using namespace layout;
  c.job = job;
  c.dtype = static_cast<uint8_t>(dtype);
  c.set = static_cast<uint8_t>(flags & kFlagSet);
  c.fresh = static_cast<uint8_t>((flags & kFlagFresh) != 0);
  c.recovery = static_cast<uint8_t>((flags & kFlagRecovery) != 0);
  c.ecn = static_cast<uint8_t>(get_byte(h, kIpv4Ecn) & kIpv4EcnMask);
  c.rank = static_cast<uint16_t>(rank);
  c.slot = static_cast<uint16_t>(slot);
  c.count = static_cast<uint16_t>(count);
  c.exponent = static_cast<int16_t>(get_be16(h, kNetaggExponent));
  c.seq = get_be32(h, kNetaggSeq);
  c.epoch = get_be32(h, kNetaggEpoch);
}

// A result frame (the packet checks passed): only one from a job's parent, for that job at
// the parent, goes on, as the switch model's result_from_parent checks it: this aggregator's
// rank at the parent, a slot in the parent's range of the job (mapped to the job's own slot).
template <class P>
int admit_parent_result(const BeatData& h, unsigned dtype, unsigned flags, unsigned count,
                        const JobTable<P>& table, Contribution& c) {
  using namespace layout;
  const int job = table.find_child_job(static_cast<uint16_t>(get_be16(h, kNetaggJobId)),
                                       get_be32(h, kIpv4SrcAddr),
                                       static_cast<uint16_t>(get_be16(h, kUdpSrcPort)));
  if (job < 0) return csr14::kDroppedNotContribution;  // a result, and from no parent of ours
  const JobEntry& entry = table.job(job);
  const unsigned rank = get_be16(h, kNetaggRank);
  if (rank != entry.parent_rank) return csr14::kDroppedRankOutOfRange;
  const uint32_t offset = get_be16(h, kNetaggSlot) - static_cast<uint32_t>(entry.parent_slot_base);
  const uint32_t slot = entry.slot_base + offset;
  if (offset >= entry.slot_count || slot >= static_cast<uint32_t>(P::kSlots))
    return csr14::kDroppedSlotOutOfRange;
  if (!fits_slot<P>(dtype, count, entry)) return csr14::kDroppedCountTooLargeForJob;
  fill(h, job, dtype, flags, rank, slot, count, c);
  c.from_parent = 1;
  return -1;
}

// Every check of one stored frame, in the order of docs/fpga-aggregator.md; agg_udp_port is the
// AGG_UDP_PORT register. Returns the counter index of the first failing check, or -1 with `c`
// filled in.
template <class P>
int admit(const Frame<P>& f, uint32_t agg_udp_port, const JobTable<P>& table, Contribution& c) {
  using namespace layout;
  const BeatData& h = f.beat[0];
  if (f.bytes < static_cast<uint32_t>(kFrameOverhead)) return csr14::kMalformedTruncated;
  if (get_be16(h, kEthEtherType) != kEthertypeIpv4) return csr14::kMalformedNotIpv4;
  if (get_byte(h, kIpv4Version) != kIpVersionIhl ||
      (get_be16(h, kIpv4Flags) & kIpFragmentMask) != 0 || ipv4_sum(h) != 0xFFFFu)
    return csr14::kMalformedBadIpHeader;
  if (get_byte(h, kIpv4Protocol) != kIpProtocolUdp) return csr14::kMalformedNotUdp;
  const uint32_t ip_length = get_be16(h, kIpv4TotalLen);
  if (ip_length < static_cast<uint32_t>(kIpv4HeaderSize + kUdpHeaderSize) ||
      kIpv4 + ip_length > f.bytes)
    return csr14::kMalformedIpLengthMismatch;
  if (get_be16(h, kUdpLength) != ip_length - kIpv4HeaderSize)
    return csr14::kMalformedUdpLengthMismatch;
  if (get_be16(h, kUdpDstPort) != (agg_udp_port & 0xFFFFu)) return csr14::kMalformedWrongPort;
  const uint32_t packet = ip_length - kIpv4HeaderSize - kUdpHeaderSize;  // netagg bytes
  if (packet < static_cast<uint32_t>(kNetaggHeaderSize)) return csr14::kMalformedTruncated;
  if (get_byte(h, kNetaggVersion) != kVersion) return csr14::kMalformedBadVersion;
  const unsigned type = get_byte(h, kNetaggType);
  if (type != kMsgContribution && type != kMsgResult && type != kMsgNotice)
    return csr14::kMalformedBadType;
  const unsigned dtype = get_byte(h, kNetaggDtype);
  if (dtype > kDtypeExactLanes) return csr14::kMalformedBadDtype;
  const unsigned flags = get_byte(h, kNetaggFlags);
  if (flags & kFlagsReservedMask) return csr14::kMalformedBadFlags;
  const unsigned count = get_be16(h, kNetaggCount);
  if (count > kMaxCount) return csr14::kMalformedCountTooLarge;
  if (packet != kNetaggHeaderSize + count * element_size(dtype))
    return csr14::kMalformedLengthMismatch;
  // Ethernet padding is allowed, but not past the beats a port stores.
  if (f.beats > static_cast<uint32_t>(P::kMaxFrameBeats) && f.bytes != kIpv4 + ip_length)
    return csr14::kMalformedLengthMismatch;

  if (type == kMsgNotice) return csr14::kDroppedNotContribution;  // (a parent's, to a child)
  if (!supported_dtype<P>(dtype)) return csr14::kDroppedUnsupportedDtype;
  if (type != kMsgContribution) return admit_parent_result(h, dtype, flags, count, table, c);
  const int job = table.find_job(static_cast<uint16_t>(get_be16(h, kNetaggJobId)));
  if (job < 0) return csr14::kDroppedUnknownJob;
  const JobEntry& entry = table.job(job);
  const unsigned rank = get_be16(h, kNetaggRank);
  if (rank >= entry.workers) return csr14::kDroppedRankOutOfRange;
  const WorkerEntry& worker = table.worker(job, static_cast<int>(rank));
  if (get_be32(h, kIpv4SrcAddr) != worker.ip || get_be16(h, kUdpSrcPort) != worker.udp_port)
    return csr14::kDroppedForeignSource;
  const uint32_t slot = get_be16(h, kNetaggSlot);
  if (slot - entry.slot_base >= entry.slot_count || slot >= static_cast<uint32_t>(P::kSlots))
    return csr14::kDroppedSlotOutOfRange;
  if (!fits_slot<P>(dtype, count, entry)) return csr14::kDroppedCountTooLargeForJob;

  fill(h, job, dtype, flags, rank, slot, count, c);
  c.from_parent = 0;
  return -1;
}

}  // namespace pipeline
}  // namespace fpga
}  // namespace netagg

#endif  // NETAGG_HLS_ADMIT_HPP
