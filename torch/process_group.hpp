// SPDX-License-Identifier: Apache-2.0
// The torch.distributed backend "netagg": a c10d process group whose allreduce (ReduceOp SUM on
// CPU float32, int32 and bfloat16 tensors) runs through netagg's in-network aggregation, and whose
// other collectives (broadcast, barrier, allgather, reduce_scatter, ...) a Gloo process group made
// alongside on the same store does. docs/pytorch.md describes its use.
#pragma once

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "netagg/communicator.hpp"

namespace netagg::torch_backend {

// One all-reduce (or a coalesced group of them) as c10d sees it: completed by the process
// group's completion thread when netagg's handles are done.
class NetaggWork final : public c10d::Work {
 public:
  NetaggWork(int rank, c10d::OpType type, std::vector<at::Tensor> tensors);
  std::vector<at::Tensor> result() override { return tensors_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }
  // The future first (DDP waits on it), then the Work (wait() callers).
  void complete(std::exception_ptr error);

 private:
  std::vector<at::Tensor> tensors_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

class ProcessGroupNetagg final : public c10d::ProcessGroup {
 public:
  // The job and netagg's settings from the environment (netagg::Config::from_env: NETAGG_*, the
  // rank from NETAGG_RANK or the launcher's, docs/configuration.md); rank and size must match
  // them. The run's epoch is NETAGG_EPOCH if set, else drawn by rank 0 and shared through the
  // store. Every rank checks in through the store before and after opening its socket, so a
  // rank that cannot start makes all ranks fail with its message instead of leaving them waiting.
  ProcessGroupNetagg(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                     std::chrono::milliseconds timeout);
  ~ProcessGroupNetagg() override;

  const std::string getBackendName() const override { return "netagg"; }

  // Through netagg: ReduceOp SUM on one CPU tensor per process, float32, int32 or bfloat16 (the
  // last with float_wire fp32 only: an aggregator that adds floats). A contiguous tensor is
  // all-reduced in place, its storage handed to netagg as it is; another layout through a
  // contiguous copy, copied back on completion.
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  // Each tensor all-reduced as above, one Work for all of them.
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override;

  // Through Gloo.
  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<std::int64_t>& output_split_sizes,
                                               std::vector<std::int64_t>& input_split_sizes,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst_rank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src_rank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;
  void monitoredBarrier(const c10d::BarrierOptions& opts, bool wait_all_ranks) override;
  void setSequenceNumberForGroup() override;
  std::uint64_t getSequenceNumberForGroup() override;

  const Config& config() const { return comm_->config(); }
  std::uint32_t epoch() const { return *comm_->config().epoch; }
  EngineStats stats() const { return comm_->stats(); }
  FallbackStats fallback_stats() const { return comm_->fallback_stats(); }
  TransportCounters transport_counters() const { return comm_->transport_counters(); }
  const c10::intrusive_ptr<c10d::ProcessGroupGloo>& gloo() const { return gloo_; }

 private:
  struct Pending {
    std::vector<Handle> handles;
    std::vector<at::Tensor> staging;  // contiguous copies, or undefined where none was needed
    c10::intrusive_ptr<NetaggWork> work;
  };

  c10::intrusive_ptr<c10d::Work> enqueue(std::vector<at::Tensor>& tensors, c10d::ReduceOp op,
                                         c10d::OpType type, const char* name);
  void complete_in_order();

  std::unique_ptr<Communicator> comm_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> gloo_;

  std::mutex enqueue_mutex_;  // netagg's queue and ours in the same order

  std::mutex pending_mutex_;
  std::condition_variable pending_cv_;
  std::deque<Pending> pending_;
  bool stopping_ = false;
  std::thread completer_;  // waits on the handles in call order, the order netagg runs them
};

// The name torch gives a dtype ("float32", "bfloat16", ...), for error messages.
std::string dtype_name(at::ScalarType t);
// "SUM", "MAX", ...
std::string reduce_op_name(const c10d::ReduceOp& op);

}  // namespace netagg::torch_backend
