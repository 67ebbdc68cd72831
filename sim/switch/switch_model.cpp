// SPDX-License-Identifier: Apache-2.0
#include "switch_model.hpp"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "netagg/error.hpp"

namespace netagg::sim {

namespace {

[[noreturn]] void config_error(const std::string& what) { throw Error(Errc::kConfig, what); }

constexpr std::size_t kJobTableSize = std::size_t{1} << 16;  // job_id is 16 bits

}  // namespace

std::uint64_t SwitchCounters::dropped_total() const {
  std::uint64_t total = 0;
  for (auto d : dropped) total += d;
  return total;
}

std::vector<std::pair<std::string_view, std::uint64_t>> SwitchCounters::named() const {
  std::vector<std::pair<std::string_view, std::uint64_t>> out = {
      {"packets_in", packets_in},
      {"aggregated", aggregated},
      {"epoch_takeovers", epoch_takeovers},
      {"completions", completions},
      {"results_multicast", results_multicast},
      {"results_resent", results_resent},
      {"sent_to_parent", sent_to_parent},
      {"resent_to_parent", resent_to_parent},
      {"results_from_parent", results_from_parent},
      {"notices", notices},
      {"dropped_total", dropped_total()},
  };
  for (std::size_t i = 0; i < kDropReasonCount; ++i)
    out.emplace_back(counter_name(static_cast<DropReason>(i)), dropped[i]);
  for (std::size_t i = 0; i < wire::kErrorCount; ++i) {
    const auto error = static_cast<wire::Error>(i);
    if (wire::is_packet_error(error))
      out.emplace_back(wire::counter_name(error), malformed_by(error));
  }
  return out;
}

struct SwitchModel::Job {
  JobSpec spec;
};

SwitchModel::SwitchModel(std::size_t pool_slots, std::size_t max_elements_per_packet)
    : pool_slots_(pool_slots), lanes_(max_elements_per_packet) {
  if (pool_slots < 1 || pool_slots > kMaxPoolSlots)
    config_error(
        fmt::format("switch pool size {} is out of range [1, {}]", pool_slots, kMaxPoolSlots));
  if (max_elements_per_packet < 1 || max_elements_per_packet > kMaxLanes)
    config_error(fmt::format("switch elements per packet {} is out of range [1, {}]",
                             max_elements_per_packet, kMaxLanes));
  registers_.resize(pool_slots_ * 2);
  values_.assign(pool_slots_ * 2 * lanes_, 0);
  jobs_.resize(kJobTableSize);
  result_.resize(wire::kMaxPacketSize);
}

SwitchModel::~SwitchModel() = default;

void SwitchModel::check_job(const JobSpec& job, std::span<const JobSpec* const> others) const {
  const std::string name = fmt::format("job {}", job.job_id);
  const std::size_t n = job.workers.size();
  if (n == 0) config_error(fmt::format("{} has no workers", name));
  if (n > kMaxWorkersPerJob)
    config_error(
        fmt::format("{} has {} workers; the switch's {}-bit worker bitmap allows at most {}", name,
                    n, limits::kBitmapBits, kMaxWorkersPerJob));
  for (std::size_t r = 0; r < n; ++r) {
    if (job.workers[r].rank != r)
      config_error(fmt::format("{}: worker {} has rank {}; ranks must be 0..{} in order", name, r,
                               job.workers[r].rank, n - 1));
    for (std::size_t q = 0; q < r; ++q)
      if (job.workers[q].address == job.workers[r].address)
        config_error(fmt::format("{}: ranks {} and {} share address {}", name, q, r,
                                 job.workers[r].address.to_string()));
  }
  if (job.slot_count == 0) config_error(fmt::format("{} has an empty slot range", name));
  const std::size_t begin = job.slot_base, end = begin + job.slot_count;
  if (end > pool_slots_)
    config_error(fmt::format("{} uses slots [{}, {}) but the switch pool has {} slots", name, begin,
                             end, pool_slots_));
  for (const JobSpec* other : others) {
    const std::size_t other_begin = other->slot_base;
    const std::size_t other_end = other_begin + other->slot_count;
    if (begin < other_end && other_begin < end)
      config_error(fmt::format("{}: slots [{}, {}) overlap slots [{}, {}) of job {}", name, begin,
                               end, other_begin, other_end, other->job_id));
  }
  if (job.parent && std::uint32_t(job.parent->slot_base) + job.slot_count > 0x10000)
    config_error(fmt::format("{}: the parent's slots [{}, {}) exceed the 16-bit slot space", name,
                             job.parent->slot_base,
                             std::uint32_t(job.parent->slot_base) + job.slot_count));
  if (job.elements_per_packet == 0 || job.elements_per_packet > lanes_)
    config_error(
        fmt::format("{}: elements_per_packet {} is out of range [1, {}] (lanes per slot "
                    "of this switch)",
                    name, job.elements_per_packet, lanes_));
}

void SwitchModel::add_job(const JobSpec& job) {
  if (jobs_[job.job_id]) config_error(fmt::format("job {} is installed already", job.job_id));
  std::vector<const JobSpec*> installed;
  for (const auto& other : jobs_)
    if (other) installed.push_back(&other->spec);
  check_job(job, installed);
  clear_slots(job.slot_base, job.slot_count);
  jobs_[job.job_id] = std::make_unique<Job>(Job{job});
  index_children();
}

void SwitchModel::index_children() {
  child_jobs_.clear();
  for (std::size_t id = 0; id < jobs_.size(); ++id)
    if (jobs_[id] && jobs_[id]->spec.parent) child_jobs_.push_back(static_cast<std::uint16_t>(id));
  if (!child_jobs_.empty() && partials_.empty()) partials_.assign(values_.size(), 0);
}

void SwitchModel::replace_jobs(std::span<const JobSpec> jobs) {
  std::vector<const JobSpec*> checked;
  for (const JobSpec& job : jobs) {
    for (const JobSpec* other : checked)
      if (other->job_id == job.job_id)
        config_error(fmt::format("job {} is listed twice", job.job_id));
    check_job(job, checked);
    checked.push_back(&job);
  }
  for (auto& old : jobs_)
    if (old) {
      clear_slots(old->spec.slot_base, old->spec.slot_count);
      old.reset();
    }
  for (const JobSpec& job : jobs) {
    clear_slots(job.slot_base, job.slot_count);
    jobs_[job.job_id] = std::make_unique<Job>(Job{job});
  }
  index_children();
}

void SwitchModel::remove_job(std::uint16_t job_id) {
  auto& job = jobs_[job_id];
  if (!job) config_error(fmt::format("job {} is not installed", job_id));
  clear_slots(job->spec.slot_base, job->spec.slot_count);
  job.reset();
  index_children();
}

const JobSpec* SwitchModel::find_job(std::uint16_t job_id) const {
  return jobs_[job_id] ? &jobs_[job_id]->spec : nullptr;
}

std::vector<std::uint16_t> SwitchModel::job_ids() const {
  std::vector<std::uint16_t> ids;
  for (std::size_t id = 0; id < jobs_.size(); ++id)
    if (jobs_[id]) ids.push_back(static_cast<std::uint16_t>(id));
  return ids;
}

void SwitchModel::clear_slots(std::size_t base, std::size_t count) {
  std::fill(registers_.begin() + index(base, 0), registers_.begin() + index(base + count, 0),
            SlotRegisters{});
  std::fill(values_.begin() + index(base, 0) * lanes_,
            values_.begin() + index(base + count, 0) * lanes_, 0);
  if (!partials_.empty())
    std::fill(partials_.begin() + index(base, 0) * lanes_,
              partials_.begin() + index(base + count, 0) * lanes_, 0);
}

const SlotRegisters& SwitchModel::registers(std::size_t slot, unsigned set) const {
  if (slot >= pool_slots_ || set > 1)
    throw Error(Errc::kInvalidArgument, fmt::format("no slot {} set {} in the pool", slot, set));
  return registers_[index(slot, set)];
}

std::vector<OpenRound> SwitchModel::open_rounds() const {
  std::vector<OpenRound> out;
  for (const auto& job : jobs_) {
    if (!job) continue;
    const JobSpec& spec = job->spec;
    for (std::size_t slot = spec.slot_base; slot < spec.slot_base + spec.slot_count; ++slot) {
      for (unsigned set = 0; set < 2; ++set) {
        const SlotRegisters& r = registers_[index(slot, set)];
        if (!r.has_round || (r.remaining == 0 && !r.upstream)) continue;
        OpenRound round{spec.job_id,
                        static_cast<std::uint16_t>(slot),
                        static_cast<std::uint8_t>(set),
                        r.seq,
                        {},
                        r.upstream};
        for (std::size_t rank = 0; rank < spec.workers.size(); ++rank)
          if ((r.bitmap >> rank & 1u) == 0) round.missing_ranks.push_back(std::uint16_t(rank));
        out.push_back(std::move(round));
      }
    }
  }
  return out;
}

std::span<const ValueRegister> SwitchModel::values(std::size_t slot, unsigned set) const {
  registers(slot, set);  // range check
  return {values_.data() + index(slot, set) * lanes_, lanes_};
}

Outcome SwitchModel::drop(DropReason r) {
  ++counters_.dropped[static_cast<std::size_t>(r)];
  return {Action::kDropped, r, wire::Error::kOk};
}

namespace {
// The notice reason of a drop a worker can act on (named as the drop), if it has one.
std::optional<wire::NoticeReason> notice_reason(DropReason r) {
  const std::string_view id = pipeline::kDrops[static_cast<std::size_t>(r)].id;
  for (const auto& [reason, name] : wire::kNoticeReasonNames)
    if (name == id) return reason;
  return std::nullopt;
}
}  // namespace

Outcome SwitchModel::drop(DropReason r, const Endpoint& source, const wire::Header& h,
                          PacketSink& out, BitmapRegister waiting) {
  const auto reason = notice_reason(r);
  // Recovery copies come from workers that have the result: nothing for them to act on.
  std::uint32_t& drops = notice_drops_[static_cast<std::size_t>(r)][h.rank % wire::kNoticeRanks];
  if (reason && !h.recovery &&
      (*reason == wire::NoticeReason::kDuplicate || wire::notice_due(drops++))) {
    std::array<std::uint32_t, 1> words{waiting};
    const std::span<const std::uint32_t> payload = *reason == wire::NoticeReason::kDuplicate
                                                       ? std::span<const std::uint32_t>(words)
                                                       : std::span<const std::uint32_t>();
    const std::size_t size = wire::encode_notice(h, *reason, payload, result_);
    ++counters_.notices;
    out.send(source, {result_.data(), size}, 0);
  }
  return drop(r);
}

void SwitchModel::build_result(const Job& job, const wire::Header& request, std::size_t at) {
  const SlotRegisters& reg = registers_[at];
  wire::Header h;
  h.type = wire::MsgType::kResult;
  h.dtype = wire::DataType::kInt32;
  h.set = request.set;
  h.job_id = job.spec.job_id;
  h.rank = request.rank;
  h.slot = request.slot;
  h.count = reg.count;
  h.exponent = reg.exponent;
  h.seq = reg.seq;
  h.epoch = reg.epoch;  // fresh stays 0 in results
  wire::encode_header(h, result_);
  const ValueRegister* lanes = values_.data() + at * lanes_;
  std::byte* payload = result_.data() + wire::kHeaderSize;
  for (std::size_t i = 0; i < reg.count; ++i)
    wire::store_be32(payload + 4 * i, static_cast<std::uint32_t>(lanes[i]));
}

Outcome SwitchModel::process(const Endpoint& source, std::span<const std::byte> packet,
                             PacketSink& out, std::uint8_t ecn) {
  ++counters_.packets_in;
  const wire::Decoded decoded = wire::decode(packet);
  if (!decoded) {
    ++counters_.malformed[static_cast<std::size_t>(decoded.error)];
    ++counters_.dropped[static_cast<std::size_t>(DropReason::kMalformed)];
    return {Action::kDropped, DropReason::kMalformed, decoded.error};
  }
  const wire::Header& h = decoded.header;

  // The job table: every check before any register is touched.
  if (h.type == wire::MsgType::kResult && !child_jobs_.empty())
    return result_from_parent(source, h, decoded.payload, out, ecn);
  if (h.type != wire::MsgType::kContribution) return drop(DropReason::kNotContribution);
  const Job* job = jobs_[h.job_id].get();
  if (!job) return drop(DropReason::kUnknownJob, source, h, out);
  const JobSpec& spec = job->spec;
  if (h.rank >= spec.workers.size()) return drop(DropReason::kRankOutOfRange, source, h, out);
  if (!(spec.workers[h.rank].address == source))
    return drop(DropReason::kForeignSource, source, h, out);
  if (h.slot < spec.slot_base || h.slot - spec.slot_base >= spec.slot_count)
    return drop(DropReason::kSlotOutOfRange, source, h, out);
  if (h.dtype != wire::DataType::kInt32) return drop(DropReason::kUnsupportedDtype, source, h, out);
  if (h.count > spec.elements_per_packet)
    return drop(DropReason::kCountTooLargeForJob, source, h, out);

  const std::size_t at = index(h.slot, h.set);
  SlotRegisters& reg = registers_[at];
  const BitmapRegister bit = BitmapRegister{1} << h.rank;
  const std::size_t result_size = wire::kHeaderSize + std::size_t{h.count} * 4;

  // The round's seq decides what the packet is; the bitmap only tells a round's contributors
  // apart. Serial-number arithmetic: seqs within 2^31 of each other compare across the wrap.
  bool first = true;  // the set holds no round yet (of this epoch)
  const bool takeover = reg.has_round && h.epoch != reg.epoch;
  if (takeover && (!h.fresh || h.recovery)) return drop(DropReason::kStaleEpoch, source, h, out);
  // A recovery copy only completes a round the set holds; it never starts one.
  if (h.recovery && !reg.has_round) return drop(DropReason::kNoRound);
  if (reg.has_round && !takeover) {
    const auto age = static_cast<std::int32_t>(h.seq - reg.seq);
    const bool complete = reg.remaining == 0;
    if (age < 0) return drop(DropReason::kStale, source, h, out);
    if (age > 0 && h.recovery) return drop(DropReason::kNoRound);
    // A newer packet: every worker has had this round's result (the sender has the result of
    // the round between them, which needed everybody's packet of it), so the round is over,
    // complete or not (after a restart one can be left unfinished).
    if (age == 0) {
      if (h.count != reg.count) return drop(DropReason::kCountMismatch, source, h, out);
      if (complete && reg.upstream) {  // waiting for the parent: its copy may have been lost
        ++counters_.resent_to_parent;
        send_to_parent(*job, h.slot, h.set, /*recovery=*/false, out);
        return Outcome{Action::kSentToParent};
      }
      if (complete && spec.parent && h.recovery) {
        // A recovery copy of a round answered here: the parent may have restarted and formed
        // the round again without this switch's part. The result goes back as usual.
        ++counters_.resent_to_parent;
        send_to_parent(*job, h.slot, h.set, /*recovery=*/true, out);
      }
      if (complete) {  // the sender lost the result, or this is a late copy: answer it alone
        build_result(*job, h, at);
        ++counters_.results_resent;
        out.send(source, {result_.data(), result_size}, reg.ecn);
        return Outcome{Action::kResultResent};
      }
      if (reg.bitmap & bit) {
        const BitmapRegister all = spec.workers.size() >= kMaxWorkersPerJob
                                       ? ~BitmapRegister{0}
                                       : (BitmapRegister{1} << spec.workers.size()) - 1;
        return drop(DropReason::kDuplicate, source, h, out, all & ~reg.bitmap);
      }
    }
    first = age > 0;  // newer: the next round of this set
  }

  // A new round starts from the starter's bit alone: the bits set belong to an earlier round (of
  // this epoch or, on a takeover, of another). SwitchML also clears the sender's bit in the
  // other set; with a round's seq that is not needed, and after a restart it would be wrong:
  // that set may hold a round formed again that its sender still adds recovery copies to.
  reg.bitmap = first ? bit : reg.bitmap | bit;
  if (takeover) ++counters_.epoch_takeovers;
  if (first) {
    reg.has_round = true;
    reg.epoch = h.epoch;
    reg.ecn = 0;
    reg.remaining = static_cast<CountdownRegister>(spec.workers.size());
    reg.count = h.count;
    reg.exponent = h.exponent;
    reg.seq = h.seq;
    reg.upstream = false;
    reg.fresh = h.fresh;
  } else {
    reg.exponent = std::max(reg.exponent, h.exponent);
  }
  // The value lanes, one pass of the pipeline at a time: pass p adds lanes [p*L, p*L + L) with
  // the value registers value_0..value_{L-1} (L = limits::kLanesPerPass); on Tofino each pass
  // after the first is a recirculation (docs/switch-pipeline.md).
  reg.ecn = static_cast<std::uint8_t>(reg.ecn | (ecn & 3));
  ValueRegister* lanes = values_.data() + at * lanes_;
  const std::byte* payload = decoded.payload.data();
  for (std::size_t pass_begin = 0; pass_begin < h.count; pass_begin += limits::kLanesPerPass) {
    const std::size_t pass_end = std::min<std::size_t>(h.count, pass_begin + limits::kLanesPerPass);
    for (std::size_t i = pass_begin; i < pass_end; ++i) {
      const std::uint32_t in = wire::load_be32(payload + 4 * i);
      lanes[i] = first ? static_cast<ValueRegister>(in)  // a new round overwrites
                       : static_cast<ValueRegister>(static_cast<std::uint32_t>(lanes[i]) + in);
    }  // (wrap-around add, as the switch ALU)
  }
  --reg.remaining;
  ++counters_.aggregated;
  if (reg.remaining != 0) return Outcome{Action::kAggregated};

  if (spec.parent) {  // a child in a tree: the partial sum goes up, the result comes down
    std::copy(lanes, lanes + h.count, partials_.data() + at * lanes_);
    reg.upstream = true;
    ++counters_.sent_to_parent;
    send_to_parent(*job, h.slot, h.set, /*recovery=*/false, out);
    return Outcome{Action::kSentToParent};
  }
  ++counters_.completions;
  multicast(*job, h, at, out);
  return Outcome{Action::kCompleted};
}

void SwitchModel::multicast(const Job& job, const wire::Header& request, std::size_t at,
                            PacketSink& out) {
  const SlotRegisters& reg = registers_[at];
  const std::size_t result_size = wire::kHeaderSize + std::size_t{reg.count} * 4;
  build_result(job, request, at);
  for (const WorkerSpec& worker : job.spec.workers) {
    wire::store_be16(result_.data() + wire::offset::kRank, worker.rank);
    out.send(worker.address, {result_.data(), result_size}, reg.ecn);
  }
  counters_.results_multicast += job.spec.workers.size();
}

void SwitchModel::send_to_parent(const Job& job, std::size_t slot, unsigned set, bool recovery,
                                 PacketSink& out) {
  const ParentSpec& parent = *job.spec.parent;
  const std::size_t at = index(slot, set);
  const SlotRegisters& reg = registers_[at];
  wire::Header h;
  h.type = wire::MsgType::kContribution;
  h.dtype = wire::DataType::kInt32;
  h.job_id = parent.job_id;
  h.rank = parent.rank;
  h.slot = static_cast<std::uint16_t>(parent.slot_base + (slot - job.spec.slot_base));
  h.set = static_cast<std::uint8_t>(set);
  h.count = reg.count;
  h.exponent = reg.exponent;
  h.seq = reg.seq;
  h.epoch = reg.epoch;
  h.fresh = reg.fresh && !recovery;
  h.recovery = recovery;
  wire::encode_header(h, result_);
  const ValueRegister* lanes = partials_.data() + at * lanes_;
  std::byte* payload = result_.data() + wire::kHeaderSize;
  for (std::size_t i = 0; i < reg.count; ++i)
    wire::store_be32(payload + 4 * i, static_cast<std::uint32_t>(lanes[i]));
  out.send(parent.address, {result_.data(), wire::kHeaderSize + std::size_t{reg.count} * 4},
           reg.ecn);
}

Outcome SwitchModel::result_from_parent(const Endpoint& source, const wire::Header& h,
                                        std::span<const std::byte> payload, PacketSink& out,
                                        std::uint8_t ecn) {
  const Job* job = nullptr;
  for (const std::uint16_t id : child_jobs_) {
    const ParentSpec& p = *jobs_[id]->spec.parent;
    if (p.job_id == h.job_id && p.address == source) job = jobs_[id].get();
  }
  if (!job) return drop(DropReason::kNotContribution);  // a result, and from no parent of ours
  const JobSpec& spec = job->spec;
  const ParentSpec& parent = *spec.parent;
  if (h.rank != parent.rank) return drop(DropReason::kRankOutOfRange);
  if (h.slot < parent.slot_base || h.slot - parent.slot_base >= spec.slot_count)
    return drop(DropReason::kSlotOutOfRange);
  if (h.dtype != wire::DataType::kInt32) return drop(DropReason::kUnsupportedDtype);
  const std::size_t slot = spec.slot_base + (h.slot - parent.slot_base);
  const std::size_t at = index(slot, h.set);
  SlotRegisters& reg = registers_[at];
  if (!reg.has_round) return drop(DropReason::kNoRound);
  if (h.epoch != reg.epoch) return drop(DropReason::kStaleEpoch);
  const auto age = static_cast<std::int32_t>(h.seq - reg.seq);
  if (age < 0) return drop(DropReason::kStale);
  if (age > 0 || reg.remaining != 0) return drop(DropReason::kNoRound);
  if (!reg.upstream) return drop(DropReason::kDuplicate);  // answered already
  if (h.count != reg.count) return drop(DropReason::kCountMismatch);
  ValueRegister* lanes = values_.data() + at * lanes_;
  for (std::size_t i = 0; i < h.count; ++i)
    lanes[i] = static_cast<ValueRegister>(wire::load_be32(payload.data() + 4 * i));
  reg.exponent = h.exponent;
  reg.ecn = static_cast<std::uint8_t>(reg.ecn | (ecn & 3));
  reg.upstream = false;
  ++counters_.results_from_parent;
  ++counters_.completions;
  wire::Header request = h;
  request.job_id = spec.job_id;
  request.slot = static_cast<std::uint16_t>(slot);
  multicast(*job, request, at, out);
  return Outcome{Action::kCompleted};
}

}  // namespace netagg::sim
