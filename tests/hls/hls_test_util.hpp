// Helpers for the HLS aggregator's tests: a job programmed through the CSR offsets of the
// generated map (netagg/fpga_csr.hpp), contribution frames built by the host's wire encoder
// (wire::encode_frame, independent of the kernel's own frame code), and results decoded by it.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <span>
#include <vector>

#include "netagg/fpga_csr.hpp"
#include "netagg/job.hpp"
#include "netagg/wire.hpp"
#include "netagg_hls/reference.hpp"

namespace netagg::fpga::testing {

namespace csr = netagg::fpga::csr;
using Counter = csr::Counter;

inline constexpr std::uint32_t kAggIp = 0x0A0000FE;  // 10.0.0.254
inline constexpr wire::Mac kAggMac{0x02, 0x6e, 0x61, 0x67, 0x00, 0x01};

// A worker of a test job: its address, MAC and egress port.
struct Worker {
  std::uint32_t ip = 0;
  std::uint16_t udp_port = 0;
  wire::Mac mac{};
  unsigned egress = 0;
  Endpoint endpoint() const { return {ip, udp_port}; }
};

struct Job {
  std::uint16_t id = 1;
  std::uint16_t slot_base = 0, slot_count = 4, elements = 64;
  std::vector<Worker> workers;
};

// n workers at 10.0.<id>.<rank+1>:(30000 + 100 * id + rank), MAC 02:00:00:<id>:00:<rank>, worker r
// on egress port r mod ports.
inline Job make_job(std::uint16_t id, unsigned n, std::uint16_t slot_base, std::uint16_t slot_count,
                    std::uint16_t elements, unsigned ports = 4) {
  Job job{id, slot_base, slot_count, elements, {}};
  for (unsigned r = 0; r < n; ++r) {
    Worker w;
    w.ip = 0x0A000000u | (std::uint32_t{id} << 8) | (r + 1);
    w.udp_port = static_cast<std::uint16_t>(30000 + 100 * id + r);
    w.mac = {0x02, 0x00, 0x00, static_cast<std::uint8_t>(id), 0x00, static_cast<std::uint8_t>(r)};
    w.egress = r % ports;
    job.workers.push_back(w);
  }
  return job;
}

// Writes a CSR sequence with a fresh COMMIT/CONTROL sequence number each time.
template <class Model>
class CsrProgrammer {
 public:
  explicit CsrProgrammer(Model& model) : model_(model) {}

  void set_aggregator(const wire::Mac& mac, std::uint32_t ip, std::uint16_t udp_port) {
    model_.csr_write(csr::kAggMacHi, std::uint32_t{mac[0]} << 8 | mac[1]);
    model_.csr_write(csr::kAggMacLo, std::uint32_t{mac[2]} << 24 | std::uint32_t{mac[3]} << 16 |
                                         std::uint32_t{mac[4]} << 8 | mac[5]);
    model_.csr_write(csr::kAggIp, ip);
    model_.csr_write(csr::kAggUdpPort, udp_port);
  }
  // Removes the entry, stores the workers, then the job (the order driver/fpga uses).
  void install(unsigned entry, const Job& job) {
    model_.csr_write(csr::kJobIndex, entry);
    commit(3);
    for (std::size_t r = 0; r < job.workers.size(); ++r) {
      const Worker& w = job.workers[r];
      model_.csr_write(csr::kWorkerIndex, static_cast<std::uint32_t>(r));
      model_.csr_write(csr::kWorkerIp, w.ip);
      model_.csr_write(csr::kWorkerUdpPort, w.egress << 16 | w.udp_port);
      model_.csr_write(csr::kWorkerMacHi, std::uint32_t{w.mac[0]} << 8 | w.mac[1]);
      model_.csr_write(csr::kWorkerMacLo, std::uint32_t{w.mac[2]} << 24 |
                                              std::uint32_t{w.mac[3]} << 16 |
                                              std::uint32_t{w.mac[4]} << 8 | w.mac[5]);
      commit(2);
    }
    model_.csr_write(csr::kJobId, 0x80000000u | job.id);
    model_.csr_write(csr::kJobWorkers, static_cast<std::uint32_t>(job.workers.size()));
    model_.csr_write(csr::kJobSlots, std::uint32_t{job.slot_count} << 16 | job.slot_base);
    model_.csr_write(csr::kJobElements, job.elements);
    commit(1);
  }
  void remove(unsigned entry) {
    model_.csr_write(csr::kJobIndex, entry);
    commit(3);
  }
  void commit(std::uint32_t command) {
    commit_seq_ = commit_seq_ == 0xFFFF ? 1 : commit_seq_ + 1;
    model_.csr_write(csr::kCommit, commit_seq_ << 16 | command);
  }
  void control(std::uint32_t bits) {
    control_seq_ = control_seq_ == 0xFFFF ? 1 : control_seq_ + 1;
    model_.csr_write(csr::kControl, control_seq_ << 16 | bits);
  }
  // Through COUNTER_INDEX, COUNTER_LO (latches) and COUNTER_HI.
  std::uint64_t read_counter(Counter c) {
    model_.csr_write(csr::kCounterIndex, csr::index(c));
    const std::uint64_t lo = model_.csr_read(csr::kCounterLo);
    return std::uint64_t{model_.csr_read(csr::kCounterHi)} << 32 | lo;
  }

 private:
  Model& model_;
  std::uint32_t commit_seq_ = 0, control_seq_ = 0;
};

inline std::vector<std::byte> encode_packet(const wire::Header& h,
                                            std::span<const std::uint32_t> values) {
  std::vector<std::byte> packet(h.packet_size());
  EXPECT_TRUE(wire::encode_header(h, packet));
  for (std::size_t i = 0; i < h.count; ++i) {
    if (h.dtype == wire::DataType::kBf16)
      wire::store_be16(packet.data() + wire::kHeaderSize + 2 * i,
                       static_cast<std::uint16_t>(values[i]));
    else
      wire::store_be32(packet.data() + wire::kHeaderSize + 4 * i, values[i]);
  }
  return packet;
}

inline std::vector<std::byte> frame_from(const Worker& w, std::span<const std::byte> packet,
                                         std::uint8_t ecn = 0,
                                         std::uint16_t dst_port = wire::kUdpPort) {
  wire::FrameAddress a;
  a.src_mac = w.mac;
  a.dst_mac = kAggMac;
  a.src_ip = w.ip;
  a.dst_ip = kAggIp;
  a.src_port = w.udp_port;
  a.dst_port = dst_port;
  a.ecn = ecn;
  std::vector<std::byte> frame(wire::kFrameOverhead + packet.size());
  EXPECT_EQ(wire::encode_frame(a, packet, frame), frame.size());
  return frame;
}

inline wire::Header contribution_header(const Job& job, std::uint16_t rank, std::uint32_t packet,
                                        std::uint16_t count,
                                        wire::DataType dtype = wire::DataType::kInt32) {
  wire::Header h;
  h.type = wire::MsgType::kContribution;
  h.dtype = dtype;
  h.job_id = job.id;
  h.rank = rank;
  h.slot = static_cast<std::uint16_t>(job.slot_base + packet % job.slot_count);
  h.set = static_cast<std::uint8_t>((packet / job.slot_count) % 2);
  h.count = count;
  h.seq = packet;
  return h;
}

// The contribution of `rank` for global packet index `packet` (slot/set/seq as the engine sets
// them), as a frame from the worker's registered address.
inline std::vector<std::byte> contribution_frame(const Job& job, std::uint16_t rank,
                                                 std::uint32_t packet,
                                                 std::span<const std::uint32_t> values,
                                                 wire::DataType dtype = wire::DataType::kInt32,
                                                 std::int16_t exponent = wire::kExponentNone,
                                                 std::uint8_t ecn = 0) {
  wire::Header h =
      contribution_header(job, rank, packet, static_cast<std::uint16_t>(values.size()), dtype);
  h.exponent = exponent;
  return frame_from(job.workers[rank], encode_packet(h, values), ecn);
}

// A result frame decoded by the host's decoder (fails the test if it does not decode).
struct Result {
  unsigned port = 0;
  wire::FrameAddress address;
  wire::Header header;
  std::vector<std::uint32_t> values;  // 32-bit elements, or bf16 in the low 16 bits
};

inline Result decode_result(const TxFrame& f) {
  Result r;
  r.port = f.port;
  const wire::DecodedFrame d = wire::decode_frame(f.bytes, 0);
  EXPECT_TRUE(d) << "result frame does not decode: " << wire::error_id(d.error);
  if (!d) return r;
  r.address = d.address;
  r.header = d.packet.header;
  for (std::size_t i = 0; i < r.header.count; ++i)
    r.values.push_back(r.header.dtype == wire::DataType::kBf16
                           ? wire::load_be16(d.packet.payload.data() + 2 * i)
                           : wire::load_be32(d.packet.payload.data() + 4 * i));
  return r;
}

inline std::vector<Result> decode_all(const std::vector<TxFrame>& frames) {
  std::vector<Result> out;
  for (const TxFrame& f : frames) out.push_back(decode_result(f));
  return out;
}

// The result frame the aggregator must send to rank `rank`: built by the host's encoder.
inline TxFrame expected_result(const Job& job, std::uint16_t rank, wire::Header h,
                               std::span<const std::uint32_t> values, std::uint8_t ecn = 0) {
  h.type = wire::MsgType::kResult;
  h.rank = rank;
  h.job_id = job.id;
  const Worker& w = job.workers[rank];
  wire::FrameAddress a;
  a.src_mac = kAggMac;
  a.dst_mac = w.mac;
  a.src_ip = kAggIp;
  a.dst_ip = w.ip;
  a.src_port = wire::kUdpPort;
  a.dst_port = w.udp_port;
  a.ecn = ecn;
  const std::vector<std::byte> packet = encode_packet(h, values);
  std::vector<std::byte> frame(wire::kFrameOverhead + packet.size());
  EXPECT_EQ(wire::encode_frame(a, packet, frame), frame.size());
  return {w.egress, frame};
}

// The results of a completed round: one per worker, in rank order.
inline std::vector<TxFrame> expected_multicast(const Job& job, const wire::Header& h,
                                               std::span<const std::uint32_t> values,
                                               std::uint8_t ecn = 0) {
  std::vector<TxFrame> out;
  for (std::size_t r = 0; r < job.workers.size(); ++r)
    out.push_back(expected_result(job, static_cast<std::uint16_t>(r), h, values, ecn));
  return out;
}

inline std::uint32_t bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
inline float from_bits(std::uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

#if defined(__x86_64__) || defined(__i386__)
// The host FPU: addss with a as the destination (Intel's "first source operand"), which picks
// the NaN to return exactly as the spec says.
inline std::uint32_t host_add(std::uint32_t a, std::uint32_t b) {
  float r = from_bits(a);
  const float y = from_bits(b);
  asm("addss %1, %0" : "+x"(r) : "x"(y));
  return bits(r);
}
#else
// Without x86, IEEE addition for non-NaN operands and the spec's NaN rule written out.
inline std::uint32_t host_add(std::uint32_t a, std::uint32_t b) {
  if (std::isnan(from_bits(a))) return a | 0x00400000u;
  if (std::isnan(from_bits(b))) return b | 0x00400000u;
  const float r = from_bits(a) + from_bits(b);
  return std::isnan(r) ? 0xFFC00000u : bits(r);
}
#endif

// bf16 rounding (nearest, ties to even; NaN quieted) written independently of the kernel: the
// two bf16 neighbours of x compared in double.
inline std::uint16_t reference_bf16(std::uint32_t f) {
  const float x = from_bits(f);
  if (x != x) return static_cast<std::uint16_t>((f >> 16) | 0x40);
  const auto lo = static_cast<std::uint16_t>(f >> 16);  // toward zero
  if ((f & 0xFFFFu) == 0) return lo;
  const auto hi = static_cast<std::uint16_t>(lo + 1);  // away from zero (may be infinity)
  const double ax = std::fabs(static_cast<double>(x));
  const double down = std::fabs(static_cast<double>(from_bits(std::uint32_t{lo} << 16)));
  // Past the largest finite bf16 the next value is 2^128 for rounding purposes.
  const double up = (hi & 0x7FFF) == 0x7F80
                        ? std::ldexp(1.0, 128)
                        : std::fabs(static_cast<double>(from_bits(std::uint32_t{hi} << 16)));
  if (ax - down < up - ax) return lo;
  if (ax - down > up - ax) return hi;
  return (lo & 1) ? hi : lo;
}

}  // namespace netagg::fpga::testing

namespace netagg::fpga {
// Readable failure messages: the port and the decoded frame.
inline void PrintTo(const TxFrame& f, std::ostream* os) {
  *os << "{port " << f.port << ", " << f.bytes.size() << " bytes";
  const wire::DecodedFrame d = wire::decode_frame(f.bytes, 0);
  if (!d) {
    *os << ", undecodable: " << wire::error_id(d.error) << "}";
    return;
  }
  const wire::Header& h = d.packet.header;
  *os << ", to " << Endpoint{d.address.dst_ip, d.address.dst_port}.to_string() << " ecn "
      << int(d.address.ecn) << ", " << wire::to_string(h.type) << " job " << h.job_id << " rank "
      << h.rank << " slot " << h.slot << " set " << int(h.set) << " seq " << h.seq << " count "
      << h.count << " exp " << h.exponent << " " << wire::to_string(h.dtype) << ", payload";
  for (std::size_t i = 0; i < std::min<std::size_t>(h.count, 4); ++i)
    *os << " " << std::hex
        << (h.dtype == wire::DataType::kBf16 ? wire::load_be16(d.packet.payload.data() + 2 * i)
                                             : wire::load_be32(d.packet.payload.data() + 4 * i))
        << std::dec;
  *os << (h.count > 4 ? " ...}" : "}");
}
}  // namespace netagg::fpga
