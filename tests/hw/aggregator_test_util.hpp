// Helpers of the RTL aggregator tests: jobs programmed through the CSRs (the same writes on the
// RTL harness and on the HLS reference model), contribution frames built by the host's wire
// encoder, results decoded by the host's decoder, and the comparison of the RTL's egress with
// the reference model's.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "aggregator_harness.hpp"
#include "netagg/fpga_csr.hpp"
#include "netagg/wire.hpp"
#include "netagg_hls/reference.hpp"

namespace netagg::rtltest {

namespace csr = netagg::fpga::csr;
using Model = netagg::fpga::ReferenceModel<>;

inline constexpr std::uint32_t kAggIp = 0x0A0000FE;  // 10.0.0.254
inline constexpr wire::Mac kAggMac{0x02, 0x6e, 0x61, 0x67, 0x00, 0x01};
inline constexpr unsigned kLanes = 16;
inline constexpr unsigned kMaxBeats = 16;
inline constexpr unsigned kSlots = 64;
inline constexpr unsigned kMaxElements = kLanes * kMaxBeats;

constexpr unsigned counter_index(csr::Counter c) { return csr::index(c); }

struct Worker {
  std::uint32_t ip = 0;
  std::uint16_t udp_port = 0;
  wire::Mac mac{};
  unsigned egress = 0;
};

struct Job {
  std::uint16_t id = 1;
  std::uint16_t slot_base = 0, slot_count = 4, elements = kMaxElements;
  std::vector<Worker> workers;
};

// n workers at 10.<id>.0.<rank+1>:(40000 + 100 * id + rank), MAC 02:00:00:<id>:00:<rank>,
// rank r's results on egress port r mod ports.
inline Job make_job(std::uint16_t id, unsigned n, std::uint16_t slot_base, std::uint16_t slot_count,
                    std::uint16_t elements = kMaxElements, unsigned ports = kPorts) {
  Job job{id, slot_base, slot_count, elements, {}};
  for (unsigned r = 0; r < n; ++r) {
    Worker w;
    w.ip = 0x0A000000u | (std::uint32_t{id} << 16) | (r + 1);
    w.udp_port = static_cast<std::uint16_t>(40000 + 100 * id + r);
    w.mac = {0x02, 0x00, 0x00, static_cast<std::uint8_t>(id), 0x00, static_cast<std::uint8_t>(r)};
    w.egress = r % ports;
    job.workers.push_back(w);
  }
  return job;
}

// CSR programming, the same on the RTL harness and on the reference model (both have
// csr_write/csr_read). Each COMMIT/CONTROL write uses the next sequence number.
template <class Bus>
class Programmer {
 public:
  explicit Programmer(Bus& bus) : bus_(bus) {}

  void set_aggregator(const wire::Mac& mac = kAggMac, std::uint32_t ip = kAggIp,
                      std::uint16_t udp_port = wire::kUdpPort) {
    bus_.csr_write(csr::kAggMacHi, std::uint32_t{mac[0]} << 8 | mac[1]);
    bus_.csr_write(csr::kAggMacLo, std::uint32_t{mac[2]} << 24 | std::uint32_t{mac[3]} << 16 |
                                       std::uint32_t{mac[4]} << 8 | mac[5]);
    bus_.csr_write(csr::kAggIp, ip);
    bus_.csr_write(csr::kAggUdpPort, udp_port);
  }
  // Removes the entry, stores the workers, then the job (the order driver/fpga uses).
  void install(unsigned entry, const Job& job) {
    bus_.csr_write(csr::kJobIndex, entry);
    commit(3);
    for (std::size_t r = 0; r < job.workers.size(); ++r) store_worker(entry, r, job.workers[r]);
    bus_.csr_write(csr::kJobIndex, entry);
    bus_.csr_write(csr::kJobId, 0x80000000u | job.id);
    bus_.csr_write(csr::kJobWorkers, static_cast<std::uint32_t>(job.workers.size()));
    bus_.csr_write(csr::kJobSlots, std::uint32_t{job.slot_count} << 16 | job.slot_base);
    bus_.csr_write(csr::kJobElements, job.elements);
    commit(1);
  }
  void store_worker(unsigned entry, std::size_t rank, const Worker& w) {
    bus_.csr_write(csr::kJobIndex, entry);
    bus_.csr_write(csr::kWorkerIndex, static_cast<std::uint32_t>(rank));
    bus_.csr_write(csr::kWorkerIp, w.ip);
    bus_.csr_write(csr::kWorkerUdpPort, w.egress << 16 | w.udp_port);
    bus_.csr_write(csr::kWorkerMacLo, std::uint32_t{w.mac[2]} << 24 |
                                          std::uint32_t{w.mac[3]} << 16 |
                                          std::uint32_t{w.mac[4]} << 8 | w.mac[5]);
    bus_.csr_write(csr::kWorkerMacHi, std::uint32_t{w.mac[0]} << 8 | w.mac[1]);
    commit(2);
  }
  void remove(unsigned entry) {
    bus_.csr_write(csr::kJobIndex, entry);
    commit(3);
  }
  void commit(std::uint32_t command) {
    const std::uint32_t seq = ((bus_.csr_read(csr::kCommit) >> 16) + 1) & 0xFFFF;
    bus_.csr_write(csr::kCommit, seq << 16 | command);
    wait_idle();
  }
  void control(std::uint32_t bits) {
    const std::uint32_t seq = ((bus_.csr_read(csr::kControl) >> 16) + 1) & 0xFFFF;
    bus_.csr_write(csr::kControl, seq << 16 | bits);
    wait_idle();
  }
  void soft_reset() { control(1); }
  void clear_counters() { control(2); }

 private:
  void wait_idle() {
    for (int i = 0; i < 100000; ++i)
      if ((bus_.csr_read(csr::kStatus) & 1) == 0) return;
    throw std::runtime_error("STATUS.busy stays set");
  }
  Bus& bus_;
};

// ---- frames ------------------------------------------------------------------------------

struct Contribution {
  std::uint16_t job = 1, rank = 0, slot = 0;
  std::uint8_t set = 0;
  std::uint32_t seq = 0;
  wire::DataType dtype = wire::DataType::kInt32;
  std::int16_t exponent = wire::kExponentNone;
  std::uint8_t ecn = 0;
  std::vector<std::uint32_t> values{};  // int32/fp32 bits, or bf16 bits in the low half
  wire::MsgType type = wire::MsgType::kContribution;
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
  Bytes packet(h.packet_size());
  if (!wire::encode_header(h, packet)) throw std::invalid_argument("header not encodable");
  std::byte* p = packet.data() + wire::kHeaderSize;
  for (std::size_t i = 0; i < c.values.size(); ++i) {
    if (c.dtype == wire::DataType::kBf16)
      wire::store_be16(p + 2 * i, static_cast<std::uint16_t>(c.values[i]));
    else
      wire::store_be32(p + 4 * i, c.values[i]);
  }
  return packet;
}

inline Bytes frame_from(const Worker& from, std::span<const std::byte> packet, std::uint8_t ecn = 0,
                        std::uint16_t dst_port = wire::kUdpPort) {
  wire::FrameAddress a;
  a.src_mac = from.mac;
  a.dst_mac = kAggMac;
  a.src_ip = from.ip;
  a.dst_ip = kAggIp;
  a.src_port = from.udp_port;
  a.dst_port = dst_port;
  a.ecn = ecn;
  Bytes frame(wire::kFrameOverhead + packet.size());
  if (wire::encode_frame(a, packet, frame) != frame.size())
    throw std::invalid_argument("frame not encodable");
  return frame;
}

// A contribution of rank c.rank of `job`, from that worker's registered address.
inline Bytes contribution_frame(const Job& job, const Contribution& c) {
  return frame_from(job.workers.at(c.rank), encode_packet(c), c.ecn);
}

struct Result {
  unsigned port = 0;
  wire::Header header;
  wire::FrameAddress address;
  std::vector<std::uint32_t> values;  // bf16 in the low half
  Bytes bytes;
};

// Decodes an egress frame with the host's decoder (the destination port is the worker's).
inline Result decode_result(const EgressFrame& f) {
  const auto d = wire::decode_frame(f.bytes, 0);
  if (!d)
    throw std::runtime_error(fmt::format("egress frame on port {} does not decode: {}", f.port,
                                         wire::error_id(d.error)));
  Result r;
  r.port = f.port;
  r.header = d.packet.header;
  r.address = d.address;
  r.bytes = f.bytes;
  const std::byte* p = d.packet.payload.data();
  for (std::size_t i = 0; i < r.header.count; ++i)
    r.values.push_back(r.header.dtype == wire::DataType::kBf16 ? wire::load_be16(p + 2 * i)
                                                               : wire::load_be32(p + 4 * i));
  return r;
}

inline std::uint32_t f2u(float f) { return std::bit_cast<std::uint32_t>(f); }
inline float u2f(std::uint32_t u) { return std::bit_cast<float>(u); }

// ---- the reference model fed the RTL's decisions ------------------------------------------

// Canonical order of egress frames for comparing two aggregators: per port in order, but copies
// of one result (same job, slot, set, seq) that follow each other sorted by rank, so that the
// order of several resends answered together does not matter.
inline std::uint64_t result_key(const Bytes& b) {  // job id, flags, slot, seq
  if (b.size() < 64) return 0;
  std::uint64_t k = 0;
  for (std::size_t i : {46, 47, 45, 50, 51, 56, 57, 58, 59}) k = k << 8 | std::uint64_t(b[i]);
  return k;
}
inline unsigned result_rank(const Bytes& b) {
  return b.size() < 64 ? 0 : (unsigned(b[48]) << 8 | unsigned(b[49]));
}
inline std::map<unsigned, std::vector<Bytes>> canonical(
    const std::vector<std::pair<unsigned, Bytes>>& frames) {
  std::map<unsigned, std::vector<Bytes>> per_port;
  for (const auto& [port, bytes] : frames) per_port[port].push_back(bytes);
  for (auto& [port, list] : per_port) {
    std::size_t i = 0;
    while (i < list.size()) {
      std::size_t j = i + 1;
      while (j < list.size() && result_key(list[j]) == result_key(list[i])) ++j;
      std::stable_sort(
          list.begin() + static_cast<std::ptrdiff_t>(i),
          list.begin() + static_cast<std::ptrdiff_t>(j),
          [](const Bytes& a, const Bytes& b) { return result_rank(a) < result_rank(b); });
      i = j;
    }
  }
  return per_port;
}

// One line about an egress frame, for failure messages.
inline std::string describe(const Bytes& b) {
  const auto d = wire::decode_frame(b, 0);
  if (!d) return fmt::format("{} bytes, undecodable ({})", b.size(), wire::error_id(d.error));
  const wire::Header& h = d.packet.header;
  std::uint32_t sum = 0;
  for (std::byte x : d.packet.payload) sum = sum * 31 + std::uint32_t(x);
  return fmt::format("job {} rank {} slot {} set {} seq {} count {} exp {} ecn {} payload#{:08x}",
                     h.job_id, h.rank, h.slot, h.set, h.seq, h.count, h.exponent, d.address.ecn,
                     sum);
}

// Empty if both have the same frames per port (canonical order); else the first differences.
inline std::string egress_difference(const std::vector<std::pair<unsigned, Bytes>>& rtl,
                                     const std::vector<std::pair<unsigned, Bytes>>& model) {
  const auto a = canonical(rtl), b = canonical(model);
  std::string out;
  int shown = 0;
  for (unsigned port = 0; port < kPorts; ++port) {
    static const std::vector<Bytes> kNone;
    const auto& x = a.count(port) ? a.at(port) : kNone;
    const auto& y = b.count(port) ? b.at(port) : kNone;
    if (x.size() != y.size())
      out += fmt::format("port {}: RTL sent {} frames, the model {}\n", port, x.size(), y.size());
    for (std::size_t i = 0; i < std::max(x.size(), y.size()) && shown < 6; ++i) {
      const std::string dx = i < x.size() ? describe(x[i]) : "-";
      const std::string dy = i < y.size() ? describe(y[i]) : "-";
      if (i < x.size() && i < y.size() && x[i] == y[i]) continue;
      out += fmt::format("port {} frame {}:\n  RTL   {}\n  model {}\n", port, i, dx, dy);
      ++shown;
    }
  }
  return out;
}

// Feeds the reference model what the RTL took, in the same groups and order. Returns the
// model's egress frames.
template <class ReferenceModel>
std::vector<std::pair<unsigned, Bytes>> replay(ReferenceModel& model,
                                               const std::vector<Taken>& decisions) {
  std::vector<std::pair<unsigned, Bytes>> out;
  for (const Taken& t : decisions) {
    for (const auto& [port, bytes] : t.dropped)
      for (auto& f : model.process_frame(port, bytes)) out.emplace_back(f.port, f.bytes);
    if (!t.group.empty()) {
      std::vector<fpga::RxFrame> group;
      for (const auto& [port, bytes] : t.group) group.push_back({port, bytes});
      for (auto& f : model.process_group(group)) out.emplace_back(f.port, f.bytes);
    }
  }
  return out;
}

inline std::vector<std::pair<unsigned, Bytes>> as_pairs(const std::vector<EgressFrame>& frames) {
  std::vector<std::pair<unsigned, Bytes>> out;
  for (const auto& f : frames) out.emplace_back(f.port, f.bytes);
  return out;
}

}  // namespace netagg::rtltest
