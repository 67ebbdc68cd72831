// SPDX-License-Identifier: Apache-2.0
#include "ctl_fpga.hpp"

#include <cctype>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "netagg/address.hpp"
#include "netagg/error.hpp"
#include "netagg/fpga/control.hpp"
#include "netagg/fpga/device.hpp"
#include "netagg/job.hpp"

namespace netagg::ctl {
namespace {

namespace fpga = netagg::fpga;

constexpr int kExitBadInput = 2;
constexpr int kExitDevice = 1;

struct FpgaOptions {
  std::optional<unsigned> device;
  std::string sim;
  std::string xclbin;
  std::string compute_unit;
  // job add
  std::string job_file;
  std::optional<unsigned> entry;
  bool replace = false;
  std::string aggregator;
  std::string aggregator_mac;
  std::string as;  // this aggregator's name in the jobs' trees
  // job remove
  unsigned remove_entry = 0;
  // job list, stats
  bool json = false;
  bool nonzero = false;
  // reset
  bool counters_only = false;
};

std::unique_ptr<fpga::Device> open(const FpgaOptions& o) {
  if (o.device) {
    fpga::XrtOptions x;
    x.index = *o.device;
    x.xclbin = o.xclbin;
    x.compute_unit = o.compute_unit;
    return fpga::open_xrt_device(x);
  }
  if (!o.xclbin.empty())
    throw Error(Errc::kConfig,
                "--xclbin is for --device: netagg-fpgad (--sim) has its RTL built in");
  return fpga::open_sim_device(o.sim);
}

void print_info(fpga::Device& device, const fpga::DeviceInfo& info) {
  const fpga::AggregatorAddress a = device.aggregator_address();
  std::printf(
      "%s: netagg aggregator design %u, wire format %u\n"
      "  %u ports, %u job table entries, %u slots, %u elements per packet, %u workers per job\n"
      "  aggregator address %s:%u, MAC %s\n",
      device.name().c_str(), info.design_version, info.wire_version, info.num_ports, info.max_jobs,
      info.slots, info.max_elements(), info.max_workers, format_ipv4(a.ip).c_str(), a.udp_port,
      format_mac(a.mac).c_str());
}

void load(const FpgaOptions& o) {
  if (o.device && o.xclbin.empty())
    throw Error(Errc::kConfig, "fpga load --device: --xclbin FILE is required");
  auto device = open(o);
  const fpga::DeviceInfo info = device->identify();
  if (o.device)
    std::printf("loaded %s\n", o.xclbin.c_str());
  else
    std::printf("netagg-fpgad has its model built in: nothing to load\n");
  print_info(*device, info);
}

void job_add(const FpgaOptions& o) {
  // The file first: its errors name the field and need no device. A job with trees becomes this
  // aggregator's part of each tree it is in (by --as, else by --aggregator's address).
  std::optional<Endpoint> aggregator;
  if (!o.aggregator.empty()) aggregator = Endpoint::parse(o.aggregator, "--aggregator");
  const std::vector<JobSpec> jobs = load_aggregator_jobs(o.job_file, o.as, aggregator);
  std::optional<wire::Mac> mac;
  if (!o.aggregator_mac.empty()) mac = parse_mac(o.aggregator_mac, "--aggregator-mac");

  auto device = open(o);
  const fpga::DeviceInfo info = device->identify();
  // One address for the whole device: --aggregator, else the job file's, else what it has.
  fpga::AggregatorAddress address = device->aggregator_address();
  const fpga::AggregatorAddress before = address;
  std::string source = "kept";
  if (aggregator) {
    address.ip = aggregator->ip;
    address.udp_port = aggregator->port;
    source = "from --aggregator";
  } else if (jobs.front().aggregator) {
    address.ip = jobs.front().aggregator->ip;
    address.udp_port = jobs.front().aggregator->port;
    source = fmt::format("from {}", o.job_file);
  }
  if (mac) address.mac = *mac;
  const std::vector<fpga::PlacedJob> placed =
      device->add_jobs(jobs, {.first_entry = o.entry, .replace = o.replace}, address);
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const JobSpec& job = jobs[i];
    if (placed[i].replaces)
      std::printf("replacing job %u in entry %u\n", *placed[i].replaces, placed[i].entry);
    std::string ports;
    for (const WorkerSpec& w : job.workers)
      ports += fmt::format("{}{}", ports.empty() ? "" : " ", fpga::worker_port(w, info.num_ports));
    std::printf(
        "job %u -> entry %u: %zu workers, slots [%u, %u), %u elements per packet, ports "
        "by rank %s\n",
        job.job_id, placed[i].entry, job.workers.size(), job.slot_base,
        job.slot_base + job.slot_count, job.elements_per_packet, ports.c_str());
    if (job.parent)
      std::printf("  child of %s as rank %u of job %u (its slots from %u, port %u)\n",
                  job.parent->address.to_string().c_str(), job.parent->rank, job.parent->job_id,
                  job.parent->slot_base, fpga::parent_port(*job.parent));
  }
  const bool changed =
      address.ip != before.ip || address.udp_port != before.udp_port || address.mac != before.mac;
  std::printf("aggregator address %s:%u (%s%s)\n", format_ipv4(address.ip).c_str(),
              address.udp_port, source.c_str(),
              changed ? "; changed: the device's other jobs use it too" : "");
}

void job_list(const FpgaOptions& o) {
  auto device = open(o);
  const std::vector<fpga::JobTableEntry> table = device->job_table();
  if (o.json) {
    nlohmann::json entries = nlohmann::json::array();
    for (const fpga::JobTableEntry& e : table) {
      if (!e.valid) continue;
      nlohmann::json j = {{"entry", e.entry},
                          {"job_id", e.job_id},
                          {"workers", e.workers},
                          {"slots", {{"base", e.slot_base}, {"count", e.slot_count}}},
                          {"elements_per_packet", e.elements_per_packet}};
      if (e.parent_job_id) j["parent_job_id"] = *e.parent_job_id;
      entries.push_back(j);
    }
    std::printf("%s\n",
                nlohmann::json{{"entries", table.size()}, {"jobs", entries}}.dump(2).c_str());
    return;
  }
  std::size_t used = 0;
  std::string text;
  for (const fpga::JobTableEntry& e : table) {
    if (!e.valid) continue;
    ++used;
    text += fmt::format("  entry {}: job {}, {} workers, slots [{}, {}), {} elements per packet",
                        e.entry, e.job_id, e.workers, e.slot_base, e.slot_base + e.slot_count,
                        e.elements_per_packet);
    if (e.parent_job_id) text += fmt::format(", child of job {} at its parent", *e.parent_job_id);
    text += "\n";
  }
  std::printf("%s: job table, %zu of %zu entries hold jobs\n%s", device->name().c_str(), used,
              table.size(), text.c_str());
}

void job_remove(const FpgaOptions& o) {
  auto device = open(o);
  device->remove_job(o.remove_entry);
  std::printf("entry %u removed\n", o.remove_entry);
}

void stats(const FpgaOptions& o) {
  auto device = open(o);
  device->identify();
  const auto counters = device->counters();
  if (o.json) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& c : counters)
      if (!o.nonzero || c.value != 0) j[std::string(c.name)] = c.value;
    std::printf("%s\n", j.dump(2).c_str());
    return;
  }
  std::string text = fmt::format("{}: counters\n", device->name());
  for (const auto& c : counters)
    if (!o.nonzero || c.value != 0) text += fmt::format("  {:<34} {}\n", c.name, c.value);
  std::fputs(text.c_str(), stdout);
}

void reset(const FpgaOptions& o) {
  auto device = open(o);
  device->identify();
  if (o.counters_only) {
    device->clear_counters();
    std::printf("%s: counters cleared\n", device->name().c_str());
  } else {
    device->reset();
    std::printf("%s: soft reset (slots, job table and counters cleared)\n", device->name().c_str());
  }
}

// Runs an action; netagg errors become a message and CLI::RuntimeError with the exit status.
template <class F>
std::function<void()> guarded(std::shared_ptr<FpgaOptions> o, F action) {
  return [o, action] {
    if (!o->device && o->sim.empty()) {
      std::fputs(
          "netagg-ctl fpga: give --device N (an Alveo card) or --sim IP:PORT (netagg-fpgad's "
          "--control address)\n",
          stderr);
      throw CLI::RuntimeError(kExitBadInput);
    }
    try {
      action(*o);
      std::fflush(stdout);
    } catch (const Error& e) {
      std::fflush(stdout);
      std::fprintf(stderr, "netagg-ctl fpga: %s\n", e.what());
      const bool bad_input = e.code() == Errc::kConfig || e.code() == Errc::kInvalidArgument ||
                             e.code() == Errc::kUnsupported;
      throw CLI::RuntimeError(bad_input ? kExitBadInput : kExitDevice);
    }
  };
}

}  // namespace

void add_fpga_command(CLI::App& app) {
  auto o = std::make_shared<FpgaOptions>();
  CLI::App* fpga_cmd = app.add_subcommand(
      "fpga", "the FPGA aggregator: an Alveo card (--device) or netagg-fpgad (--sim)");
  fpga_cmd->require_subcommand(1);
  auto* device = fpga_cmd->add_option_function<unsigned>(
      "--device", [o](const unsigned& n) { o->device = n; },
      "Alveo card index (xrt::device; `xbutil examine` lists them)");
  auto* sim = fpga_cmd->add_option("--sim", o->sim,
                                   "netagg-fpgad's CSR control channel, IP:PORT (its --control)");
  device->excludes(sim);
  fpga_cmd->add_option("--xclbin", o->xclbin,
                       "with --device: the xclbin (load: the one to load; other commands: the "
                       "one on the card, loaded if the card holds another)");
  fpga_cmd->add_option("--cu", o->compute_unit,
                       "with --device: the aggregator's compute unit (default: the first "
                       "netagg_aggregator CU of the xclbin)");

  CLI::App* load_cmd = fpga_cmd->add_subcommand(
      "load", "--device: load the xclbin and check the aggregator's version; --sim: check it");
  load_cmd->fallthrough();
  load_cmd->callback(guarded(o, load));

  CLI::App* job = fpga_cmd->add_subcommand("job", "the job table");
  job->require_subcommand(1);
  job->fallthrough();
  CLI::App* add = job->add_subcommand(
      "add", "check the job(s) of FILE against the device and install them (docs/job-format.md)");
  add->fallthrough();
  add->add_option("file", o->job_file, "job description file")->required();
  add->add_option_function<unsigned>(
      "--entry", [o](const unsigned& e) { o->entry = e; },
      "job table entry of the file's first job, the others following (default: each job into "
      "a free entry)");
  add->add_flag("--replace", o->replace,
                "replace what the entries hold: the same job id, or with --entry another job "
                "(without it such a job is refused)");
  add->add_option("--aggregator", o->aggregator,
                  "the aggregator's IP:PORT (default: the job file's \"aggregator\", else the "
                  "device's current address)");
  add->add_option("--as", o->as,
                  "this aggregator's name in the jobs' trees: a job with trees becomes its part "
                  "of each (default: the tree aggregator at --aggregator)");
  add->add_option("--aggregator-mac", o->aggregator_mac,
                  "the aggregator's MAC, the source of result frames (default: the device's)");
  add->callback(guarded(o, job_add));
  CLI::App* list = job->add_subcommand("list", "the jobs the job table holds, entry by entry");
  list->fallthrough();
  list->add_flag("--json", o->json, "as a JSON object");
  list->callback(guarded(o, job_list));
  CLI::App* remove = job->add_subcommand("remove", "empty a job table entry and clear its slots");
  remove->fallthrough();
  remove->add_option("entry", o->remove_entry, "job table entry")->required();
  remove->callback(guarded(o, job_remove));

  CLI::App* stats_cmd = fpga_cmd->add_subcommand("stats", "the device's counters");
  stats_cmd->fallthrough();
  stats_cmd->add_flag("--json", o->json, "as a JSON object");
  stats_cmd->add_flag("--nonzero", o->nonzero, "only the counters that are not 0");
  stats_cmd->callback(guarded(o, stats));

  CLI::App* reset_cmd =
      fpga_cmd->add_subcommand("reset", "soft reset: slots, job table and counters cleared");
  reset_cmd->fallthrough();
  reset_cmd->add_flag("--counters", o->counters_only, "clear the counters only");
  reset_cmd->callback(guarded(o, reset));
}

}  // namespace netagg::ctl
