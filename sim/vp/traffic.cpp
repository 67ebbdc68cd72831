// SPDX-License-Identifier: Apache-2.0
#include "traffic.hpp"

#include <algorithm>
#include <bit>
#include <random>
#include <set>

#include <fmt/format.h>

#include "fpga_test_util.hpp"
#include "netagg/error.hpp"
#include "netagg/fpga/control.hpp"

namespace netagg::vp {

namespace t = netagg::fpga::testing;

wire::DataType parse_dtype(const std::string& name) {
  if (name == "fp32") return wire::DataType::kFp32;
  if (name == "bf16") return wire::DataType::kBf16;
  if (name == "int32") return wire::DataType::kInt32;
  throw Error(Errc::kInvalidArgument,
              fmt::format("unknown data type '{}' (fp32, bf16, int32)", name));
}

Traffic::Traffic(std::vector<JobPattern> patterns, std::uint64_t seed)
    : patterns_(std::move(patterns)), seed_(seed) {
  if (patterns_.empty()) throw Error(Errc::kInvalidArgument, "traffic: no jobs");
  std::set<std::uint16_t> ids;
  std::vector<bool> slots(65536, false);
  for (std::size_t j = 0; j < patterns_.size(); ++j) {
    const JobPattern& p = patterns_[j];
    if (p.workers < 1 || p.workers > 32)
      throw Error(Errc::kInvalidArgument,
                  fmt::format("job {}: {} workers (1..32)", p.job_id, p.workers));
    if (p.elements > wire::kMaxCount)
      throw Error(Errc::kInvalidArgument, fmt::format("job {}: {} elements per packet (0..{})",
                                                      p.job_id, p.elements, wire::kMaxCount));
    if (p.packets < 1 || p.slot_count < 1)
      throw Error(Errc::kInvalidArgument,
                  fmt::format("job {}: needs at least one packet and one slot", p.job_id));
    if (!ids.insert(p.job_id).second)
      throw Error(Errc::kInvalidArgument, fmt::format("job id {} given twice", p.job_id));
    for (unsigned s = p.slot_base; s < unsigned{p.slot_base} + p.slot_count; ++s) {
      if (s >= slots.size() || slots[s])
        throw Error(Errc::kInvalidArgument, fmt::format("job {}: slot {} overlaps", p.job_id, s));
      slots[s] = true;
    }
    // A header-only job still declares the slot size its data packets would have.
    const std::uint16_t per_packet = p.elements == 0 ? std::uint16_t{16} : p.elements;
    jobs_.push_back(t::make_job(p.job_id, p.workers, p.slot_base, p.slot_count, per_packet, 4));
    for (unsigned r = 0; r < p.workers; ++r) {
      Worker w;
      w.job = j;
      w.rank = static_cast<std::uint16_t>(r);
      w.received.assign(p.packets, false);
      port_workers_[r % kPorts].push_back(workers_.size());
      workers_.push_back(std::move(w));
      report_.results_expected += p.packets;
    }
  }
}

void Traffic::program(fpga::CsrBus& bus) const {
  for (std::size_t j = 0; j < jobs_.size(); ++j)
    fpga::program_job(bus, jobs_[j], static_cast<unsigned>(j), t::kAggregator);
}

void Traffic::attach(Platform& platform) {
  for (unsigned p = 0; p < kPorts; ++p) {
    platform.port(p).set_source([this, p](MacPort::Outgoing& out) { return next_frame(p, out); });
    platform.port(p).set_sink(
        [this, p](std::vector<std::byte> bytes) { on_result(p, std::move(bytes)); });
  }
}

bool Traffic::done() const {
  for (const Worker& w : workers_)
    if (w.received_count < patterns_[w.job].packets) return false;
  return true;
}

std::uint64_t Traffic::elements_per_frame(std::size_t job) const {
  return patterns_.at(job).elements;
}

// Deterministic per (job, rank, packet): values whose sums are exact in every data type
// (integers well inside fp32's and bf16's significands; int32 wraps), so the order the adder
// tree adds them in does not matter.
std::vector<std::uint32_t> Traffic::values(std::size_t job, std::uint16_t rank,
                                           std::uint32_t packet) const {
  const JobPattern& p = patterns_[job];
  std::mt19937_64 rng(seed_ ^ (std::uint64_t{job} << 48) ^ (std::uint64_t{rank} << 32) ^ packet);
  std::vector<std::uint32_t> v(p.elements);
  for (auto& x : v) {
    switch (p.dtype) {
      case wire::DataType::kFp32:
        x = t::bits(static_cast<float>(static_cast<int>(rng() % 2001) - 1000) * 0.5f);
        break;
      case wire::DataType::kBf16:  // |x| <= 32 in halves: any sum of 32 is exact in bf16
        x = t::bits(static_cast<float>(static_cast<int>(rng() % 129) - 64) * 0.5f) >> 16;
        break;
      default:
        x = static_cast<std::uint32_t>(rng());
        break;
    }
  }
  return v;
}

std::int16_t Traffic::exponent(std::size_t job, std::uint16_t rank, std::uint32_t packet) const {
  if (patterns_[job].elements != 0) return wire::kExponentNone;
  std::mt19937 rng(static_cast<std::uint32_t>(seed_ + job * 7919 + rank * 104729 + packet));
  return static_cast<std::int16_t>(static_cast<int>(rng() % 256) - 128);
}

std::vector<std::byte> Traffic::expected(std::size_t job, std::uint16_t rank,
                                         std::uint32_t packet) const {
  const JobPattern& p = patterns_[job];
  std::vector<std::uint32_t> sum(p.elements, 0);
  std::int16_t max_exponent = wire::kExponentNone;
  for (std::uint16_t r = 0; r < p.workers; ++r) {
    const std::vector<std::uint32_t> v = values(job, r, packet);
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (p.dtype == wire::DataType::kInt32)
        sum[i] += v[i];
      else if (p.dtype == wire::DataType::kFp32)
        sum[i] = t::bits(t::from_bits(sum[i]) + t::from_bits(v[i]));
      else  // bf16 summed in fp32, sent as bf16 (exact here, so no rounding)
        sum[i] = t::bits(t::from_bits(sum[i]) + t::from_bits(v[i] << 16));
    }
    max_exponent = std::max(max_exponent, exponent(job, r, packet));
  }
  if (p.dtype == wire::DataType::kBf16)
    for (auto& x : sum) x = t::reference_bf16(x);
  wire::Header h = t::contribution_header(jobs_[job], rank, packet, p.elements, p.dtype);
  h.exponent = max_exponent;
  return t::expected_result(jobs_[job], rank, h, sum).bytes;
}

bool Traffic::next_frame(unsigned port, MacPort::Outgoing& out) {
  if (!started_) return false;
  const std::vector<std::size_t>& list = port_workers_[port];
  for (std::size_t k = 0; k < list.size(); ++k) {
    const std::size_t i = (round_robin_[port] + k) % list.size();
    Worker& w = workers_[list[i]];
    const JobPattern& p = patterns_[w.job];
    if (w.next >= p.packets) continue;
    // The slot's other set is used from packet + slot_count on, once the result of the
    // packet before it in the same slot came back.
    if (w.next >= p.slot_count && !w.received[w.next - p.slot_count]) continue;
    out.bytes = t::contribution_frame(jobs_[w.job], w.rank, w.next, values(w.job, w.rank, w.next),
                                      p.dtype, exponent(w.job, w.rank, w.next));
    out.elements = p.elements;
    ++w.next;
    round_robin_[port] = (i + 1) % list.size();
    return true;
  }
  return false;
}

void Traffic::error(std::string what) {
  if (report_.errors.size() < 8) report_.errors.push_back(std::move(what));
}

void Traffic::on_result(unsigned port, std::vector<std::byte> bytes) {
  const wire::DecodedFrame d = wire::decode_frame(bytes, 0);
  if (!d) {
    ++report_.results_unexpected;
    error(fmt::format("port {}: a frame that does not decode ({})", port, wire::error_id(d.error)));
    return;
  }
  const wire::Header& h = d.packet.header;
  for (Worker& w : workers_) {
    const JobSpec& job = jobs_[w.job];
    if (job.job_id != h.job_id || w.rank != h.rank) continue;
    if (h.seq >= w.received.size() || w.received[h.seq] || w.rank % kPorts != port) break;
    const std::vector<std::byte> want = expected(w.job, w.rank, h.seq);
    w.received[h.seq] = true;
    ++w.received_count;
    if (bytes == want) {
      ++report_.results_ok;
    } else {
      ++report_.results_bad;
      error(fmt::format("port {}: job {} rank {} packet {}: the result differs from the sum", port,
                        h.job_id, h.rank, h.seq));
    }
    return;
  }
  ++report_.results_unexpected;
  error(fmt::format("port {}: an unexpected frame: job {} rank {} seq {}", port, h.job_id, h.rank,
                    h.seq));
}

}  // namespace netagg::vp
