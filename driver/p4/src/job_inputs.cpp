// SPDX-License-Identifier: Apache-2.0
// The jobs as the control plane takes them: from job files, as one switch's part of their
// trees, with the addresses --peer gives.
#include "netagg/p4/control.hpp"

#include <charconv>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "netagg/error.hpp"

namespace netagg::p4 {

std::vector<JobInput> load_job_inputs(std::span<const std::filesystem::path> files) {
  std::vector<JobInput> out;
  for (const auto& file : files) {
    std::vector<JobSpec> jobs = load_jobs(file);
    const bool listed = jobs.size() > 1;
    for (std::size_t k = 0; k < jobs.size(); ++k) {
      std::string origin = file.string();
      if (listed) origin += fmt::format(": jobs[{}]", k);
      out.push_back({std::move(jobs[k]), std::move(origin)});
    }
  }
  return out;
}

std::vector<JobInput> expand_trees(std::span<const JobInput> jobs, std::string_view name,
                                   const std::optional<Endpoint>& address) {
  std::vector<JobInput> out;
  for (const JobInput& job : jobs) {
    if (job.spec.trees.empty()) {
      out.push_back(job);
      continue;
    }
    const std::string where = job.origin.empty()
                                  ? fmt::format("job {}", job.spec.job_id)
                                  : fmt::format("{}: job {}", job.origin, job.spec.job_id);
    if (name.empty() && !address)
      throw Error(Errc::kConfig,
                  fmt::format("{}: trees: name this switch's part of the job's trees with --as "
                              "NAME (or give --switch-ip, its address)",
                              where));
    std::vector<JobSpec> parts;
    try {
      parts = jobs_at_aggregator(job.spec, name, address);
    } catch (const Error& e) {
      throw Error(Errc::kConfig, fmt::format("{}: {}", job.origin, e.what()));
    }
    // jobs_at_aggregator keeps the trees' order; name each part by its tree and aggregator.
    std::size_t part = 0;
    for (std::size_t t = 0; t < job.spec.trees.size() && part < parts.size(); ++t) {
      const TreeSpec& tree = job.spec.trees[t];
      const auto node = !name.empty() ? find_tree_node(tree, name) : find_tree_node(tree, *address);
      if (!node) continue;
      out.push_back({std::move(parts[part++]),
                     fmt::format("{}: tree {} ({})", job.origin, t, tree.aggregators[*node].name)});
    }
  }
  return out;
}

Peer parse_peer(std::string_view text, std::string_view what) {
  const auto eq = text.find('=');
  const auto comma = text.find(',', eq == std::string_view::npos ? 0 : eq);
  if (eq == std::string_view::npos || comma == std::string_view::npos)
    throw Error(
        Errc::kConfig,
        fmt::format("{}: '{}' is not IP=MAC,PORT (e.g. 10.0.0.1=02:00:00:00:00:01,9)", what, text));
  Peer peer;
  peer.ip = parse_ipv4(text.substr(0, eq), what);
  peer.mac = parse_mac(text.substr(eq + 1, comma - eq - 1), what);
  const std::string_view port = text.substr(comma + 1);
  unsigned v = 0;
  const auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), v);
  if (ec != std::errc() || ptr != port.data() + port.size() || port.empty() || v > kMaxPort)
    throw Error(Errc::kConfig,
                fmt::format("{}: port '{}' is not a switch port [0, {}]", what, port, kMaxPort));
  peer.switch_port = static_cast<std::uint16_t>(v);
  return peer;
}

void apply_peers(std::vector<JobInput>& jobs, std::span<const Peer> peers) {
  for (std::size_t b = 0; b < peers.size(); ++b)
    for (std::size_t a = 0; a < b; ++a)
      if (peers[a].ip == peers[b].ip)
        throw Error(Errc::kConfig,
                    fmt::format("--peer: {} is given twice", format_ipv4(peers[b].ip)));
  for (JobInput& job : jobs)
    for (const Peer& peer : peers) {
      for (WorkerSpec& w : job.spec.workers)
        if (w.address.ip == peer.ip) {
          if (!w.mac) w.mac = peer.mac;
          if (!w.switch_port) w.switch_port = peer.switch_port;
        }
      if (job.spec.parent && job.spec.parent->address.ip == peer.ip) {
        if (!job.spec.parent->mac) job.spec.parent->mac = peer.mac;
        if (!job.spec.parent->switch_port) job.spec.parent->switch_port = peer.switch_port;
      }
    }
}

}  // namespace netagg::p4
