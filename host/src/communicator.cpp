// SPDX-License-Identifier: Apache-2.0
// The communicator: a queue of all-reduce operations run in order by one thread per
// communicator, each operation a PacketSource (how the caller's elements become packets and
// results become elements again) driven through the sans-IO engine over a Transport.
#include "netagg/communicator.hpp"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "netagg/codec.hpp"
#ifdef NETAGG_HAVE_DPDK
#include "netagg/dpdk.hpp"
#endif
#include "netagg/engine.hpp"

namespace netagg {

struct Handle::State {
  std::mutex mutex;
  std::condition_variable done_cv;
  bool done = false;
  std::exception_ptr error;

  void finish(std::exception_ptr e) {
    {
      std::lock_guard lock(mutex);
      done = true;
      error = std::move(e);
    }
    done_cv.notify_all();
  }
};

void Handle::wait() {
  if (!state_) throw Error(Errc::kInvalidArgument, "wait() on an empty Handle");
  std::unique_lock lock(state_->mutex);
  state_->done_cv.wait(lock, [&] { return state_->done; });
  if (state_->error) std::rethrow_exception(state_->error);
}

bool Handle::ready() const {
  if (!state_) return false;
  std::lock_guard lock(state_->mutex);
  return state_->done;
}

namespace {

// Chunk c of a tensor of n elements cut into pieces of `per_packet`.
struct Chunking {
  std::size_t n = 0;
  std::size_t per_packet = 1;
  std::uint64_t chunks() const { return (n + per_packet - 1) / per_packet; }
  std::size_t offset(std::uint64_t c) const { return static_cast<std::size_t>(c) * per_packet; }
  std::size_t size(std::uint64_t c) const { return std::min(per_packet, n - offset(c)); }
};

// Elements travel as they are (int32, or fp32 to an fp32-capable aggregator): packet p is
// chunk p, no exponent.
template <typename T, wire::DataType kDtype>
class RawSource final : public PacketSource {
 public:
  RawSource(std::span<T> data, std::size_t per_packet)
      : data_(data), chunks_{data.size(), per_packet} {}

  std::uint64_t packet_count() const override { return chunks_.chunks(); }

  void fill(std::uint64_t p, wire::Header& h, std::span<std::byte> payload) override {
    h.dtype = kDtype;
    h.count = static_cast<std::uint16_t>(chunks_.size(p));
    h.exponent = wire::kExponentNone;
    codec::store_be(std::span<const T>(data_.subspan(chunks_.offset(p), h.count)), payload.data());
  }

  void deliver(std::uint64_t p, const wire::Header& h,
               std::span<const std::byte> payload) override {
    // The engine delivers only results of the shape that was sent: h.count == chunk size.
    codec::load_be(payload.data(), data_.subspan(chunks_.offset(p), h.count));
  }

 private:
  std::span<T> data_;
  Chunking chunks_;
};

// fp32 through an integer aggregator, SwitchML's block floating point. Exponents travel `lead`
// packets ahead of the data: packet p carries in its exponent field the local block exponent of
// chunk p and as payload chunk p - lead, quantized with chunk p - lead's global exponent, which
// the result of packet p - lead brought back (the aggregator max-reduces exponents). The first
// `lead` packets carry exponents only, the last `lead` data only: packets = chunks + lead.
// Pipelined in one engine operation, lead = W: the engine sends packet p only after the result
// of p - W. A tensor of fewer chunks than W runs as two operations with lead = chunks (all
// exponents, then all data; see SubrangeSource), which sends 2 * chunks packets, not chunks + W.
class BlockFloatSource final : public PacketSource {
 public:
  BlockFloatSource(std::span<float> data, std::size_t per_packet, std::size_t lead, int world)
      : data_(data),
        chunks_{data.size(), per_packet},
        lead_(lead),
        world_(world),
        global_exponent_(chunks_.chunks(), wire::kExponentNone) {}

  std::uint64_t packet_count() const override { return chunks_.chunks() + lead_; }

  void fill(std::uint64_t p, wire::Header& h, std::span<std::byte> payload) override {
    h.dtype = wire::DataType::kInt32;
    h.exponent = p < chunks_.chunks() ? codec::block_exponent(std::span<const float>(chunk(p)))
                                      : wire::kExponentNone;
    if (p < lead_) {
      h.count = 0;
      return;
    }
    const std::uint64_t c = p - lead_;
    const auto x = chunk(c);
    h.count = static_cast<std::uint16_t>(x.size());
    const std::int16_t e = global_exponent_[c];
    if (e == wire::kExponentNone || e == wire::kExponentNonFinite) {
      // All-zero chunk everywhere, or somebody's chunk is not finite (the result becomes NaN
      // by its exponent): the values do not matter, send zeros to keep the slot's count.
      std::fill_n(payload.data(), x.size() * sizeof(std::int32_t), std::byte{0});
    } else {
      codec::quantize(std::span<const float>(x), e, world_, payload.data());
    }
  }

  void deliver(std::uint64_t p, const wire::Header& h,
               std::span<const std::byte> payload) override {
    // An exponent no worker can have sent means a broken aggregator: fail loudly rather than
    // dequantize garbage (a retransmission would get the same stored result back).
    if (!codec::is_valid_exponent(h.exponent))
      throw Error(Errc::kTransport,
                  fmt::format("aggregator returned block exponent {} (outside [{}, {}]) in the "
                              "result of slot {} seq {}",
                              h.exponent, codec::kMinExponent, codec::kMaxExponent, h.slot, h.seq));
    if (p < chunks_.chunks()) global_exponent_[p] = h.exponent;
    if (p < lead_) return;  // a preamble packet: exponent only
    const std::uint64_t c = p - lead_;
    codec::dequantize(payload.data(), global_exponent_[c], world_, chunk(c));
  }

 private:
  std::span<float> chunk(std::uint64_t c) const {
    return data_.subspan(chunks_.offset(c), chunks_.size(c));
  }

  std::span<float> data_;
  Chunking chunks_;
  std::size_t lead_;
  int world_;
  std::vector<std::int16_t> global_exponent_;  // per chunk, from the results of the preamble
};

// Packets [begin, end) of another source, as an operation of their own.
class SubrangeSource final : public PacketSource {
 public:
  SubrangeSource(PacketSource& inner, std::uint64_t begin, std::uint64_t end)
      : inner_(inner), begin_(begin), end_(end) {}
  std::uint64_t packet_count() const override { return end_ - begin_; }
  void fill(std::uint64_t p, wire::Header& h, std::span<std::byte> payload) override {
    inner_.fill(begin_ + p, h, payload);
  }
  void deliver(std::uint64_t p, const wire::Header& h,
               std::span<const std::byte> payload) override {
    inner_.deliver(begin_ + p, h, payload);
  }

 private:
  PacketSource& inner_;
  std::uint64_t begin_, end_;
};

// Different seeds per rank, so that the workers of one job do not lose the same packets.
std::uint64_t rank_seed(std::uint64_t seed, int rank) {
  return seed ^ (0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(rank + 1));
}

// Idle wait when the engine has no deadline (it always has one while running; this is a guard).
constexpr Duration kIdlePoll = std::chrono::milliseconds(50);

}  // namespace

struct Communicator::Impl {
  struct Op {
    std::variant<std::span<float>, std::span<std::int32_t>> data;
    std::shared_ptr<Handle::State> state;
  };

  Impl(Config c, std::unique_ptr<Transport> t)
      : cfg(std::move(c)), transport(std::move(t)), engine(cfg.engine_params()) {
    if (cfg.loss > 0)
      transport = with_loss(std::move(transport), cfg.loss, rank_seed(cfg.loss_seed, cfg.rank));
    worker = std::thread([this] { run(); });
  }

  ~Impl() {
    {
      std::lock_guard lock(mutex);
      stopping = true;
    }
    queue_cv.notify_all();
    worker.join();
  }

  Handle enqueue(std::variant<std::span<float>, std::span<std::int32_t>> data) {
    auto state = std::make_shared<Handle::State>();
    {
      std::lock_guard lock(mutex);
      queue.push_back({data, state});
    }
    queue_cv.notify_all();
    return Handle(state);
  }

  void run() {
    for (;;) {
      Op op;
      {
        std::unique_lock lock(mutex);
        queue_cv.wait(lock, [&] { return stopping || !queue.empty(); });
        if (queue.empty()) return;  // stopping, and everything queued is done
        op = std::move(queue.front());
        queue.pop_front();
      }
      std::exception_ptr error;
      try {
        execute(op);
        ++completed;
      } catch (...) {
        error = std::current_exception();
      }
      {
        std::lock_guard lock(mutex);
        stats_snapshot = engine.stats();
        stats_snapshot.operations = completed;  // all-reduce calls, not engine operations
        counters_snapshot = transport->counters();
      }
      op.state->finish(error);
    }
  }

  void execute(Op& op) {
    if (broken)
      throw Error(broken->code(), fmt::format("an earlier all-reduce on this "
                                              "communicator failed: {}",
                                              broken->what()));
    try {
      std::visit([&](auto data) { execute(data); }, op.data);
    } catch (const Error& e) {
      broken = e;
      throw;
    }
  }

  void execute(std::span<std::int32_t> data) {
    if (data.empty()) return;
    RawSource<std::int32_t, wire::DataType::kInt32> src(data, cfg.job.elements_per_packet);
    drive(src);
  }

  void execute(std::span<float> data) {
    if (data.empty()) return;
    if (cfg.float_wire == FloatWire::kFp32) {
      RawSource<float, wire::DataType::kFp32> src(data, cfg.job.elements_per_packet);
      drive(src);
    } else {
      const std::uint64_t per_packet = cfg.job.elements_per_packet;
      const std::uint64_t chunks = (data.size() + per_packet - 1) / per_packet;
      const int world = static_cast<int>(cfg.job.world_size());
      const std::size_t window = engine.params().window;  // the exponents' lead
      if (chunks >= window) {
        BlockFloatSource src(data, per_packet, window, world);
        drive(src);
      } else {
        BlockFloatSource src(data, per_packet, chunks, world);
        SubrangeSource exponents(src, 0, chunks), values(src, chunks, 2 * chunks);
        drive(exponents);
        drive(values);
      }
    }
  }

  // Runs one operation to its end: packets out, results in, timers, until done or failed.
  // The engine's transmits stay valid until cleared, so a whole received batch is answered
  // with one send().
  void drive(PacketSource& src) {
    engine.start(src, Clock::now());
    const auto handle_packet = [&](std::span<const std::byte> packet) {
      engine.on_packet(packet, Clock::now(), transport->last_ecn());
    };
    for (;;) {
      if (!engine.transmits().empty()) {
        transport->send(engine.transmits());
        engine.clear_transmits();
      }
      if (engine.state() != Engine::State::kRunning) break;
      const auto deadline = engine.next_deadline();
      const Duration wait =
          deadline ? std::max(Duration::zero(), *deadline - Clock::now()) : kIdlePoll;
      transport->receive(wait, handle_packet);
      if (engine.state() != Engine::State::kRunning) continue;  // send leftovers, then leave
      const auto due = engine.next_deadline();
      const auto now = Clock::now();
      if (due && now >= *due) engine.on_timer(now);
    }
    if (engine.state() == Engine::State::kFailed) throw Error(Errc::kTimeout, engine.failure());
  }

  Config cfg;
  std::unique_ptr<Transport> transport;
  Engine engine;
  std::optional<Error> broken;  // the first failure; only the worker thread touches it

  mutable std::mutex mutex;
  std::condition_variable queue_cv;
  std::deque<Op> queue;
  bool stopping = false;
  std::uint64_t completed = 0;  // all-reduce calls that succeeded (worker thread only)
  EngineStats stats_snapshot;
  TransportCounters counters_snapshot;
  std::thread worker;  // last: starts after everything above is built
};

namespace {

Config validated(Config cfg) {
  cfg.validate();
  if (!cfg.epoch)
    throw Error(Errc::kConfig,
                "epoch: not set. Every worker of a run needs the same epoch, a new one for each "
                "run: set NETAGG_EPOCH (e.g. to $(od -An -N4 -tu4 /dev/urandom) once for all "
                "workers), start the workers with mpirun, torchrun or srun, or set Config::epoch");
  return cfg;
}

}  // namespace

std::unique_ptr<Transport> make_transport(const Config& cfg) {
  if (cfg.transport == "udp")
    return make_udp_transport(cfg.local_address(), cfg.aggregator_address(), cfg.udp_offload,
                              cfg.congestion_control);
  if (cfg.transport == "dpdk") {
#ifdef NETAGG_HAVE_DPDK
    const auto& worker = cfg.job.workers.at(static_cast<std::size_t>(cfg.rank));
    // The largest packet: a full chunk of 4-byte elements (int32, fp32 or block floating point).
    const std::size_t max_packet = wire::kHeaderSize + cfg.job.elements_per_packet * 4u;
    return dpdk::make_transport(cfg.dpdk, cfg.local_address(), worker.mac, cfg.aggregator_address(),
                                max_packet);
#else
    throw Error(Errc::kUnsupported,
                "transport: 'dpdk' is not built into this libnetagg (available: udp)");
#endif
  }
  throw Error(Errc::kConfig, fmt::format("transport: '{}' is not one of udp, dpdk", cfg.transport));
}

Communicator::Communicator(Config cfg) {
  cfg = validated(std::move(cfg));
  auto transport = make_transport(cfg);
  impl_ = std::make_unique<Impl>(std::move(cfg), std::move(transport));
}

Communicator::Communicator(Config cfg, std::unique_ptr<Transport> transport) {
  if (!transport) throw Error(Errc::kInvalidArgument, "Communicator: no transport given");
  impl_ = std::make_unique<Impl>(validated(std::move(cfg)), std::move(transport));
}

Communicator::~Communicator() = default;

int Communicator::rank() const { return impl_->cfg.rank; }
int Communicator::world_size() const { return static_cast<int>(impl_->cfg.job.world_size()); }
const Config& Communicator::config() const { return impl_->cfg; }

void Communicator::allreduce(std::span<float> data) { allreduce_async(data).wait(); }
void Communicator::allreduce(std::span<std::int32_t> data) { allreduce_async(data).wait(); }
Handle Communicator::allreduce_async(std::span<float> data) { return impl_->enqueue(data); }
Handle Communicator::allreduce_async(std::span<std::int32_t> data) { return impl_->enqueue(data); }

EngineStats Communicator::stats() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->stats_snapshot;
}

TransportCounters Communicator::transport_counters() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->counters_snapshot;
}

}  // namespace netagg
