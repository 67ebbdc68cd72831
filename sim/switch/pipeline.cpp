// SPDX-License-Identifier: Apache-2.0
#include "pipeline.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "netagg/address.hpp"
#include "netagg/error.hpp"

namespace netagg::sim {

namespace {

constexpr std::uint16_t kEtherTypeIpv4 = 0x0800;
constexpr std::uint16_t kEtherTypeArp = 0x0806;
constexpr std::size_t kArpFrameSize = 42;  // Ethernet + ARP for IPv4 over Ethernet
constexpr std::uint8_t kIpProtoIcmp = 1;
constexpr std::uint8_t kIcmpEchoRequest = 8;

wire::Mac read_mac(const std::byte* p) {
  wire::Mac m;
  for (std::size_t i = 0; i < 6; ++i) m[i] = std::uint8_t(p[i]);
  return m;
}

// RFC 1624, eqn. 3: HC' = ~(~HC + ~m + m'), for one 16-bit word changed from m to m'. The P4
// updates the ICMP checksum this way, since it cannot sum a payload of any length.
std::uint16_t checksum_update(std::uint16_t hc, std::uint16_t m, std::uint16_t m_new) {
  std::uint32_t sum = std::uint32_t(std::uint16_t(~hc)) + std::uint16_t(~m) + m_new;
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<std::uint16_t>(~sum);
}

}  // namespace

std::string FrameOutcome::to_string() const {
  switch (action) {
    case FrameAction::kAggregated:
      return "aggregated";
    case FrameAction::kCompleted:
      return "completed";
    case FrameAction::kResultResent:
      return "result_resent";
    case FrameAction::kArpReply:
      return "arp_reply";
    case FrameAction::kIcmpEchoReply:
      return "icmp_echo_reply";
    case FrameAction::kForwarded:
      return "forwarded";
    case FrameAction::kSentToParent:
      return "sent_to_parent";
    case FrameAction::kDropped:
      break;
  }
  if (frame_drop == FrameDrop::kNoForwardEntry) return "dropped no_forward_entry";
  if (frame_drop == FrameDrop::kRunt) return "dropped runt";
  std::string s = fmt::format("dropped {}", sim::to_string(reason));
  if (reason == DropReason::kMalformed) s += fmt::format(" {}", wire::error_id(malformed));
  return s;
}

SwitchPipeline::SwitchPipeline(const Bmv2Config& config, PipelineLimits limits)
    : config_(config), model_(limits.pool_slots, limits.max_elements) {
  const std::string_view source = config_.source;
  if (!config_.identity)
    throw Error(Errc::kConfig,
                fmt::format("{}: no switch identity: the contract sets it with 'table_set_default "
                            "{} set_switch_identity MAC IP'",
                            source, bmv2::kSwitchIdentity));
  for (std::size_t h = 0; h < config_.nodes.size(); ++h) {
    const auto& node = config_.nodes[h];
    if (node.group && !config_.result_destinations.count(node.rid))
      bmv2_line_error(source, node.line,
                      fmt::format("multicast node {} (rid {}) has no {} entry for its rid", h,
                                  node.rid, bmv2::kResultDestination));
  }
  for (const auto& w : config_.workers)
    if (!config_.jobs.count(w.job_id))
      bmv2_line_error(source, w.line, fmt::format("job {} is not in the job_table", w.job_id));
  // Trees: every parent_table entry has its job, its parent_source entry and the mirroring
  // session of its recovery clones; every parent_source entry belongs to a parent_table entry.
  for (const auto& [id, parent] : config_.parents)
    if (!config_.jobs.count(id))
      bmv2_line_error(source, parent.line, fmt::format("job {} is not in the job_table", id));
  for (const auto& src : config_.parent_sources) {
    const auto parent = config_.parents.find(src.job_id);
    if (parent == config_.parents.end())
      bmv2_line_error(source, src.line,
                      fmt::format("job {} has no {} entry", src.job_id, bmv2::kParentTable));
    const auto& e = parent->second;
    if (e.parent_job_id != src.parent_job_id || e.ip != src.ip || e.udp_port != src.udp_port)
      bmv2_line_error(
          source, src.line,
          fmt::format("the key is not job {}'s parent: its {} entry (line {}) has job id "
                      "{} at the parent and the parent's address {}",
                      src.job_id, bmv2::kParentTable, e.line.number, e.parent_job_id,
                      Endpoint{e.ip, e.udp_port}.to_string()));
  }
  for (const auto& [id, e] : config_.parents) {
    const bool has_source =
        std::any_of(config_.parent_sources.begin(), config_.parent_sources.end(),
                    [&](const Bmv2Config::ParentSourceEntry& src) { return src.job_id == id; });
    if (!has_source)
      bmv2_line_error(
          source, e.line,
          fmt::format("job {} has no {} entry for its parent's results (key {} {} {})", id,
                      bmv2::kParentSource, e.parent_job_id, format_ipv4(e.ip), e.udp_port));
    const std::uint16_t session = config_.jobs.at(id).mcast_grp;
    const auto mirror = config_.mirror_sessions.find(session);
    if (mirror == config_.mirror_sessions.end())
      bmv2_line_error(
          source, e.line,
          fmt::format("job {}: no mirroring session {} (its multicast group's number) for "
                      "the partial sums of recovery copies (mirroring_add {} {})",
                      id, session, session, e.port));
    if (mirror->second.port != e.port)
      bmv2_line_error(source, mirror->second.line,
                      fmt::format("mirroring session {} goes to port {}, but job {}'s parent is on "
                                  "port {} (line {})",
                                  session, mirror->second.port, id, e.port, e.line.number));
  }
  for (const auto& [id, entry] : config_.jobs) {
    JobSpec job;
    job.job_id = id;
    job.slot_base = entry.slot_base;
    job.slot_count = entry.slot_count;
    job.elements_per_packet = entry.elements_per_packet;
    job.workers.resize(entry.worker_count);
    std::vector<const Bmv2Config::WorkerEntry*> by_rank(entry.worker_count, nullptr);
    for (const auto& w : config_.workers) {
      if (w.job_id != id) continue;
      if (w.rank >= entry.worker_count)
        bmv2_line_error(source, w.line,
                        fmt::format("rank {} is out of range: job {} has {} workers (line {})",
                                    w.rank, id, entry.worker_count, entry.line.number));
      if (by_rank[w.rank])
        bmv2_line_error(source, w.line,
                        fmt::format("job {} rank {} has a worker_table entry already (line {})", id,
                                    w.rank, by_rank[w.rank]->line.number));
      by_rank[w.rank] = &w;
      job.workers[w.rank] =
          WorkerSpec{w.rank, Endpoint{w.ip, w.udp_port}, std::nullopt, std::nullopt};
    }
    for (std::size_t r = 0; r < by_rank.size(); ++r)
      if (!by_rank[r])
        bmv2_line_error(source, entry.line,
                        fmt::format("job {} has no worker_table entry for rank {}", id, r));
    const auto group = config_.groups.find(entry.mcast_grp);
    if (group == config_.groups.end())
      bmv2_line_error(source, entry.line,
                      fmt::format("job {}: multicast group {} was not created (mc_mgrp_create)", id,
                                  entry.mcast_grp));
    const auto parent = config_.parents.find(id);
    if (parent != config_.parents.end()) {
      const Endpoint at{parent->second.ip, parent->second.udp_port};
      for (const WorkerSpec& w : job.workers)
        if (w.address == at)
          bmv2_line_error(source, parent->second.line,
                          fmt::format("job {}: the parent's address {} is rank {}'s too", id,
                                      at.to_string(), w.rank));
      ParentSpec p;
      p.address = Endpoint{parent->second.ip, parent->second.udp_port};
      p.job_id = parent->second.parent_job_id;
      p.rank = parent->second.rank;
      p.slot_base = parent->second.slot_base;
      job.parent = p;
    }
    try {
      model_.add_job(job);
    } catch (const Error& e) {
      bmv2_line_error(source, entry.line, e.what());
    }
    JobRoute& route = routes_[id];
    route.nodes = group->second;
    if (parent != config_.parents.end()) {
      route.parent = parent->second;
      route.mirror_port = config_.mirror_sessions.at(entry.mcast_grp).port;
    }
  }
}

void SwitchPipeline::emit(std::uint16_t port, const wire::FrameAddress& address,
                          std::span<const std::byte> packet) {
  FrameOut f;
  f.port = port;
  f.bytes.resize(wire::kFrameOverhead + packet.size());
  f.bytes.resize(wire::encode_frame(address, packet, f.bytes));
  out_.push_back(std::move(f));
}

void SwitchPipeline::emit_to_parent(std::uint16_t job_id, std::uint16_t port,
                                    const CollectingSink::Packet& p) {
  const auto& parent = *routes_.at(job_id).parent;
  const auto& id = *config_.identity;
  wire::FrameAddress a;
  a.src_mac = id.mac;
  a.src_ip = id.ip;
  a.src_port = wire::kUdpPort;
  a.dst_mac = parent.mac;
  a.dst_ip = parent.ip;
  a.dst_port = parent.udp_port;
  a.ecn = p.ecn;
  emit(port, a, p.bytes);
}

const std::vector<FrameOut>& SwitchPipeline::process(std::uint16_t port,
                                                     std::span<const std::byte> frame) {
  out_.clear();
  outcome_ = FrameOutcome{};
  ++frames_in_;
  const auto finish = [&]() -> const std::vector<FrameOut>& {
    frames_out_ += out_.size();
    return out_;
  };
  if (frame.size() < wire::kEthHeaderSize) {
    ++runts_;
    outcome_.frame_drop = FrameDrop::kRunt;
    return finish();
  }
  const auto& id = *config_.identity;
  const std::uint16_t ethertype = wire::load_be16(frame.data() + 12);
  if (ethertype == kEtherTypeArp && frame.size() >= kArpFrameSize) {
    const std::byte* arp = frame.data() + wire::kEthHeaderSize;
    if (wire::load_be16(arp) == 1 && wire::load_be16(arp + 2) == kEtherTypeIpv4 &&
        std::uint8_t(arp[4]) == 6 && std::uint8_t(arp[5]) == 4 && wire::load_be16(arp + 6) == 1 &&
        wire::load_be32(arp + 24) == id.ip) {
      reply_arp(port, frame);
      return finish();
    }
  }
  if (ethertype == kEtherTypeIpv4 && frame.size() >= wire::kEthHeaderSize + wire::kIpv4HeaderSize &&
      wire::load_be32(frame.data() + wire::kEthHeaderSize + 16) == id.ip) {
    const std::byte* ip = frame.data() + wire::kEthHeaderSize;
    const bool ip_ok = std::uint8_t(ip[0]) == 0x45 && (wire::load_be16(ip + 6) & 0x3FFF) == 0 &&
                       wire::ipv4_checksum({ip, wire::kIpv4HeaderSize}) == 0;
    const std::size_t ip_len = wire::load_be16(ip + 2);
    const std::size_t icmp_at = wire::kEthHeaderSize + wire::kIpv4HeaderSize;
    if (ip_ok && std::uint8_t(ip[9]) == kIpProtoIcmp && ip_len >= wire::kIpv4HeaderSize + 8 &&
        wire::kEthHeaderSize + ip_len <= frame.size() &&
        std::uint8_t(frame[icmp_at]) == kIcmpEchoRequest && std::uint8_t(frame[icmp_at + 1]) == 0) {
      reply_icmp(port, frame, ip_len);
      return finish();
    }
    netagg(port, frame);
    return finish();
  }
  const auto route = config_.forward.find(read_mac(frame.data()));
  if (route == config_.forward.end()) {
    ++no_forward_entry_;
    outcome_.frame_drop = FrameDrop::kNoForwardEntry;
    return finish();
  }
  ++forwarded_;
  outcome_.action = FrameAction::kForwarded;
  out_.push_back({route->second.first, {frame.begin(), frame.end()}});
  return finish();
}

void SwitchPipeline::reply_arp(std::uint16_t port, std::span<const std::byte> frame) {
  const auto& id = *config_.identity;
  const std::byte* req = frame.data() + wire::kEthHeaderSize;
  FrameOut f{port, std::vector<std::byte>(kArpFrameSize)};
  std::byte* p = f.bytes.data();
  std::copy(req + 8, req + 14, p);  // to the requester's hardware address
  for (std::size_t i = 0; i < 6; ++i) p[6 + i] = std::byte(id.mac[i]);
  wire::store_be16(p + 12, kEtherTypeArp);
  std::byte* arp = p + wire::kEthHeaderSize;
  std::copy(req, req + 6, arp);  // htype, ptype, hlen, plen as asked
  wire::store_be16(arp + 6, 2);  // reply
  for (std::size_t i = 0; i < 6; ++i) arp[8 + i] = std::byte(id.mac[i]);
  wire::store_be32(arp + 14, id.ip);
  std::copy(req + 8, req + 18, arp + 18);  // target = the requester's MAC and IP
  out_.push_back(std::move(f));
  ++arp_replies_;
  outcome_.action = FrameAction::kArpReply;
}

void SwitchPipeline::reply_icmp(std::uint16_t port, std::span<const std::byte> frame,
                                std::size_t ip_len) {
  const std::byte* ip = frame.data() + wire::kEthHeaderSize;
  const std::size_t msg_len = ip_len - wire::kIpv4HeaderSize;
  FrameOut f{port, std::vector<std::byte>(wire::kEthHeaderSize + ip_len)};
  std::byte* p = f.bytes.data();
  std::copy(frame.data() + 6, frame.data() + 12, p);  // MACs swapped
  std::copy(frame.data(), frame.data() + 6, p + 6);
  wire::store_be16(p + 12, kEtherTypeIpv4);
  std::byte* out_ip = p + wire::kEthHeaderSize;
  out_ip[0] = std::byte(0x45);
  out_ip[1] = std::byte(0);
  wire::store_be16(out_ip + 2, static_cast<std::uint16_t>(ip_len));
  wire::store_be16(out_ip + 4, 0);
  wire::store_be16(out_ip + 6, 0x4000);
  out_ip[8] = std::byte(64);
  out_ip[9] = std::byte(kIpProtoIcmp);
  wire::store_be16(out_ip + 10, 0);
  std::copy(ip + 16, ip + 20, out_ip + 12);  // IPs swapped
  std::copy(ip + 12, ip + 16, out_ip + 16);
  wire::store_be16(out_ip + 10, wire::ipv4_checksum({out_ip, wire::kIpv4HeaderSize}));
  std::byte* msg = out_ip + wire::kIpv4HeaderSize;
  std::copy(ip + wire::kIpv4HeaderSize, ip + wire::kIpv4HeaderSize + msg_len, msg);
  const std::uint16_t type_code_old = wire::load_be16(msg);
  msg[0] = std::byte(0);  // echo reply
  wire::store_be16(msg + 2,
                   checksum_update(wire::load_be16(msg + 2), type_code_old, wire::load_be16(msg)));
  out_.push_back(std::move(f));
  ++icmp_echo_replies_;
  outcome_.action = FrameAction::kIcmpEchoReply;
}

void SwitchPipeline::netagg(std::uint16_t port, std::span<const std::byte> frame) {
  const wire::DecodedFrame decoded = wire::decode_frame(frame, wire::kUdpPort);
  const bool frame_error =
      frame.size() < wire::kFrameOverhead || decoded.error >= wire::Error::kNotIpv4;
  if (frame_error) {  // the model never sees it: count it here as the model would
    ++frame_malformed_[static_cast<std::size_t>(decoded.error)];
    outcome_.reason = DropReason::kMalformed;
    outcome_.malformed = decoded.error;
    return;
  }
  // The frame is sound; the netagg packet is the UDP payload, checked by the model.
  const std::byte* ip = frame.data() + wire::kEthHeaderSize;
  const std::size_t ip_len = wire::load_be16(ip + 2);
  const auto payload =
      frame.subspan(wire::kFrameOverhead, ip_len - wire::kIpv4HeaderSize - wire::kUdpHeaderSize);
  const std::byte* udp = ip + wire::kIpv4HeaderSize;
  const Endpoint source{wire::load_be32(ip + 12), wire::load_be16(udp)};
  sink_.packets.clear();
  const Outcome o = model_.process(source, payload, sink_, decoded.address.ecn);
  outcome_.reason = o.reason;
  outcome_.malformed = o.malformed;
  // A contribution that the model answered or sent up (so a whole, valid packet) carries its
  // job's id: the child job's.
  const auto request_job = [&] { return wire::load_be16(payload.data() + wire::offset::kJobId); };
  // Back where the packet came from: MAC, IP and UDP port swapped (a notice, a resent result).
  const auto back = [&](const CollectingSink::Packet& sent) {
    wire::FrameAddress a;
    a.dst_mac = read_mac(frame.data() + 6);
    a.src_mac = read_mac(frame.data());
    a.dst_ip = wire::load_be32(ip + 12);
    a.src_ip = wire::load_be32(ip + 16);
    a.dst_port = wire::load_be16(udp);
    a.src_port = wire::load_be16(udp + 2);
    a.ecn = sent.ecn;
    emit(port, a, sent.bytes);
  };
  switch (o.action) {
    case Action::kDropped:
      outcome_.action = FrameAction::kDropped;
      for (const auto& sent : sink_.packets) back(sent);  // the notice, if one was due
      return;
    case Action::kAggregated:
      outcome_.action = FrameAction::kAggregated;
      return;
    case Action::kSentToParent:
      // The completing contribution (or a retransmission while the round waits) rewritten
      // into the partial sum and sent out of the parent's port.
      outcome_.action = FrameAction::kSentToParent;
      emit_to_parent(request_job(), routes_.at(request_job()).parent->port, sink_.packets.at(0));
      return;
    case Action::kResultResent: {
      outcome_.action = FrameAction::kResultResent;
      for (const auto& sent : sink_.packets) {
        if (!(sent.destination == source)) {
          // Trees: a recovery copy to an answered round also sends the kept partial sum up:
          // the I2E clone, out of the port of the job's mirroring session.
          emit_to_parent(request_job(), routes_.at(request_job()).mirror_port, sent);
          continue;
        }
        back(sent);
      }
      return;
    }
    case Action::kCompleted:
      break;
  }
  outcome_.action = FrameAction::kCompleted;
  // One copy per node of the job's group; result_destination (by rid) addresses each.
  std::vector<std::byte> result = sink_.packets.at(0).bytes;
  const auto& id = *config_.identity;
  const std::uint16_t job_id = wire::load_be16(result.data() + wire::offset::kJobId);
  for (const std::size_t handle : routes_.at(job_id).nodes) {
    const auto& node = config_.nodes[handle];
    const auto& dest = config_.result_destinations.at(node.rid);
    wire::store_be16(result.data() + wire::offset::kRank, dest.rank);
    wire::FrameAddress a;
    a.src_mac = id.mac;
    a.src_ip = id.ip;
    a.src_port = wire::kUdpPort;
    a.dst_mac = dest.mac;
    a.dst_ip = dest.ip;
    a.dst_port = dest.udp_port;
    a.ecn = sink_.packets.at(0).ecn;
    for (const std::uint16_t out_port : node.ports) emit(out_port, a, result);
  }
}

std::vector<std::pair<std::string, std::uint64_t>> SwitchPipeline::counters() const {
  std::vector<std::pair<std::string, std::uint64_t>> out;
  std::uint64_t frame_malformed = 0;
  for (auto n : frame_malformed_) frame_malformed += n;
  for (const auto& [name, value] : model_.counters().named()) {
    std::uint64_t v = value;
    if (name == "packets_in" || name == "dropped_total" || name == "dropped_malformed")
      v += frame_malformed;
    if (name == "malformed_truncated")
      v += frame_malformed_[static_cast<std::size_t>(wire::Error::kTruncated)];
    out.emplace_back(std::string(name), v);
  }
  for (std::size_t e = static_cast<std::size_t>(wire::Error::kNotIpv4); e < wire::kErrorCount; ++e)
    out.emplace_back(fmt::format("malformed_{}", wire::error_id(wire::Error(e))),
                     frame_malformed_[e]);
  out.emplace_back("frames_in", frames_in_);
  out.emplace_back("frames_out", frames_out_);
  out.emplace_back("arp_replies", arp_replies_);
  out.emplace_back("icmp_echo_replies", icmp_echo_replies_);
  out.emplace_back("forwarded", forwarded_);
  out.emplace_back("dropped_no_forward_entry", no_forward_entry_);
  out.emplace_back("dropped_runt", runts_);
  return out;
}

}  // namespace netagg::sim
