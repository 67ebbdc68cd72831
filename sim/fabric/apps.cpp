// SPDX-License-Identifier: Apache-2.0
#include "apps.hpp"

#include <algorithm>

#include "ns3/application-container.h"
#include "ns3/bulk-send-helper.h"
#include "ns3/inet-socket-address.h"
#include "ns3/packet-sink-helper.h"
#include "ns3/packet-sink.h"
#include "ns3/packet.h"
#include "ns3/simulator.h"
#include "ns3/tcp-socket-factory.h"
#include "ns3/udp-socket-factory.h"
#include "ns3/uinteger.h"

namespace netagg::fabric {

using namespace ns3;

namespace {

std::uint8_t ecn_of(const Ptr<Packet>& p) {
  SocketIpTosTag tag;
  return p->PeekPacketTag(tag) ? static_cast<std::uint8_t>(tag.GetTos() & 0x3) : 0;
}

}  // namespace

// ---- WorkerApp ----------------------------------------------------------------------------------

void WorkerApp::Setup(WorkerCore* core, Ipv4Address local, std::uint16_t port, Time start, bool ect,
                      DoneFn on_done, DoneFn on_stall) {
  core_ = core;
  local_ = local;
  port_ = port;
  start_ = start;
  ect_ = ect;
  on_done_ = std::move(on_done);
  on_stall_ = std::move(on_stall);
  send_ = [this](const Outgoing& o) { Send(o); };
}

void WorkerApp::StartApplication() {
  socket_ = Socket::CreateSocket(GetNode(), UdpSocketFactory::GetTypeId());
  if (socket_->Bind(InetSocketAddress(local_, port_)) != 0)
    NS_FATAL_ERROR("worker: cannot bind " << local_ << ":" << port_);
  socket_->SetIpRecvTos(true);
  socket_->SetRecvCallback(MakeCallback(&WorkerApp::HandleRead, this));
  begin_event_ =
      Simulator::Schedule(std::max(start_ - Simulator::Now(), Time(0)), &WorkerApp::Begin, this);
}

void WorkerApp::StopApplication() {
  begin_event_.Cancel();
  timer_.Cancel();
  if (socket_) {
    socket_->SetRecvCallback(MakeNullCallback<void, Ptr<Socket>>());
    socket_->Close();
  }
}

void WorkerApp::Begin() {
  core_->start(Simulator::Now().GetNanoSeconds(), send_);
  Arm();
  Check();
}

void WorkerApp::HandleRead(Ptr<Socket> socket) {
  Ptr<Packet> p;
  Address from;
  while ((p = socket->RecvFrom(from))) {
    if (core_->state() != WorkerCore::State::kRunning) continue;
    const std::uint32_t size = p->GetSize();
    buffer_.resize(size);
    p->CopyData(buffer_.data(), size);
    core_->on_packet(buffer_.data(), size, ecn_of(p), Simulator::Now().GetNanoSeconds(), send_);
  }
  Arm();
  Check();
}

void WorkerApp::OnTimer() {
  timer_at_ = -1;
  const std::int64_t now = Simulator::Now().GetNanoSeconds();
  const auto deadline = core_->next_deadline_ns();
  // Woken for a deadline that has moved later since (Arm keeps an early event rather than move
  // it): nothing is due yet, sleep again.
  if (deadline && *deadline > now) {
    Arm();
    return;
  }
  core_->on_timer(now, send_);
  Arm();
  Check();
}

void WorkerApp::Arm() {
  const auto deadline = core_->next_deadline_ns();
  if (!deadline) return;  // a pending wake-up finds nothing due and lapses
  // The engine's deadline moves with nearly every packet, mostly later. ns-3 keeps a cancelled
  // event in its queue until its time, so moving the event each time filled the queue with dead
  // events (several per packet); an event that fires early and sleeps again costs one.
  if (timer_.IsRunning() && timer_at_ <= *deadline) return;
  timer_.Cancel();
  timer_at_ = *deadline;
  const std::int64_t delay =
      std::max<std::int64_t>(0, *deadline - Simulator::Now().GetNanoSeconds());
  timer_ = Simulator::Schedule(NanoSeconds(delay), &WorkerApp::OnTimer, this);
}

void WorkerApp::FinishFallback() {
  stalled_ = false;
  core_->finish_fallback(Simulator::Now().GetNanoSeconds(), send_);
  Arm();
  Check();
}

void WorkerApp::Check() {
  if (finished_) return;
  const WorkerCore::State s = core_->state();
  if (s == WorkerCore::State::kStalled && !stalled_) {
    stalled_ = true;
    if (on_stall_) on_stall_();
    return;
  }
  if (s != WorkerCore::State::kDone && s != WorkerCore::State::kFailed) return;
  finished_ = true;
  finished_at_ = Simulator::Now();
  timer_.Cancel();
  if (on_done_) on_done_();
}

void WorkerApp::Send(const Outgoing& o) {
  // ECT(0) on every contribution when the engine reacts to marks (docs/congestion-control.md).
  // ns-3's UDP socket takes a datagram's TOS from the destination address of SendTo.
  InetSocketAddress to(Ipv4Address(o.ip), o.port);
  to.SetTos(ect_ ? 0x02 : 0x00);
  socket_->SendTo(Create<Packet>(o.data, static_cast<std::uint32_t>(o.size)), 0, to);
}

// ---- AggregatorApp ------------------------------------------------------------------------------

void AggregatorApp::Setup(AggregatorCore* core, Ipv4Address local, std::uint16_t port,
                          Time per_packet, double per_byte_ns, std::uint32_t queue_limit) {
  core_ = core;
  local_ = local;
  port_ = port;
  per_packet_ = per_packet;
  per_byte_ns_ = per_byte_ns;
  queue_limit_ = queue_limit;
  send_ = [this](const Outgoing& o) { Send(o); };
}

void AggregatorApp::StartApplication() {
  socket_ = Socket::CreateSocket(GetNode(), UdpSocketFactory::GetTypeId());
  if (socket_->Bind(InetSocketAddress(local_, port_)) != 0)
    NS_FATAL_ERROR("aggregator: cannot bind " << local_ << ":" << port_);
  socket_->SetIpRecvTos(true);
  socket_->SetRecvCallback(MakeCallback(&AggregatorApp::HandleRead, this));
}

void AggregatorApp::StopApplication() {
  if (socket_) {
    socket_->SetRecvCallback(MakeNullCallback<void, Ptr<Socket>>());
    socket_->Close();
  }
}

Time AggregatorApp::ServiceTime(std::size_t bytes) const {
  return per_packet_ + NanoSeconds(static_cast<std::int64_t>(per_byte_ns_ * bytes));
}

void AggregatorApp::KillAt(Time at) {
  Simulator::Schedule(std::max(at - Simulator::Now(), Time(0)), [this] {
    dead_ = true;
    queue_.clear();
  });
}

void AggregatorApp::HandleRead(Ptr<Socket> socket) {
  Ptr<Packet> p;
  Address from;
  const bool limited = !per_packet_.IsZero() || per_byte_ns_ > 0;
  while ((p = socket->RecvFrom(from))) {
    if (dead_) {
      ++dead_drops_;
      continue;
    }
    const InetSocketAddress src = InetSocketAddress::ConvertFrom(from);
    Pending item{src.GetIpv4().Get(), src.GetPort(), ecn_of(p), {}};
    item.bytes.resize(p->GetSize());
    p->CopyData(item.bytes.data(), p->GetSize());
    // The limit is on aggregating: the results a parent sends down pass at once (a switch
    // multicasts them; the planner's aggregation capacity counts the streams going up).
    const bool result = item.bytes.size() > kTypeOffset && item.bytes[kTypeOffset] == kResultType;
    if (!limited || result) {
      Process(item);
      continue;
    }
    if (queue_limit_ != 0 && queue_.size() >= queue_limit_) {
      ++rate_drops_;
      continue;
    }
    queue_.push_back(std::move(item));
    max_backlog_ = std::max<std::uint64_t>(max_backlog_, queue_.size());
    if (!busy_) {
      busy_ = true;
      Simulator::Schedule(ServiceTime(queue_.front().bytes.size()), &AggregatorApp::Serve, this);
    }
  }
}

void AggregatorApp::Serve() {
  if (queue_.empty()) {  // killed while busy
    busy_ = false;
    return;
  }
  const Pending item = std::move(queue_.front());
  queue_.pop_front();
  Process(item);
  if (queue_.empty()) {
    busy_ = false;
    return;
  }
  Simulator::Schedule(ServiceTime(queue_.front().bytes.size()), &AggregatorApp::Serve, this);
}

void AggregatorApp::Process(const Pending& p) {
  core_->process(p.ip, p.port, p.bytes.data(), p.bytes.size(), p.ecn, send_);
}

void AggregatorApp::Send(const Outgoing& o) {
  // The result leaves with its round's ECN bits (the OR of its contributions'); ns-3's UDP
  // socket takes a datagram's TOS from the destination address of SendTo.
  InetSocketAddress to(Ipv4Address(o.ip), o.port);
  to.SetTos(o.ecn & 0x3);
  socket_->SendTo(Create<Packet>(o.data, static_cast<std::uint32_t>(o.size)), 0, to);
}

// ---- RingApp ------------------------------------------------------------------------------------

void RingApp::Setup(unsigned rank, unsigned n, Ipv4Address next, std::uint16_t port,
                    std::vector<std::uint64_t> chunk_bytes, Time start, DoneFn on_done) {
  rank_ = rank;
  n_ = n;
  next_ = next;
  port_ = port;
  chunk_bytes_ = std::move(chunk_bytes);
  start_ = start;
  on_done_ = std::move(on_done);
  steps_ = 2 * (n - 1);
  const unsigned pred = (rank + n - 1) % n;
  std::uint64_t total = 0;
  for (unsigned s = 0; s < steps_; ++s) {
    total += chunk_of(pred, s);
    receive_until_.push_back(total);
  }
}

// The chunk that `sender` sends at `step`: reduce-scatter (steps 0..n-2) sends chunk
// (sender - step) mod n, all-gather (steps n-1..2n-3) chunk (sender + 1 - (step - n + 1)) mod n.
std::uint64_t RingApp::chunk_of(unsigned sender, unsigned step) const {
  const long n = n_;
  long c;
  if (step < n_ - 1)
    c = (static_cast<long>(sender) - static_cast<long>(step)) % n;
  else
    c = (static_cast<long>(sender) + 1 - static_cast<long>(step - (n_ - 1))) % n;
  if (c < 0) c += n;
  return chunk_bytes_[static_cast<std::size_t>(c)];
}

void RingApp::StartApplication() {
  listener_ = Socket::CreateSocket(GetNode(), TcpSocketFactory::GetTypeId());
  listener_->Bind(InetSocketAddress(Ipv4Address::GetAny(), port_));
  listener_->Listen();
  listener_->SetAcceptCallback(MakeNullCallback<bool, Ptr<Socket>, const Address&>(),
                               MakeCallback(&RingApp::Accept, this));
  out_ = Socket::CreateSocket(GetNode(), TcpSocketFactory::GetTypeId());
  out_->Bind();
  out_->SetConnectCallback(MakeCallback(&RingApp::Connected, this),
                           MakeCallback(&RingApp::ConnectFailed, this));
  out_->SetSendCallback(MakeCallback(&RingApp::SendSpace, this));
  out_->Connect(InetSocketAddress(next_, port_));
  Simulator::Schedule(std::max(start_ - Simulator::Now(), Time(0)), &RingApp::Begin, this);
}

void RingApp::StopApplication() {
  for (const auto& s : {out_, listener_, in_})
    if (s) s->Close();
}

void RingApp::Connected(Ptr<Socket>) {
  connected_ = true;
  Pump();
}

void RingApp::ConnectFailed(Ptr<Socket>) {
  NS_FATAL_ERROR("ring: rank " << rank_ << " cannot connect to " << next_);
}

void RingApp::Accept(Ptr<Socket> s, const Address&) {
  in_ = s;
  s->SetRecvCallback(MakeCallback(&RingApp::HandleRead, this));
}

void RingApp::Begin() {
  begun_ = true;
  // Step 0 now; later steps each once the predecessor's chunk of the step before arrived.
  while (next_send_step_ < steps_ && next_send_step_ <= received_steps_)
    SendStep(next_send_step_++);
}

void RingApp::SendStep(unsigned step) {
  pending_ += chunk_of(rank_, step);
  Pump();
}

void RingApp::Pump() {
  if (!connected_) return;
  while (pending_ > 0) {
    const std::uint32_t available = out_->GetTxAvailable();
    if (available == 0) return;
    const std::uint32_t n =
        static_cast<std::uint32_t>(std::min<std::uint64_t>(pending_, available));
    const int sent = out_->Send(Create<Packet>(n));
    if (sent <= 0) return;
    pending_ -= static_cast<std::uint64_t>(sent);
    sent_ += static_cast<std::uint64_t>(sent);
  }
}

void RingApp::SendSpace(Ptr<Socket>, std::uint32_t) { Pump(); }

void RingApp::HandleRead(Ptr<Socket> s) {
  Ptr<Packet> p;
  while ((p = s->Recv())) {
    if (p->GetSize() == 0) break;
    received_ += p->GetSize();
  }
  while (received_steps_ < steps_ && received_ >= receive_until_[received_steps_])
    ++received_steps_;
  if (begun_)
    while (next_send_step_ < steps_ && next_send_step_ <= received_steps_)
      SendStep(next_send_step_++);
  if (!finished_ && received_steps_ == steps_) {
    finished_ = true;
    finished_at_ = Simulator::Now();
    if (on_done_) on_done_();
  }
}

// ---- BackgroundTraffic --------------------------------------------------------------------------

namespace {
constexpr std::uint16_t kLongFlowPort = 5000;    // + flow index
constexpr std::uint16_t kShortFlowPort = 10000;  // + flow index mod kShortFlowPorts
constexpr std::uint32_t kShortFlowPorts = 50000;
}  // namespace

BackgroundTraffic::BackgroundTraffic(const NodeContainer& hosts,
                                     const std::vector<Ipv4Address>& ips,
                                     const std::vector<unsigned>& host_edge,
                                     const BackgroundOptions& o, Time start)
    : hosts_(hosts), ips_(ips), o_(o), rng_(o.seed) {
  const std::uint32_t n = hosts_.GetN();
  rate_per_s_ =
      o.flow_bytes > 0 ? o.load * n * o.host_bps / (8.0 * static_cast<double>(o.flow_bytes)) : 0;
  if (rate_per_s_ > 0 && n >= 2) {
    std::exponential_distribution<double> gap(rate_per_s_);
    Simulator::Schedule(std::max(start - Simulator::Now(), Time(0)) + Seconds(gap(rng_)),
                        &BackgroundTraffic::Arrival, this);
  }
  std::uniform_int_distribution<std::uint32_t> pick(0, n - 1);
  for (unsigned f = 0; f < o.long_flows; ++f) {
    const std::uint32_t src = pick(rng_);
    std::uint32_t dst = pick(rng_);
    for (int tries = 0; host_edge[dst] == host_edge[src] && tries < 1000; ++tries) dst = pick(rng_);
    if (host_edge[dst] == host_edge[src])
      NS_FATAL_ERROR("background: every host is on one switch, no long flow crosses the fabric");
    const std::uint16_t port = static_cast<std::uint16_t>(kLongFlowPort + f);
    PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
    ApplicationContainer rx = sink.Install(hosts_.Get(dst));
    rx.Start(Seconds(0));
    long_sinks_.push_back(rx.Get(0));
    BulkSendHelper bulk("ns3::TcpSocketFactory", InetSocketAddress(ips_[dst], port));
    bulk.SetAttribute("MaxBytes", UintegerValue(0));  // never ends
    bulk.SetAttribute("SendSize", UintegerValue(64 * 1024));
    ApplicationContainer tx = bulk.Install(hosts_.Get(src));
    tx.Start(Seconds(0));
    pairs_.emplace_back(src, dst);
  }
}

void BackgroundTraffic::Arrival() {
  std::uniform_int_distribution<std::uint32_t> pick(0, hosts_.GetN() - 1);
  const std::uint32_t src = pick(rng_);
  std::uint32_t dst = pick(rng_);
  while (dst == src) dst = pick(rng_);
  const std::size_t flow = short_.size();
  const std::uint16_t port = static_cast<std::uint16_t>(kShortFlowPort + flow % kShortFlowPorts);
  PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
  ApplicationContainer rx = sink.Install(hosts_.Get(dst));
  rx.Start(Seconds(0));
  rx.Get(0)->TraceConnectWithoutContext(
      "Rx", MakeCallback(&BackgroundTraffic::Received, this).Bind(flow));
  sinks_.push_back(rx.Get(0));
  short_.push_back({Simulator::Now(), 0, false});
  BulkSendHelper bulk("ns3::TcpSocketFactory", InetSocketAddress(ips_[dst], port));
  bulk.SetAttribute("MaxBytes", UintegerValue(o_.flow_bytes));
  bulk.SetAttribute("SendSize", UintegerValue(64 * 1024));
  ApplicationContainer app = bulk.Install(hosts_.Get(src));
  app.Start(Seconds(0));
  ++started_;
  std::exponential_distribution<double> gap(rate_per_s_);
  Simulator::Schedule(Seconds(gap(rng_)), &BackgroundTraffic::Arrival, this);
}

void BackgroundTraffic::Received(std::size_t flow, Ptr<const Packet> p, const Address&) {
  ShortFlow& f = short_[flow];
  f.received += p->GetSize();
  if (!f.done && f.received >= o_.flow_bytes) {
    f.done = true;
    fct_.push_back((Simulator::Now() - f.began).GetSeconds());
  }
}

std::uint64_t BackgroundTraffic::flows_unfinished() const {
  std::uint64_t n = 0;
  for (const ShortFlow& f : short_) n += f.done ? 0 : 1;
  return n;
}

std::vector<std::uint64_t> BackgroundTraffic::long_flow_bytes() const {
  std::vector<std::uint64_t> out;
  for (const auto& a : long_sinks_) out.push_back(DynamicCast<PacketSink>(a)->GetTotalRx());
  return out;
}

std::uint64_t BackgroundTraffic::bytes_received() const {
  std::uint64_t total = 0;
  for (const auto& a : sinks_) total += DynamicCast<PacketSink>(a)->GetTotalRx();
  for (const std::uint64_t b : long_flow_bytes()) total += b;
  return total;
}

}  // namespace netagg::fabric
