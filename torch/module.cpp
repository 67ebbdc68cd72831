// SPDX-License-Identifier: Apache-2.0
// netagg_torch._C: the process group as a Python class derived from torch's ProcessGroup, which
// the package's __init__.py registers with torch.distributed as the backend "netagg".
#include <pybind11/chrono.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/python.h>

#include <string>

#include "process_group.hpp"

namespace py = pybind11;

namespace {

using netagg::torch_backend::ProcessGroupNetagg;

py::dict stats_of(const ProcessGroupNetagg& pg) {
  const netagg::EngineStats s = pg.stats();
  const netagg::TransportCounters t = pg.transport_counters();
  py::dict d;
  d["operations"] = s.operations;
  d["packets_sent"] = s.packets_sent;
  d["retransmissions"] = s.retransmissions;
  d["spurious_retransmissions"] = s.spurious_retransmissions;
  d["results"] = s.results;
  d["duplicates"] = s.duplicates;
  d["rejected"] = s.rejected;
  d["injected_drops"] = t.injected_drops;
  d["dropped_foreign"] = t.dropped_foreign;
  // The host fallback (docs/fallback.md).
  const netagg::FallbackStats f = pg.fallback_stats();
  d["fallback_sessions"] = f.sessions;
  d["fallback_chunks"] = f.host_packets;
  d["fallback_copied_results"] = f.shared_results;
  d["fallback_seconds"] = f.seconds;
  d["fallback_to_hosts"] = f.to_hosts;
  d["fallback_to_network"] = f.to_network;
  return d;
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "netagg's torch.distributed process group (import netagg_torch to register it)";
  // The base class must be known to pybind11 before a class derives from it.
  py::module_::import("torch.distributed");

  py::class_<ProcessGroupNetagg, c10d::ProcessGroup, c10::intrusive_ptr<ProcessGroupNetagg>>(
      m, "ProcessGroupNetagg",
      "allreduce (SUM on CPU float32, int32, bfloat16) through netagg; the other collectives "
      "through a Gloo group on the same store")
      .def(py::init([](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                       std::chrono::milliseconds timeout) {
             return c10::make_intrusive<ProcessGroupNetagg>(store, rank, size, timeout);
           }),
           py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout"),
           py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("epoch", &ProcessGroupNetagg::epoch,
                             "the run's epoch on the wire (the same on every rank)")
      .def_property_readonly(
          "float_wire",
          [](const ProcessGroupNetagg& pg) {
            return std::string(netagg::to_string(pg.config().float_wire));
          },
          "how float32 travels: int32-bfp (the switch) or fp32 (the FPGA aggregator)")
      .def_property_readonly(
          "aggregator",
          [](const ProcessGroupNetagg& pg) { return pg.config().aggregator_address().to_string(); },
          "the aggregator's IP:PORT")
      .def("stats", &stats_of,
           "netagg's packet counters of this rank, as of the last finished all-reduce");
}
