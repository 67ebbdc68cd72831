// SPDX-License-Identifier: Apache-2.0
// Helpers of the FPGA aggregator's tests, the HLS model's (tests/hls) and the RTL's (tests/hw):
// jobs as the driver takes them (JobSpec), programmed through driver/fpga on any CsrBus (the
// RTL harness, or the reference model through ModelBus); contribution frames built by the host's
// wire encoder and results decoded by its decoder, independent of the aggregator's own frame
// code; and arithmetic written independently of both implementations.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <optional>
#include <ostream>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "netagg/fpga/control.hpp"
#include "netagg/fpga/csr_bus.hpp"
#include "netagg/fpga_csr.hpp"
#include "netagg/job.hpp"
#include "netagg/wire.hpp"
#include "netagg_hls/reference.hpp"

namespace netagg::fpga::testing {

namespace csr = netagg::fpga::csr;
using Bytes = std::vector<std::byte>;

inline constexpr std::uint32_t kAggIp = 0x0A0000FE;  // 10.0.0.254
inline constexpr wire::Mac kAggMac{0x02, 0x6e, 0x61, 0x67, 0x00, 0x01};
inline constexpr AggregatorAddress kAggregator{kAggMac, kAggIp, wire::kUdpPort};
// What a slot of the default parameters holds: 16 lanes of 16 beats.
inline constexpr std::uint16_t kSlotElements = 256;

// The reference model's CSR interface as a CsrBus, so that driver/fpga programs it exactly as it
// programs the RTL.
template <class Model>
class ModelBus final : public CsrBus {
 public:
  explicit ModelBus(Model& model) : model_(model) {}
  std::uint32_t read32(std::uint32_t address) override { return model_.csr_read(address); }
  void write32(std::uint32_t address, std::uint32_t value) override {
    model_.csr_write(address, value);
  }

 private:
  Model& model_;
};

// n workers at 10.0.<id>.<rank+1>:(30000 + 100 * id + rank), MAC 02:00:00:<id>:00:<rank>, rank r
// on port r mod ports.
inline JobSpec make_job(std::uint16_t id, unsigned n, std::uint16_t slot_base,
                        std::uint16_t slot_count, std::uint16_t elements = kSlotElements,
                        unsigned ports = 4) {
  JobSpec job;
  job.job_id = id;
  job.slot_base = slot_base;
  job.slot_count = slot_count;
  job.elements_per_packet = elements;
  for (unsigned r = 0; r < n; ++r) {
    WorkerSpec w;
    w.rank = static_cast<std::uint16_t>(r);
    w.address = {0x0A000000u | (std::uint32_t{id} << 8) | (r + 1),
                 static_cast<std::uint16_t>(30000 + 100 * id + r)};
    w.mac = wire::Mac{
        0x02, 0x00, 0x00, static_cast<std::uint8_t>(id), 0x00, static_cast<std::uint8_t>(r)};
    w.switch_port = static_cast<std::uint16_t>(r % ports);
    job.workers.push_back(w);
  }
  return job;
}

// The port the device sends rank `rank`'s results on.
inline unsigned egress_port(const JobSpec& job, std::size_t rank) {
  return worker_port(job.workers.at(rank), 4);
}

// ---- frames ----------------------------------------------------------------------------------

// A packet of h.count values (int32/fp32 bits, or bf16 bits in the low half).
inline Bytes encode_packet(const wire::Header& h, std::span<const std::uint32_t> values) {
  Bytes packet(h.packet_size());
  if (!wire::encode_header(h, packet)) throw std::invalid_argument("header not encodable");
  for (std::size_t i = 0; i < h.count; ++i) {
    if (h.dtype == wire::DataType::kBf16)
      wire::store_be16(packet.data() + wire::kHeaderSize + 2 * i,
                       static_cast<std::uint16_t>(values[i]));
    else
      wire::store_be32(packet.data() + wire::kHeaderSize + 4 * i, values[i]);
  }
  return packet;
}

// A packet from the worker's address to the aggregator's, in an Ethernet/IPv4/UDP frame.
inline Bytes frame_from(const WorkerSpec& from, std::span<const std::byte> packet,
                        std::uint8_t ecn = 0, std::uint16_t dst_port = wire::kUdpPort) {
  wire::FrameAddress a;
  a.src_mac = worker_mac(from);
  a.dst_mac = kAggMac;
  a.src_ip = from.address.ip;
  a.dst_ip = kAggIp;
  a.src_port = from.address.port;
  a.dst_port = dst_port;
  a.ecn = ecn;
  Bytes frame(wire::kFrameOverhead + packet.size());
  if (wire::encode_frame(a, packet, frame) != frame.size())
    throw std::invalid_argument("frame not encodable");
  return frame;
}

// The header of rank `rank`'s contribution to global packet index `packet`, with the slot, set
// and seq the protocol engine gives it.
inline wire::Header contribution_header(const JobSpec& job, std::uint16_t rank,
                                        std::uint32_t packet, std::uint16_t count,
                                        wire::DataType dtype = wire::DataType::kInt32) {
  wire::Header h;
  h.type = wire::MsgType::kContribution;
  h.dtype = dtype;
  h.job_id = job.job_id;
  h.rank = rank;
  h.slot = static_cast<std::uint16_t>(job.slot_base + packet % job.slot_count);
  h.set = static_cast<std::uint8_t>((packet / job.slot_count) % 2);
  h.count = count;
  h.seq = packet;
  return h;
}

// That contribution as a frame from the worker's registered address.
inline Bytes contribution_frame(const JobSpec& job, std::uint16_t rank, std::uint32_t packet,
                                std::span<const std::uint32_t> values,
                                wire::DataType dtype = wire::DataType::kInt32,
                                std::int16_t exponent = wire::kExponentNone, std::uint8_t ecn = 0) {
  wire::Header h =
      contribution_header(job, rank, packet, static_cast<std::uint16_t>(values.size()), dtype);
  h.exponent = exponent;
  return frame_from(job.workers.at(rank), encode_packet(h, values), ecn);
}

// A contribution with every field chosen by the test (designated initializers), also ones no
// correct worker sends.
struct Contribution {
  std::uint16_t job = 1, rank = 0, slot = 0;
  std::uint8_t set = 0;
  std::uint32_t seq = 0;
  wire::DataType dtype = wire::DataType::kInt32;
  std::int16_t exponent = wire::kExponentNone;
  std::uint8_t ecn = 0;
  std::vector<std::uint32_t> values{};  // int32/fp32 bits, or bf16 bits in the low half
  wire::MsgType type = wire::MsgType::kContribution;
  std::uint32_t epoch = 0;
  std::uint8_t fresh = 0;
  std::uint8_t recovery = 0;
};

inline Bytes encode_packet(const Contribution& c) {
  wire::Header h;
  h.type = c.type;
  h.dtype = c.dtype;
  h.set = c.set;
  h.job_id = c.job;
  h.rank = c.rank;
  h.slot = c.slot;
  h.count = static_cast<std::uint16_t>(c.values.size());
  h.exponent = c.exponent;
  h.seq = c.seq;
  h.epoch = c.epoch;
  h.fresh = c.fresh;
  h.recovery = c.recovery;
  return encode_packet(h, c.values);
}

// The contribution as a frame from the registered address of rank c.rank of `job`.
inline Bytes contribution_frame(const JobSpec& job, const Contribution& c) {
  return frame_from(job.workers.at(c.rank), encode_packet(c), c.ecn);
}

// ---- results ---------------------------------------------------------------------------------

struct Result {
  unsigned port = 0;
  wire::FrameAddress address;
  wire::Header header;
  std::vector<std::uint32_t> values;  // 32-bit elements, or bf16 in the low 16 bits
  Bytes bytes;
};

// An egress frame decoded by the host's decoder; throws if it does not decode.
inline Result decode_result(unsigned port, std::span<const std::byte> bytes) {
  const wire::DecodedFrame d = wire::decode_frame(bytes, 0);
  if (!d)
    throw std::runtime_error(
        fmt::format("the frame on port {} does not decode: {}", port, wire::error_id(d.error)));
  Result r;
  r.port = port;
  r.address = d.address;
  r.header = d.packet.header;
  r.bytes.assign(bytes.begin(), bytes.end());
  const std::byte* p = d.packet.payload.data();
  for (std::size_t i = 0; i < r.header.count; ++i)
    r.values.push_back(r.header.dtype == wire::DataType::kBf16 ? wire::load_be16(p + 2 * i)
                                                               : wire::load_be32(p + 4 * i));
  return r;
}
// Any frame with a port and bytes: the model's TxFrame, the harness's EgressFrame.
template <class Frame>
Result decode_result(const Frame& f) {
  return decode_result(f.port, f.bytes);
}
template <class Frame>
std::vector<Result> decode_all(const std::vector<Frame>& frames) {
  std::vector<Result> out;
  for (const Frame& f : frames) out.push_back(decode_result(f));
  return out;
}

// The result frame the aggregator must send to rank `rank`: built by the host's encoder.
inline TxFrame expected_result(const JobSpec& job, std::uint16_t rank, wire::Header h,
                               std::span<const std::uint32_t> values, std::uint8_t ecn = 0) {
  h.type = wire::MsgType::kResult;
  h.fresh = h.recovery = 0;  // results never carry them; the epoch is the contribution's
  h.rank = rank;
  h.job_id = job.job_id;
  const WorkerSpec& w = job.workers.at(rank);
  wire::FrameAddress a;
  a.src_mac = kAggMac;
  a.dst_mac = worker_mac(w);
  a.src_ip = kAggIp;
  a.dst_ip = w.address.ip;
  a.src_port = wire::kUdpPort;
  a.dst_port = w.address.port;
  a.ecn = ecn;
  const Bytes packet = encode_packet(h, values);
  Bytes frame(wire::kFrameOverhead + packet.size());
  if (wire::encode_frame(a, packet, frame) != frame.size())
    throw std::invalid_argument("result frame not encodable");
  return {egress_port(job, rank), frame};
}

// The results of a completed round: one per worker, in rank order.
inline std::vector<TxFrame> expected_multicast(const JobSpec& job, const wire::Header& h,
                                               std::span<const std::uint32_t> values,
                                               std::uint8_t ecn = 0) {
  std::vector<TxFrame> out;
  for (std::size_t r = 0; r < job.workers.size(); ++r)
    out.push_back(expected_result(job, static_cast<std::uint16_t>(r), h, values, ecn));
  return out;
}

// ---- notices ---------------------------------------------------------------------------------

// The notice reason of a drop counter (the drop of the same name), if that drop has one.
inline std::optional<wire::NoticeReason> notice_reason(csr::Counter c) {
  const std::string_view name = csr::name(c);
  for (const auto& [reason, reason_name] : wire::kNoticeReasonNames)
    if (name == fmt::format("dropped_{}", reason_name)) return reason;
  return std::nullopt;
}

// The notice the aggregator must send for `dropped`, a frame it took on port `port`: built by
// the host's encoder (wire::encode_notice), back out of that port with the frame's MAC, IPv4 and
// UDP addresses swapped and ECN 0. `waiting`: a duplicate's ranks still due.
inline TxFrame expected_notice(unsigned port, std::span<const std::byte> dropped,
                               wire::NoticeReason reason,
                               std::span<const std::uint32_t> waiting = {}) {
  const wire::DecodedFrame d = wire::decode_frame(dropped, 0);
  if (!d) throw std::invalid_argument("expected_notice: the dropped frame does not decode");
  Bytes packet(wire::kHeaderSize + 4 * (1 + waiting.size()));
  if (wire::encode_notice(d.packet.header, reason, waiting, packet) != packet.size())
    throw std::invalid_argument("notice not encodable");
  wire::FrameAddress a;
  a.src_mac = d.address.dst_mac;
  a.dst_mac = d.address.src_mac;
  a.src_ip = d.address.dst_ip;
  a.dst_ip = d.address.src_ip;
  a.src_port = d.address.dst_port;
  a.dst_port = d.address.src_port;
  a.ecn = 0;
  Bytes frame(wire::kFrameOverhead + packet.size());
  if (wire::encode_frame(a, packet, frame) != frame.size())
    throw std::invalid_argument("notice frame not encodable");
  return {port, frame};
}
inline TxFrame expected_notice(unsigned port, std::span<const std::byte> dropped,
                               wire::NoticeReason reason, std::uint32_t waiting) {
  const std::uint32_t words[1] = {waiting};
  return expected_notice(port, dropped, reason, words);
}

// ---- arithmetic ------------------------------------------------------------------------------

inline std::uint32_t bits(float x) { return std::bit_cast<std::uint32_t>(x); }
inline float from_bits(std::uint32_t u) { return std::bit_cast<float>(u); }

#if defined(__x86_64__) || defined(__i386__)
// fp32 a + b on the host FPU: addss with a as the destination (Intel's "first source operand"),
// which picks the NaN to return exactly as the spec says. Inline assembly: a fixed operand
// order, and nothing for the compiler to fold.
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
