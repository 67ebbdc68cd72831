// SPDX-License-Identifier: Apache-2.0
// One FPGA aggregator as the control plane sees it: its CSRs (formats/csr.json) behind a
// CsrBus, with the operations netagg-ctl and the daemons need (identify, the job table: read,
// add, remove; counters, reset). Where the CSRs are is the CsrBus's business; three kinds exist:
//
//   open_xrt_device()   an Alveo card over XRT: xrt::device, the xclbin, xrt::ip registers
//                       (built when XRT is found: xrt_available())
//   open_sim_device()   a running netagg-fpgad (the Verilated RTL or the HLS model) over its CSR
//                       control channel (csr_channel.hpp)
//   Device(bus, name)   any CsrBus in this process, e.g. a sim::FpgaModel (the Verilated RTL's
//                       AXI4-Lite port) in tests
//
// Every method throws netagg::Error: kUnsupported when the device is not the aggregator this
// driver speaks to (wrong design or wire version: a wrong xclbin), kConfig for a job the device
// cannot hold, kTransport when the device does not answer.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "netagg/fpga/control.hpp"
#include "netagg/fpga/csr_bus.hpp"
#include "netagg/job.hpp"

namespace netagg::fpga {

// VERSION bits 31:16 of the design this driver programs (hw/rtl/netagg_csr.sv DESIGN_VERSION,
// hls/ kDesignVersion).
inline constexpr unsigned kDesignVersion = 1;

class Device {
 public:
  // Owns the bus.
  Device(std::unique_ptr<CsrBus> bus, std::string name);
  // Borrows the bus (it must outlive the Device).
  Device(CsrBus& bus, std::string name);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // "Alveo device 0 (netagg.xclbin)", "netagg-fpgad at 127.0.0.1:9000": for messages.
  const std::string& name() const { return name_; }
  CsrBus& bus() { return *bus_; }

  // Reads VERSION and FEATURES and checks them: design version kDesignVersion, this build's
  // wire version, a plausible FEATURES. Throws Error(kUnsupported) naming the device and what it
  // answered when it is another design (on a card: a wrong xclbin).
  DeviceInfo identify();

  // The aggregator's address registers (AGG_MAC_*, AGG_IP, AGG_UDP_PORT) as they are now.
  AggregatorAddress aggregator_address();

  // The job table as the device holds it, entries 0..MAX_JOBS-1 (read_job_entry). Throws
  // Error(kUnsupported) naming the device for a design that cannot read it back.
  std::vector<JobTableEntry> job_table();

  // Places the jobs against the job table as the device holds it (place_jobs: a free entry each,
  // or the placement's; an entry that holds a job only with Placement::replace), checks them
  // against the device and programs them, entry by entry, with `aggregator` as the address
  // registers. Returns where each job went, in the jobs' order. Nothing is written when a job is
  // refused.
  std::vector<PlacedJob> add_jobs(std::span<const JobSpec> jobs, const Placement& placement,
                                  const AggregatorAddress& aggregator);
  // Empties the entry and clears its slots. Throws Error(kConfig) for an entry beyond MAX_JOBS.
  void remove_job(unsigned entry);

  std::vector<Counter> counters();
  void clear_counters();
  // Soft reset: slots, job table and counters cleared (the address registers stay).
  void reset();

 private:
  std::unique_ptr<CsrBus> owned_;
  CsrBus* bus_;
  std::string name_;
};

// --- a running netagg-fpgad ------------------------------------------------------------------

// Connects to the CSR control channel of netagg-fpgad ("IP:PORT", its --control address) and
// checks that it answers (one VERSION read). Throws Error(kConfig) for a malformed address,
// Error(kTransport) naming the address when nothing answers.
std::unique_ptr<Device> open_sim_device(const std::string& control_address);

// --- an Alveo card over XRT --------------------------------------------------------------------

struct XrtOptions {
  unsigned index = 0;  // xrt::device index (xbutil examine lists them)
  // The xclbin to load, and whose UUID names the kernel. Empty: use the xclbin already loaded
  // on the card (by an earlier `netagg-ctl fpga load`).
  std::string xclbin;
  // The aggregator's compute unit: the xrt::ip name "<kernel>:{<cu>}" ("" cu: the first CU of
  // the kernel in the xclbin).
  std::string kernel = "netagg_aggregator";
  std::string compute_unit;
};

// Whether this build has XRT (CMake NETAGG_XRT).
bool xrt_available();

// Checks the xclbin file (readable, an xclbin, holds the aggregator kernel) without a device.
// Throws Error(kConfig) naming the file and the problem (missing, corrupt, no netagg_aggregator
// IP: the IPs it has are listed). Returns the IP name "kernel:cu" found.
std::string check_xclbin(const XrtOptions& options);

// Opens device `index`, loads the xclbin (when given), opens the aggregator's registers and
// identifies it (Device::identify: a wrong xclbin is an error naming it). Errors name the device
// index and what to check: XILINX_XRT not set (XRT 2.13 needs it), no such device, xclbin
// problems (check_xclbin), load refused. Error(kUnsupported) when the build has no XRT.
std::unique_ptr<Device> open_xrt_device(const XrtOptions& options);

}  // namespace netagg::fpga
