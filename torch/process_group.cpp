// SPDX-License-Identifier: Apache-2.0
#include "process_group.hpp"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include <cstdlib>
#include <exception>
#include <span>
#include <sstream>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

namespace netagg::torch_backend {

static_assert(sizeof(at::BFloat16) == sizeof(Bf16), "torch.bfloat16 and netagg::Bf16 differ");

std::string dtype_name(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
      return "float32";
    case at::kDouble:
      return "float64";
    case at::kHalf:
      return "float16";
    case at::kBFloat16:
      return "bfloat16";
    case at::kInt:
      return "int32";
    case at::kLong:
      return "int64";
    case at::kShort:
      return "int16";
    case at::kChar:
      return "int8";
    case at::kByte:
      return "uint8";
    case at::kBool:
      return "bool";
    default:
      return c10::toString(t);
  }
}

std::string reduce_op_name(const c10d::ReduceOp& op) {
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
      return "SUM";
    case c10d::ReduceOp::AVG:
      return "AVG";
    case c10d::ReduceOp::PRODUCT:
      return "PRODUCT";
    case c10d::ReduceOp::MIN:
      return "MIN";
    case c10d::ReduceOp::MAX:
      return "MAX";
    case c10d::ReduceOp::BAND:
      return "BAND";
    case c10d::ReduceOp::BOR:
      return "BOR";
    case c10d::ReduceOp::BXOR:
      return "BXOR";
    case c10d::ReduceOp::PREMUL_SUM:
      return "PREMUL_SUM";
    default:
      return fmt::format("ReduceOp({})", static_cast<int>(op.op_));
  }
}

NetaggWork::NetaggWork(int rank, c10d::OpType type, std::vector<at::Tensor> tensors)
    : Work(rank, type, "netagg:all_reduce", tensors),
      tensors_(std::move(tensors)),
      future_(
          c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {
}

void NetaggWork::complete(std::exception_ptr error) {
  if (error)
    future_->setError(error);
  else
    future_->markCompleted(c10::IValue(tensors_));
  finish(error);
}

namespace {

std::vector<std::uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }
std::string text(const std::vector<std::uint8_t>& b) { return {b.begin(), b.end()}; }

// One step of start-up that every rank takes: each publishes its outcome (an empty `error` is
// success, `value` goes with it), waits for all ranks' outcomes, and throws naming the first rank
// that failed. Returns rank 0's value. Without it a rank that cannot start would leave the others
// waiting in the next step (the Gloo rendezvous, a first all-reduce) until their timeouts.
std::string check_in(c10d::Store& store, const std::string& step, int rank, int size,
                     const std::string& error, const std::string& value,
                     std::chrono::milliseconds timeout) {
  const auto key = [&](int r) { return fmt::format("{}/{}", step, r); };
  store.set(key(rank), bytes(error.empty() ? "ok " + value : "error " + error));
  if (!error.empty()) throw std::runtime_error(error);
  std::vector<std::string> keys;
  for (int r = 0; r < size; ++r) keys.push_back(key(r));
  try {
    store.wait(keys, timeout);
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format(
        "netagg: not every rank of {} started within {} ms ({}): start all {} ranks, or check "
        "the other ranks' output",
        size, timeout.count(), e.what(), size));
  }
  std::string first;
  for (int r = 0; r < size; ++r) {
    const std::string v = text(store.get(key(r)));
    if (v.rfind("error ", 0) == 0)
      throw std::runtime_error(fmt::format("netagg: rank {} could not start: {}", r, v.substr(6)));
    if (r == 0) first = v.substr(3);
  }
  return first;
}

// The rank variable Config::from_env took the rank from, for messages.
std::string rank_source() {
  for (const char* name : {"NETAGG_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "RANK"})
    if (std::getenv(name)) return fmt::format("{}={}", name, std::getenv(name));
  return "the NETAGG_CONFIG file";
}

std::string job_source() {
  if (const char* f = std::getenv("NETAGG_JOB_FILE")) return fmt::format("NETAGG_JOB_FILE={}", f);
  if (const char* f = std::getenv("NETAGG_CONFIG")) return fmt::format("NETAGG_CONFIG={}", f);
  return "the configuration";
}

// The job and settings of this rank, checked against the process group's rank and size.
Config load_config(int rank, int size) {
  Config cfg;
  try {
    cfg = Config::from_env();
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format(
        "netagg: configuration: {} (docs/configuration.md, docs/pytorch.md)", e.what()));
  }
  if (cfg.job.world_size() != static_cast<std::size_t>(size))
    throw std::runtime_error(fmt::format(
        "netagg: the process group has {} ranks but the job ({}) has {} workers: the job must "
        "list one worker per rank",
        size, job_source(), cfg.job.world_size()));
  if (cfg.rank != rank)
    throw std::runtime_error(fmt::format(
        "netagg: this process is rank {} of the process group but netagg's configuration says "
        "rank {} ({})",
        rank, cfg.rank, rank_source()));
  return cfg;
}

// The process group's c10d store as the host fallback's rendezvous (netagg/peers.hpp).
class C10dPeerStore final : public PeerStore {
 public:
  explicit C10dPeerStore(c10::intrusive_ptr<c10d::Store> store) : store_(std::move(store)) {}
  void set(const std::string& key, const std::vector<char>& value) override {
    store_->set(key, std::vector<std::uint8_t>(value.begin(), value.end()));
  }
  std::vector<char> get(const std::string& key) override {
    const std::vector<std::uint8_t> v = store_->get(key);
    return {v.begin(), v.end()};
  }
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    store_->wait(keys, timeout);
  }

 private:
  c10::intrusive_ptr<c10d::Store> store_;
};

// The host fallback's peer group through the process group's store (docs/fallback.md): made
// unless the configuration turns the fallback off.
std::shared_ptr<Peers> make_peers(const c10::intrusive_ptr<c10d::Store>& store,
                                  const std::string& prefix, const Config& cfg) {
  if (cfg.fallback == Fallback::kOff) return nullptr;
  const std::string local = cfg.local_address().to_string();
  return make_gloo_peers(
      std::make_shared<C10dPeerStore>(c10::make_intrusive<c10d::PrefixStore>(prefix, store)),
      "fallback", local.substr(0, local.rfind(':')), cfg.rank,
      static_cast<int>(cfg.job.world_size()),
      std::chrono::duration_cast<std::chrono::milliseconds>(cfg.fallback_timeout));
}

c10::intrusive_ptr<c10d::ProcessGroupGloo> make_gloo(const c10::intrusive_ptr<c10d::Store>& store,
                                                     int rank, int size,
                                                     std::chrono::milliseconds timeout) {
  // As torch.distributed makes a Gloo group: GLOO_SOCKET_IFNAME names the interfaces (comma
  // separated), else the device of the host name.
  auto opts = c10d::ProcessGroupGloo::Options::create();
  opts->timeout = timeout;
  if (const char* ifnames = std::getenv("GLOO_SOCKET_IFNAME"); ifnames && *ifnames) {
    std::stringstream list(ifnames);
    for (std::string name; std::getline(list, name, ',');)
      if (!name.empty())
        opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(name));
  } else {
    opts->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  }
  opts->threads = static_cast<int>(opts->devices.size()) * 2;
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, opts);
}

}  // namespace

ProcessGroupNetagg::ProcessGroupNetagg(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                       int size, std::chrono::milliseconds timeout)
    : ProcessGroup(rank, size) {
  // Keys of this process group's start-up: a group made after another on the same store (the
  // agent's store of torchrun outlives process groups) must not read the earlier one's keys.
  // Every rank adds 1 per group, so the generation is the same on all ranks.
  const std::int64_t generation = (store->add("netagg/arrivals", 1) - 1) / size;
  const std::string prefix = fmt::format("netagg/{}", generation);

  Config cfg;
  std::string error;
  try {
    cfg = load_config(rank, size);
  } catch (const std::exception& e) {
    error = e.what();
  }
  // The epoch: NETAGG_EPOCH if the user set one, else rank 0's draw (a launcher's run id is not
  // enough: torchrun's default is "none" for every run).
  const bool epoch_from_env = std::getenv("NETAGG_EPOCH") != nullptr;
  std::string epoch_text;
  if (rank == 0 && error.empty() && !epoch_from_env) epoch_text = std::to_string(random_epoch());
  const std::string shared =
      check_in(*store, prefix + "/config", rank, size, error, epoch_text, timeout);
  if (!epoch_from_env) cfg.epoch = static_cast<std::uint32_t>(std::stoul(shared));

  // The socket first, and every rank's outcome known, before the fallback's rendezvous: a rank
  // that cannot bind must not leave the others inside the rendezvous, where its going away is
  // "a worker is gone" at best and a wait until the rendezvous' timeout at worst.
  std::unique_ptr<Transport> transport;
  try {
    transport = make_transport(cfg);
  } catch (const std::exception& e) {
    error = fmt::format("netagg: {}", e.what());
  }
  check_in(*store, prefix + "/socket", rank, size, error, "", timeout);
  try {
    // The fallback's rendezvous is the process group's store, whatever NETAGG_STORE says.
    comm_ = std::make_unique<Communicator>(cfg, std::move(transport),
                                           make_peers(store, prefix + "/fallback", cfg));
  } catch (const std::exception& e) {
    error = fmt::format("netagg: {}", e.what());
  }
  check_in(*store, prefix + "/communicator", rank, size, error, "", timeout);

  gloo_ = make_gloo(c10::make_intrusive<c10d::PrefixStore>(prefix + "/gloo", store), rank, size,
                    timeout);
  completer_ = std::thread([this] { complete_in_order(); });
  init();
}

ProcessGroupNetagg::~ProcessGroupNetagg() {
  {
    std::lock_guard lock(pending_mutex_);
    stopping_ = true;
  }
  pending_cv_.notify_all();
  if (completer_.joinable()) completer_.join();  // after every queued operation is complete
}

c10::intrusive_ptr<c10d::Work> ProcessGroupNetagg::enqueue(std::vector<at::Tensor>& tensors,
                                                           c10d::ReduceOp op, c10d::OpType type,
                                                           const char* name) {
  for (const at::Tensor& t : tensors) {
    TORCH_CHECK(t.defined(), "netagg: ", name, " of an undefined tensor");
    TORCH_CHECK(t.device().is_cpu(), "netagg: ", name, " of a tensor on ", t.device().str(),
                ": the netagg backend takes CPU tensors only");
    TORCH_CHECK(t.layout() == at::kStrided, "netagg: ", name, " of a ", t.layout(),
                " tensor: the netagg backend takes dense (strided) tensors only");
    const auto dtype = t.scalar_type();
    const bool supported = dtype == at::kFloat || dtype == at::kInt || dtype == at::kBFloat16;
    TORCH_CHECK(op.op_ == c10d::ReduceOp::SUM && supported, "netagg: ", name, " with ReduceOp ",
                reduce_op_name(op), " on ", dtype_name(dtype),
                " is not supported: the netagg backend sums (ReduceOp SUM) float32, int32 and "
                "bfloat16 tensors");
    // Checked here, before anything of the call is queued (netagg refuses it too).
    TORCH_CHECK(
        dtype != at::kBFloat16 || adds_floats(comm_->config().float_wire), "netagg: ", name,
        " with ReduceOp SUM on bfloat16 is not supported by this "
        "aggregator: it adds integers (NETAGG_FLOAT_WIRE int32-bfp: the switch); bfloat16 "
        "needs one that adds floats (NETAGG_FLOAT_WIRE=fp32 or fp32-exact: the FPGA aggregator)");
  }

  Pending p;
  p.work = c10::make_intrusive<NetaggWork>(rank_, type, tensors);
  std::lock_guard lock(enqueue_mutex_);  // the handles enter our queue in netagg's order
  for (const at::Tensor& t : tensors) {
    // A contiguous tensor goes to netagg as it is (a DDP bucket is one); another through a copy.
    at::Tensor data = t.is_contiguous() ? t : t.contiguous();
    p.staging.push_back(data.is_same(t) ? at::Tensor() : data);
    const auto n = static_cast<std::size_t>(data.numel());
    try {
      switch (data.scalar_type()) {
        case at::kFloat:
          p.handles.push_back(comm_->allreduce_async(std::span<float>(data.data_ptr<float>(), n)));
          break;
        case at::kInt:
          p.handles.push_back(
              comm_->allreduce_async(std::span<std::int32_t>(data.data_ptr<std::int32_t>(), n)));
          break;
        default:  // bfloat16, checked above
          p.handles.push_back(comm_->allreduce_async(
              std::span<Bf16>(reinterpret_cast<Bf16*>(data.data_ptr<at::BFloat16>()), n)));
          break;
      }
    } catch (const Error& e) {
      // Not reached for what the checks above refuse. Tensors of this call already queued are
      // still being all-reduced: they stay alive in our queue until netagg is done with them.
      const std::string message =
          fmt::format("netagg: {} of {}: {}", name, dtype_name(data.scalar_type()), e.what());
      if (!p.handles.empty()) {
        p.staging.resize(p.handles.size());
        std::lock_guard pending_lock(pending_mutex_);
        pending_.push_back(std::move(p));
        pending_cv_.notify_all();
      }
      TORCH_CHECK(false, message);
    }
  }
  auto work = p.work;
  {
    std::lock_guard pending_lock(pending_mutex_);
    pending_.push_back(std::move(p));
  }
  pending_cv_.notify_all();
  return work;
}

void ProcessGroupNetagg::complete_in_order() {
  for (;;) {
    Pending p;
    {
      std::unique_lock lock(pending_mutex_);
      pending_cv_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
      if (pending_.empty()) return;
      p = std::move(pending_.front());
      pending_.pop_front();
    }
    std::exception_ptr error;
    for (std::size_t i = 0; i < p.handles.size(); ++i) {
      std::string failure;
      try {
        p.handles[i].wait();
        if (p.staging[i].defined()) p.work->result()[i].copy_(p.staging[i]);
      } catch (const c10::Error& e) {
        failure = e.what_without_backtrace();
      } catch (const std::exception& e) {
        failure = e.what();
      }
      if (!failure.empty() && !error)
        error = std::make_exception_ptr(
            std::runtime_error(fmt::format("netagg: allreduce failed: {}", failure)));
    }
    p.work->complete(error);
  }
}

c10::intrusive_ptr<c10d::Work> ProcessGroupNetagg::allreduce(std::vector<at::Tensor>& tensors,
                                                             const c10d::AllreduceOptions& opts) {
  TORCH_CHECK(tensors.size() == 1, "netagg: allreduce takes one tensor per process, got ",
              tensors.size());
  return enqueue(tensors, opts.reduceOp, c10d::OpType::ALLREDUCE, "allreduce");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupNetagg::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  return enqueue(tensors, opts.reduceOp, c10d::OpType::ALLREDUCE_COALESCED, "allreduce_coalesced");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupNetagg::broadcast(std::vector<at::Tensor>& tensors,
                                                             const c10d::BroadcastOptions& opts) {
  return gloo_->broadcast(tensors, opts);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupNetagg::reduce(std::vector<at::Tensor>& tensors,
                                                          const c10d::ReduceOptions& opts) {
  return gloo_->reduce(tensors, opts);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupNetagg::allgather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  return gloo_->allgather(outputs, inputs, opts);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupNetagg::_allgather_base(
    at::Tensor& output, at::Tensor& input, const c10d::AllgatherOptions& opts) {
  return gloo_->_allgather_base(output, input, opts);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupNetagg::allgather_coalesced(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  return gloo_->allgather_coalesced(outputs, inputs, opts);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupNetagg::gather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::GatherOptions& opts) {
  return gloo_->gather(outputs, inputs, opts);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupNetagg::scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ScatterOptions& opts) {
  return gloo_->scatter(outputs, inputs, opts);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupNetagg::reduce_scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  return gloo_->reduce_scatter(outputs, inputs, opts);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupNetagg::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  return gloo_->_reduce_scatter_base(output, input, opts);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupNetagg::alltoall_base(
    at::Tensor& output, at::Tensor& input, std::vector<std::int64_t>& output_split_sizes,
    std::vector<std::int64_t>& input_split_sizes, const c10d::AllToAllOptions& opts) {
  return gloo_->alltoall_base(output, input, output_split_sizes, input_split_sizes, opts);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupNetagg::alltoall(std::vector<at::Tensor>& outputs,
                                                            std::vector<at::Tensor>& inputs,
                                                            const c10d::AllToAllOptions& opts) {
  return gloo_->alltoall(outputs, inputs, opts);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupNetagg::send(std::vector<at::Tensor>& tensors,
                                                        int dst_rank, int tag) {
  return gloo_->send(tensors, dst_rank, tag);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupNetagg::recv(std::vector<at::Tensor>& tensors,
                                                        int src_rank, int tag) {
  return gloo_->recv(tensors, src_rank, tag);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupNetagg::recvAnysource(std::vector<at::Tensor>& tensors,
                                                                 int tag) {
  return gloo_->recvAnysource(tensors, tag);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupNetagg::barrier(const c10d::BarrierOptions& opts) {
  return gloo_->barrier(opts);
}

void ProcessGroupNetagg::monitoredBarrier(const c10d::BarrierOptions& opts, bool wait_all_ranks) {
  gloo_->monitoredBarrier(opts, wait_all_ranks);
}

void ProcessGroupNetagg::setSequenceNumberForGroup() { gloo_->setSequenceNumberForGroup(); }

std::uint64_t ProcessGroupNetagg::getSequenceNumberForGroup() {
  return gloo_->getSequenceNumberForGroup();
}

}  // namespace netagg::torch_backend
