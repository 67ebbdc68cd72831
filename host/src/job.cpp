// SPDX-License-Identifier: Apache-2.0
#include "netagg/job.hpp"

#include <arpa/inet.h>

#include <charconv>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "netagg/address.hpp"
#include "netagg/error.hpp"
#include "netagg/json_in.hpp"

namespace netagg {

using nlohmann::json;

namespace {

[[noreturn]] void config_error(std::string_view source, std::string_view field,
                               std::string_view problem) {
  throw Error(Errc::kConfig, fmt::format("{}: {}: {}", source, field, problem));
}

// "a.b.c.d:port" of a host.
Endpoint endpoint_of(const JsonIn& v) {
  if (!v.json().is_string()) v.fail("must be a string \"a.b.c.d:port\"");
  const std::string text = v.string();
  try {
    const Endpoint e = Endpoint::parse(text, v.path());
    check_host_address(e, v.path());
    return e;
  } catch (const Error& e) {
    throw Error(Errc::kConfig, fmt::format("{}: {}", v.source(), e.what()));
  }
}

wire::Mac mac_of(const JsonIn& v) {
  return parse_mac(v.string(), fmt::format("{}: {}", v.source(), v.path()));
}

// One entry of "trees" (docs/job-format.md, "Trees"), checked against the job's workers.
TreeSpec parse_tree(const JsonIn& t, const JobSpec& job, std::size_t index) {
  t.object();
  TreeSpec tree;
  tree.job_id =
      t.integer<std::uint16_t>("job_id", 0, 0xFFFF, static_cast<std::uint16_t>(job.job_id + index));
  tree.weight = t.integer<std::uint32_t>("weight", 1, 1u << 20, 1u);
  tree.window = t.integer<std::uint16_t>(
      "window", 1, 0xFFFF,
      job.slot_count ? std::optional<std::uint16_t>(job.slot_count) : std::nullopt);
  const JsonIn aggs_in = t["aggregators"];
  if (!aggs_in.json().is_array() || aggs_in.json().empty())
    aggs_in.fail("must be a non-empty array");
  const std::vector<JsonIn> aggs = aggs_in.elements();
  std::vector<std::string> parent_names(aggs.size());
  std::vector<int> sends_to(job.workers.size(), -1);
  for (std::size_t i = 0; i < aggs.size(); ++i) {
    const JsonIn& a = aggs[i];
    a.object();
    TreeNode node;
    const JsonIn name = a["name"];
    if (!name.json().is_string() || name.string().empty()) name.fail("must be a non-empty string");
    node.name = name.string();
    for (const TreeNode& other : tree.aggregators)
      if (other.name == node.name) name.fail(fmt::format("'{}' twice", node.name));
    const JsonIn addr = a["address"];
    node.address = endpoint_of(addr);
    for (const TreeNode& other : tree.aggregators)
      if (other.address == node.address)
        addr.fail(fmt::format("{} is aggregator '{}''s too", node.address.to_string(), other.name));
    if (job.find_worker(node.address))
      addr.fail(fmt::format("{} is a worker's address", node.address.to_string()));
    node.slot_base = a.integer<std::uint16_t>("slot_base", 0, 0xFFFF, std::uint16_t{0});
    if (std::uint32_t(node.slot_base) + tree.window > 0x10000)
      a.fail_at("slot_base", "slot_base + window exceeds the 16-bit slot space");
    if (const auto p = a.find("parent")) {
      if (!p->json().is_string() || p->string().empty()) p->fail("must be an aggregator's name");
      parent_names[i] = p->string();
    }
    if (const auto w = a.find("workers")) {
      if (!w->json().is_array()) w->fail("must be an array of ranks");
      for (const JsonIn& r : w->elements()) {
        if (!r.json().is_number_unsigned() || r.json().get<std::uint64_t>() >= job.workers.size())
          r.fail(fmt::format("must be a rank of the job, 0..{}", job.workers.size() - 1));
        const auto rank = r.json().get<std::uint16_t>();
        if (sends_to[rank] >= 0)
          r.fail(fmt::format(
              "rank {} is aggregator '{}''s already", rank,
              sends_to[rank] == int(i) ? node.name : tree.aggregators[sends_to[rank]].name));
        sends_to[rank] = static_cast<int>(i);
        node.workers.push_back(rank);
      }
    }
    tree.aggregators.push_back(std::move(node));
  }
  std::size_t roots = 0;
  for (std::size_t i = 0; i < tree.aggregators.size(); ++i) {
    if (parent_names[i].empty()) {
      ++roots;
      continue;
    }
    const auto p = find_tree_node(tree, parent_names[i]);
    if (!p) aggs[i].fail_at("parent", fmt::format("no aggregator '{}'", parent_names[i]));
    if (*p == i) aggs[i].fail_at("parent", "is the aggregator itself");
    tree.aggregators[i].parent = *p;
  }
  if (roots != 1)
    aggs_in.fail(
        fmt::format("a tree has one root (an aggregator without a parent), found {}", roots));
  // No cycles: from every aggregator the root is at most n - 1 steps up.
  for (std::size_t i = 0; i < tree.aggregators.size(); ++i) {
    std::size_t at = i, steps = 0;
    while (tree.aggregators[at].parent) {
      at = *tree.aggregators[at].parent;
      if (++steps >= tree.aggregators.size()) aggs[i].fail_at("parent", "the parents form a cycle");
    }
  }
  for (std::size_t r = 0; r < sends_to.size(); ++r)
    if (sends_to[r] < 0) aggs_in.fail(fmt::format("rank {} sends to no aggregator of the tree", r));
  for (std::size_t i = 0; i < tree.aggregators.size(); ++i) {
    bool has_child = false;
    for (const TreeNode& n : tree.aggregators) has_child = has_child || n.parent == i;
    if (tree.aggregators[i].workers.empty() && !has_child)
      aggs[i].fail("has neither workers nor child aggregators");
  }
  return tree;
}

JobSpec parse_job_object(const JsonIn& j) {
  if (!j.json().is_object()) {
    if (j.path().empty()) json_error(j.source(), "job", "must be an object");
    j.fail("must be an object");
  }
  JobSpec job;
  job.job_id = j.integer<std::uint16_t>("job_id", 0, 0xFFFF);
  const auto slots = j.find("slots");
  if (!slots && !j.has("trees")) j.fail_at("slots", "missing");
  if (slots) {
    slots->object();
    job.slot_base = slots->integer<std::uint16_t>("base", 0, 0xFFFF);
    job.slot_count = slots->integer<std::uint16_t>("count", 1, 0xFFFF);
    if (std::uint32_t(job.slot_base) + job.slot_count > 0x10000)
      slots->fail("base + count exceeds the 16-bit slot space");
  }
  job.elements_per_packet =
      j.integer<std::uint16_t>("elements_per_packet", 1, std::uint16_t{wire::kMaxCount});
  if (const auto a = j.find("aggregator")) job.aggregator = endpoint_of(*a);

  const JsonIn workers_in = j["workers"];
  if (!workers_in.json().is_array() || workers_in.json().empty())
    workers_in.fail("must be a non-empty array");
  if (workers_in.json().size() > 0xFFFF) workers_in.fail("too many workers");
  const std::vector<JsonIn> workers = workers_in.elements();
  job.workers.resize(workers.size());
  std::vector<bool> seen(workers.size(), false);
  for (const JsonIn& w : workers) {
    w.object();
    WorkerSpec spec;
    spec.rank = w.integer<std::uint16_t>("rank", 0, static_cast<std::uint16_t>(workers.size() - 1));
    if (seen[spec.rank]) w.fail_at("rank", fmt::format("rank {} twice", spec.rank));
    seen[spec.rank] = true;
    spec.address = endpoint_of(w["address"]);
    if (const auto m = w.find("mac")) spec.mac = mac_of(*m);
    if (w.has("switch_port")) spec.switch_port = w.integer<std::uint16_t>("switch_port", 0, 0xFFFF);
    spec.covers = w.integer<std::uint16_t>("covers", 1, 0xFFFF, std::uint16_t{1});
    job.workers[spec.rank] = spec;
  }
  for (std::size_t a = 0; a < job.workers.size(); ++a)
    for (std::size_t b = a + 1; b < job.workers.size(); ++b)
      if (job.workers[a].address == job.workers[b].address)
        workers_in.fail(fmt::format("ranks {} and {} share address {}", a, b,
                                    job.workers[a].address.to_string()));
  if (const auto parent = j.find("parent")) {
    parent->object();
    ParentSpec ps;
    ps.address = endpoint_of((*parent)["address"]);
    ps.job_id = parent->integer<std::uint16_t>("job_id", 0, 0xFFFF, job.job_id);
    ps.rank = parent->integer<std::uint16_t>("rank", 0, 0xFFFF);
    ps.slot_base = parent->integer<std::uint16_t>("slot_base", 0, 0xFFFF);
    if (const auto m = parent->find("mac")) ps.mac = mac_of(*m);
    if (parent->has("switch_port"))
      ps.switch_port = parent->integer<std::uint16_t>("switch_port", 0, 0xFFFF);
    if (std::uint32_t(ps.slot_base) + job.slot_count > 0x10000)
      parent->fail_at("slot_base", "slot_base + slots.count exceeds the 16-bit slot space");
    if (job.find_worker(ps.address))
      parent->fail_at("address",
                      fmt::format("{} is also a member's address", ps.address.to_string()));
    job.parent = ps;
  }
  if (const auto trees_in = j.find("trees")) {
    if (job.parent) trees_in->fail("a job with trees has no parent");
    if (!trees_in->json().is_array() || trees_in->json().empty())
      trees_in->fail("must be a non-empty array");
    const std::vector<JsonIn> trees = trees_in->elements();
    for (std::size_t t = 0; t < trees.size(); ++t)
      job.trees.push_back(parse_tree(trees[t], job, t));
    for (std::size_t a = 0; a < job.trees.size(); ++a)
      for (std::size_t b = a + 1; b < job.trees.size(); ++b)
        if (job.trees[a].job_id == job.trees[b].job_id)
          trees[b].fail_at("job_id", fmt::format("{} is tree {}'s too", job.trees[b].job_id, a));
  }
  return job;
}

std::string read_file(const std::filesystem::path& file) {
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec))
    throw Error(Errc::kConfig, fmt::format("{}: is a directory, not a job file", file.string()));
  std::ifstream in(file);
  if (!in) throw Error(Errc::kConfig, fmt::format("{}: cannot open", file.string()));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

Endpoint Endpoint::parse(std::string_view text, std::string_view what) {
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos)
    throw Error(Errc::kConfig, fmt::format("{}: '{}' is not \"a.b.c.d:port\"", what, text));
  Endpoint e;
  e.ip = parse_ipv4(text.substr(0, colon), what);
  const auto port = text.substr(colon + 1);
  unsigned v = 0;
  auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), v);
  if (ec != std::errc() || ptr != port.data() + port.size() || v == 0 || v > 0xFFFF)
    throw Error(Errc::kConfig, fmt::format("{}: '{}' is not a port in 1..65535", what, port));
  e.port = static_cast<std::uint16_t>(v);
  return e;
}

void check_host_address(const Endpoint& e, std::string_view what) {
  const std::uint32_t top = e.ip >> 24;
  if (top == 0 || top >= 224)
    throw Error(Errc::kConfig,
                fmt::format("{}: {} is not a host address (0.0.0.0/8, multicast, reserved and "
                            "broadcast addresses never send a packet)",
                            what, format_ipv4(e.ip)));
}

std::string Endpoint::to_string() const { return fmt::format("{}:{}", format_ipv4(ip), port); }

const WorkerSpec* JobSpec::find_worker(const Endpoint& source) const {
  for (const auto& w : workers)
    if (w.address == source) return &w;
  return nullptr;
}

JobSpec parse_job(std::string_view json_text, std::string_view source) {
  const json j = JsonIn::parse(json_text, source);
  return parse_job_object(JsonIn(j, std::string(source)));
}

std::vector<JobSpec> load_jobs(const std::filesystem::path& file) {
  const std::string source = file.string();
  const json j = JsonIn::parse(read_file(file), source);
  const JsonIn in(j, source);
  std::vector<JobSpec> jobs;
  if (j.is_object() && j.contains("jobs")) {
    const JsonIn arr = in["jobs"];
    if (!arr.json().is_array() || arr.json().empty()) arr.fail("must be a non-empty array");
    for (const JsonIn& one : arr.elements()) jobs.push_back(parse_job_object(one));
  } else {
    jobs.push_back(parse_job_object(in));
  }
  for (std::size_t a = 0; a < jobs.size(); ++a)
    for (std::size_t b = a + 1; b < jobs.size(); ++b) {
      if (jobs[a].job_id == jobs[b].job_id)
        config_error(source, "jobs", fmt::format("job_id {} twice", jobs[a].job_id));
      const auto a_end = jobs[a].slot_base + jobs[a].slot_count;
      const auto b_end = jobs[b].slot_base + jobs[b].slot_count;
      if (jobs[a].slot_base < b_end && jobs[b].slot_base < a_end)
        config_error(
            source, "jobs",
            fmt::format("slot ranges of jobs {} and {} overlap", jobs[a].job_id, jobs[b].job_id));
    }
  return jobs;
}

JobSpec load_job(const std::filesystem::path& file) {
  auto jobs = load_jobs(file);
  if (jobs.size() != 1)
    config_error(file.string(), "jobs", fmt::format("expected one job, found {}", jobs.size()));
  return jobs.front();
}

std::string to_json(const JobSpec& job) {
  json j;
  j["job_id"] = job.job_id;
  j["slots"] = {{"base", job.slot_base}, {"count", job.slot_count}};
  j["elements_per_packet"] = job.elements_per_packet;
  if (job.aggregator) j["aggregator"] = job.aggregator->to_string();
  j["workers"] = json::array();
  for (const auto& w : job.workers) {
    json o{{"rank", w.rank}, {"address", w.address.to_string()}};
    if (w.mac) o["mac"] = format_mac(*w.mac);
    if (w.switch_port) o["switch_port"] = *w.switch_port;
    if (w.covers != 1) o["covers"] = w.covers;
    j["workers"].push_back(o);
  }
  if (job.trees.empty() || job.slot_count != 0)
    j["slots"] = {{"base", job.slot_base}, {"count", job.slot_count}};
  else
    j.erase("slots");
  if (job.parent) {
    const ParentSpec& p = *job.parent;
    j["parent"] = {{"address", p.address.to_string()},
                   {"job_id", p.job_id},
                   {"rank", p.rank},
                   {"slot_base", p.slot_base}};
    if (p.mac) j["parent"]["mac"] = format_mac(*p.mac);
    if (p.switch_port) j["parent"]["switch_port"] = *p.switch_port;
  }
  if (!job.trees.empty()) {
    j["trees"] = json::array();
    for (const TreeSpec& t : job.trees) {
      json tj{{"job_id", t.job_id}, {"weight", t.weight}, {"window", t.window}};
      tj["aggregators"] = json::array();
      for (const TreeNode& n : t.aggregators) {
        json nj{{"name", n.name},
                {"address", n.address.to_string()},
                {"slot_base", n.slot_base},
                {"workers", n.workers}};
        if (n.parent) nj["parent"] = t.aggregators[*n.parent].name;
        tj["aggregators"].push_back(nj);
      }
      j["trees"].push_back(tj);
    }
  }
  return j.dump(2);
}

JobSpec make_local_job(std::uint16_t job_id, std::uint16_t workers, std::uint16_t first_port,
                       std::uint16_t slot_base, std::uint16_t slot_count,
                       std::uint16_t elements_per_packet, Endpoint aggregator) {
  JobSpec job;
  job.job_id = job_id;
  job.slot_base = slot_base;
  job.slot_count = slot_count;
  job.elements_per_packet = elements_per_packet;
  job.aggregator = aggregator;
  for (std::uint16_t r = 0; r < workers; ++r)
    job.workers.push_back({r, Endpoint{0x7F000001, static_cast<std::uint16_t>(first_port + r)},
                           std::nullopt, std::nullopt});
  return job;
}

std::size_t JobSpec::covered() const {
  std::size_t n = 0;
  for (const auto& w : workers) n += w.covers;
  return n;
}

std::optional<std::size_t> find_tree_node(const TreeSpec& tree, std::string_view name) {
  for (std::size_t i = 0; i < tree.aggregators.size(); ++i)
    if (tree.aggregators[i].name == name) return i;
  return std::nullopt;
}

std::optional<std::size_t> find_tree_node(const TreeSpec& tree, const Endpoint& address) {
  for (std::size_t i = 0; i < tree.aggregators.size(); ++i)
    if (tree.aggregators[i].address == address) return i;
  return std::nullopt;
}

namespace {

const TreeSpec& tree_of(const JobSpec& job, std::size_t tree) {
  if (tree >= job.trees.size())
    throw Error(Errc::kConfig,
                fmt::format("job {} has {} trees, no tree {}", job.job_id, job.trees.size(), tree));
  return job.trees[tree];
}

// Workers below aggregator `i` of the tree, its own and its children's.
std::size_t subtree_workers(const TreeSpec& t, std::size_t i) {
  std::size_t n = t.aggregators[i].workers.size();
  for (std::size_t c = 0; c < t.aggregators.size(); ++c)
    if (t.aggregators[c].parent == i) n += subtree_workers(t, c);
  return n;
}

JobSpec node_view(const JobSpec& job, const TreeSpec& t, std::size_t i) {
  const TreeNode& node = t.aggregators[i];
  JobSpec v;
  v.job_id = t.job_id;
  v.slot_base = node.slot_base;
  v.slot_count = t.window;
  v.elements_per_packet = job.elements_per_packet;
  v.aggregator = node.address;
  for (const std::uint16_t r : node.workers) {
    WorkerSpec w = job.workers[r];
    w.rank = static_cast<std::uint16_t>(v.workers.size());
    v.workers.push_back(w);
  }
  for (std::size_t c = 0; c < t.aggregators.size(); ++c)
    if (t.aggregators[c].parent == i) {
      WorkerSpec w;
      w.rank = static_cast<std::uint16_t>(v.workers.size());
      w.address = t.aggregators[c].address;
      w.covers = static_cast<std::uint16_t>(subtree_workers(t, c));
      v.workers.push_back(w);
    }
  if (node.parent) {
    const JobSpec up = node_view(job, t, *node.parent);
    ParentSpec p;
    p.address = t.aggregators[*node.parent].address;
    p.job_id = t.job_id;
    p.slot_base = t.aggregators[*node.parent].slot_base;
    const WorkerSpec* me = up.find_worker(node.address);
    p.rank = me->rank;
    v.parent = p;
  }
  return v;
}

}  // namespace

JobSpec aggregator_view(const JobSpec& job, std::size_t tree, std::string_view name) {
  const TreeSpec& t = tree_of(job, tree);
  const auto i = find_tree_node(t, name);
  if (!i)
    throw Error(Errc::kConfig,
                fmt::format("job {}: tree {} has no aggregator '{}'", job.job_id, tree, name));
  return node_view(job, t, *i);
}

std::vector<JobSpec> jobs_at_aggregator(const JobSpec& job, std::string_view name,
                                        const std::optional<Endpoint>& address) {
  if (job.trees.empty()) return {job};
  std::vector<JobSpec> out;
  for (const TreeSpec& t : job.trees) {
    const auto i = !name.empty() ? find_tree_node(t, name)
                   : address     ? find_tree_node(t, *address)
                                 : std::nullopt;
    if (i) out.push_back(node_view(job, t, *i));
  }
  if (out.empty())
    throw Error(
        Errc::kConfig,
        !name.empty()
            ? fmt::format("job {}: no tree of it has an aggregator named '{}'", job.job_id, name)
            : fmt::format("job {}: no tree of it has an aggregator at {} (name this "
                          "aggregator's part with --as NAME)",
                          job.job_id, address ? address->to_string() : "this address"));
  return out;
}

std::vector<JobSpec> load_aggregator_jobs(const std::filesystem::path& file, std::string_view name,
                                          const std::optional<Endpoint>& address) {
  std::vector<JobSpec> jobs;
  for (const JobSpec& job : load_jobs(file)) {
    try {
      for (JobSpec& part : jobs_at_aggregator(job, name, address)) jobs.push_back(std::move(part));
    } catch (const Error& e) {
      throw Error(Errc::kConfig, fmt::format("{}: {}", file.string(), e.what()));
    }
  }
  return jobs;
}

WorkerView worker_view(const JobSpec& job, std::size_t tree, std::uint16_t rank) {
  const TreeSpec& t = tree_of(job, tree);
  for (std::size_t i = 0; i < t.aggregators.size(); ++i)
    for (const std::uint16_t r : t.aggregators[i].workers)
      if (r == rank) {
        WorkerView v{node_view(job, t, i), 0};
        v.rank = v.job.find_worker(job.workers[rank].address)->rank;
        return v;
      }
  throw Error(Errc::kConfig, fmt::format("job {}: rank {} sends to no aggregator of tree {}",
                                         job.job_id, rank, tree));
}

}  // namespace netagg
