// SPDX-License-Identifier: Apache-2.0
// C simulation testbench of the synthesized top netagg_aggregator (Vitis HLS `csim` and
// `cosim`, hls/build.tcl; also built with g++ and run by ctest as hls_csim_tb). It plays the host:
// the s_axilite registers are the arguments it passes, frames go into rx and come out of tx.
//
//   1. program job 7: four workers, one per port, slots [8, 12), 32 elements per packet
//   2. int32: all four ports present a contribution in one iteration; every worker gets the sum
//   3. fp32: ports 0 and 1 in one iteration, ports 2 and 3 in the next; the result must be
//      (x0 + x1) + (x2 + x3) in fp32, the adder tree's order
//   4. a retransmission of rank 1 to the completed round: the stored result to port 1 alone
//   5. counters through COUNTER_INDEX / COUNTER_LO
// and the job table entry read back through JOB_ENTRY_*.
// Exit status 0 when every check passed. Kernel-style C++14 like the top, no netagg host code
// (Vitis compiles the testbench on its own).
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <vector>

#include "netagg_aggregator.hpp"
#include "netagg_hls/csr14.hpp"

namespace {

using netagg::fpga::AxisBeat;
using netagg::fpga::NUM_PORTS;
namespace csr = netagg::fpga::csr14;

const uint16_t kJobId = 7;
const uint16_t kSlotBase = 8;
const int kWorkers = 4;
const int kCount = 20;  // two payload beats
const uint32_t kAggIp = 0x0A0000FEu;
const uint32_t kWorkerIpBase = 0x0A000001u;
const uint16_t kWorkerPortBase = 31000;

int failures = 0;

void expect(bool ok, const char* what) {
  if (!ok) {
    printf("FAIL: %s\n", what);
    ++failures;
  }
}

struct Registers {
  uint32_t control = 0, agg_mac_lo = 0x00000001u, agg_mac_hi = 0x0226u, agg_ip = kAggIp,
           agg_udp_port = 20033, job_index = 0, job_id = 0, job_workers = 0, job_slots = 0,
           job_elements = 0, worker_index = 0, worker_ip = 0, worker_udp_port = 0,
           worker_mac_lo = 0, worker_mac_hi = 0, commit = 0, counter_index = 0, job_parent_id = 0,
           job_parent_rank = 0, job_parent_slots = 0, job_parent_ip = 0, job_parent_udp_port = 0,
           job_parent_mac_lo = 0, job_parent_mac_hi = 0;
  uint32_t version = 0, features = 0, status = 0, counter_lo = 0, counter_hi = 0, job_entry_id = 0,
           job_entry_workers = 0, job_entry_slots = 0, job_entry_elements = 0,
           job_entry_parent_id = 0;
  uint32_t commit_seq = 0;
};

hls::stream<AxisBeat> rx[NUM_PORTS];
hls::stream<AxisBeat> tx[NUM_PORTS];

void run(Registers& r) {
  netagg_aggregator(rx, tx, r.control, r.agg_mac_lo, r.agg_mac_hi, r.agg_ip, r.agg_udp_port,
                    r.job_index, r.job_id, r.job_workers, r.job_slots, r.job_elements,
                    r.worker_index, r.worker_ip, r.worker_udp_port, r.worker_mac_lo,
                    r.worker_mac_hi, r.commit, r.counter_index, r.job_parent_id, r.job_parent_rank,
                    r.job_parent_slots, r.job_parent_ip, r.job_parent_udp_port, r.job_parent_mac_lo,
                    r.job_parent_mac_hi, &r.version, &r.features, &r.status, &r.counter_lo,
                    &r.counter_hi, &r.job_entry_id, &r.job_entry_workers, &r.job_entry_slots,
                    &r.job_entry_elements, &r.job_entry_parent_id);
}

void commit(Registers& r, uint32_t command) {
  ++r.commit_seq;
  r.commit = r.commit_seq << 16 | command;
  run(r);
}

void put16(std::vector<uint8_t>& f, size_t at, unsigned v) {
  f[at] = static_cast<uint8_t>(v >> 8);
  f[at + 1] = static_cast<uint8_t>(v);
}
void put32(std::vector<uint8_t>& f, size_t at, uint32_t v) {
  put16(f, at, v >> 16);
  put16(f, at + 2, v & 0xFFFFu);
}
uint32_t get32(const std::vector<uint8_t>& f, size_t at) {
  return static_cast<uint32_t>(f[at]) << 24 | static_cast<uint32_t>(f[at + 1]) << 16 |
         static_cast<uint32_t>(f[at + 2]) << 8 | f[at + 3];
}

// A contribution frame of rank `rank` (its registered address), 32-bit elements.
std::vector<uint8_t> contribution(int rank, unsigned dtype, unsigned set, uint32_t seq,
                                  const uint32_t* values) {
  std::vector<uint8_t> f(64 + 4 * kCount, 0);
  put16(f, 0, 0x0226);
  put32(f, 2, 0x00000001u);  // to the aggregator's MAC
  put16(f, 6, 0x0200);
  put32(f, 8, static_cast<uint32_t>(rank));
  put16(f, 12, 0x0800);
  f[14] = 0x45;
  put16(f, 16, static_cast<unsigned>(f.size() - 14));
  put16(f, 20, 0x4000);
  f[22] = 64;
  f[23] = 17;
  put32(f, 26, kWorkerIpBase + static_cast<uint32_t>(rank));
  put32(f, 30, kAggIp);
  uint32_t sum = 0;
  for (int i = 14; i < 34; i += 2) sum += static_cast<uint32_t>(f[i]) << 8 | f[i + 1];
  while (sum >> 16) sum = (sum & 0xFFFFu) + (sum >> 16);
  put16(f, 24, ~sum & 0xFFFFu);
  put16(f, 34, kWorkerPortBase + static_cast<unsigned>(rank));
  put16(f, 36, 20033);
  put16(f, 38, static_cast<unsigned>(f.size() - 34));
  f[42] = 1;  // version
  f[43] = 1;  // contribution
  f[44] = static_cast<uint8_t>(dtype);
  f[45] = static_cast<uint8_t>(set);
  put16(f, 46, kJobId);
  put16(f, 48, static_cast<unsigned>(rank));
  put16(f, 50, kSlotBase + 1);
  put16(f, 52, kCount);
  put16(f, 54, 0x8000);  // no exponent
  put32(f, 56, seq);
  for (int i = 0; i < kCount; ++i) put32(f, 64 + 4 * static_cast<size_t>(i), values[i]);
  return f;
}

void send(int port, const std::vector<uint8_t>& f) {
  const size_t beats = (f.size() + 63) / 64;
  for (size_t b = 0; b < beats; ++b) {
    AxisBeat w;
    w.data = 0;
    unsigned len = 0;
    for (size_t i = 0; i < 64 && b * 64 + i < f.size(); ++i, ++len)
      w.data.range(8 * i + 7, 8 * i) = f[b * 64 + i];
    w.keep = len == 64 ? ~0ULL : (1ULL << len) - 1;
    w.strb = w.keep;
    w.last = b + 1 == beats;
    rx[port].write(w);
  }
}

// The next frame on tx[port], or an empty vector.
std::vector<uint8_t> receive(int port) {
  std::vector<uint8_t> f;
  while (!tx[port].empty()) {
    const AxisBeat w = tx[port].read();
    for (int i = 0; i < 64; ++i)
      if ((w.keep.to_uint64() >> i) & 1)
        f.push_back(static_cast<uint8_t>(w.data.range(8 * i + 7, 8 * i).to_uint64()));
    if (w.last) break;
  }
  return f;
}

uint32_t float_bits(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  return u;
}

void check_result(int port, int rank, uint32_t seq, const uint32_t* expected, const char* what) {
  const std::vector<uint8_t> f = receive(port);
  char msg[160];
  snprintf(msg, sizeof msg, "%s: result frame for rank %d on port %d", what, rank, port);
  expect(f.size() == 64 + 4 * static_cast<size_t>(kCount), msg);
  if (f.size() != 64 + 4 * static_cast<size_t>(kCount)) return;
  expect(get32(f, 30) == kWorkerIpBase + static_cast<uint32_t>(rank), "result addressed to worker");
  expect(f[43] == 2 && (f[48] << 8 | f[49]) == rank && get32(f, 56) == seq, "result header");
  bool same = true;
  for (int i = 0; i < kCount; ++i)
    same = same && get32(f, 64 + 4 * static_cast<size_t>(i)) == expected[i];
  snprintf(msg, sizeof msg, "%s: payload for rank %d", what, rank);
  expect(same, msg);
}

uint64_t read_counter(Registers& r, uint32_t index) {
  r.counter_index = index;
  run(r);
  return static_cast<uint64_t>(r.counter_hi) << 32 | r.counter_lo;
}

}  // namespace

int main() {
  Registers r;
  run(r);
  expect(r.version == (1u << 16 | 1u), "VERSION");
  expect((r.features & 0xF) == static_cast<uint32_t>(NUM_PORTS), "FEATURES.NUM_PORTS");

  for (int rank = 0; rank < kWorkers; ++rank) {
    r.worker_index = static_cast<uint32_t>(rank);
    r.worker_ip = kWorkerIpBase + static_cast<uint32_t>(rank);
    r.worker_udp_port = static_cast<uint32_t>(rank) << 16 | (kWorkerPortBase + rank);
    r.worker_mac_hi = 0x0200;
    r.worker_mac_lo = static_cast<uint32_t>(rank);
    commit(r, csr::kCommitStoreWorker);
  }
  r.job_id = csr::kJobIdValid | kJobId;
  r.job_workers = kWorkers;
  r.job_slots = 4u << 16 | kSlotBase;
  r.job_elements = 32;
  expect(r.job_entry_id == 0, "JOB_ENTRY_ID of an empty entry");
  commit(r, csr::kCommitStoreJob);
  // The entry reads back as stored (JOB_ENTRY_*); another entry is empty.
  expect(r.job_entry_id == (csr::kJobEntryValid | kJobId), "JOB_ENTRY_ID");
  expect(r.job_entry_workers == static_cast<uint32_t>(kWorkers), "JOB_ENTRY_WORKERS");
  expect(r.job_entry_slots == (4u << 16 | kSlotBase), "JOB_ENTRY_SLOTS");
  expect(r.job_entry_elements == 32, "JOB_ENTRY_ELEMENTS");
  expect(r.job_entry_parent_id == 0, "JOB_ENTRY_PARENT_ID");
  r.job_index = 1;
  run(r);
  expect(r.job_entry_id == 0 && r.job_entry_slots == 0, "JOB_ENTRY_* of entry 1");
  r.job_index = 0;

  // int32, one iteration: the tree adds all four ports.
  uint32_t v[kWorkers][kCount], sum[kCount];
  for (int i = 0; i < kCount; ++i) {
    sum[i] = 0;
    for (int w = 0; w < kWorkers; ++w) {
      v[w][i] = static_cast<uint32_t>((w + 1) * 1000003 * (i + 7)) ^ (w == 2 ? 0x80000000u : 0u);
      sum[i] += v[w][i];  // wraps
    }
  }
  for (int w = 0; w < kWorkers; ++w) send(w, contribution(w, 0, 0, 1, v[w]));
  run(r);
  for (int w = 0; w < kWorkers; ++w) check_result(w, w, 1, sum, "int32");

  // fp32 in two iterations: (x0 + x1) + (x2 + x3).
  float x[kWorkers][kCount];
  uint32_t expected[kCount];
  for (int i = 0; i < kCount; ++i) {
    for (int w = 0; w < kWorkers; ++w) {
      x[w][i] = (w % 2 ? -1.0f : 1.0f) * (1.0f + static_cast<float>(i)) * (w == 0 ? 1e8f : 0.37f);
      v[w][i] = float_bits(x[w][i]);
    }
    expected[i] = float_bits((x[0][i] + x[1][i]) + (x[2][i] + x[3][i]));
  }
  for (int w = 0; w < 2; ++w) send(w, contribution(w, 1, 1, 5, v[w]));
  run(r);
  for (int w = 0; w < kWorkers; ++w)
    expect(tx[w].empty(), "no result before the last contribution");
  for (int w = 2; w < 4; ++w) send(w, contribution(w, 1, 1, 5, v[w]));
  run(r);
  for (int w = 0; w < kWorkers; ++w) check_result(w, w, 5, expected, "fp32");

  // A retransmission to the completed round: the stored result to rank 1 alone.
  send(1, contribution(1, 1, 1, 5, v[1]));
  run(r);
  check_result(1, 1, 5, expected, "resend");
  for (int w = 0; w < kWorkers; ++w) expect(tx[w].empty(), "a resend goes to the requester only");

  expect(read_counter(r, csr::kFramesIn) == 9, "frames_in");
  expect(read_counter(r, csr::kAggregated) == 8, "aggregated");
  expect(read_counter(r, csr::kCompletions) == 2, "completions");
  expect(read_counter(r, csr::kResultsResent) == 1, "results_resent");
  expect(read_counter(r, csr::kFramesOut) == 9, "frames_out");

  if (failures) {
    printf("netagg_aggregator_tb: %d checks FAILED\n", failures);
    return 1;
  }
  printf("netagg_aggregator_tb: all checks passed\n");
  return 0;
}
