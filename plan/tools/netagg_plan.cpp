// SPDX-License-Identifier: Apache-2.0
// netagg-plan: routes a job's gradients through a network with in-network aggregation
// (docs/routing.md). It reads a topology (or generates a fat tree), computes the plans of
// Scheme 1, Scheme 2 and GRID and the LP bound, prints a table, and writes a JSON report, the
// netagg job descriptions that run the plans, and a drawing.
//
//   netagg-plan TOPOLOGY.json [--policy all|scheme1|scheme2|grid|lp] [--upward-only]
//               [--json OUT] [--jobs DIR]
//   netagg-plan --fat-tree K [--workers N] [--link-gbps G] [--agg-gbps A] ...
//
// Exit status: 0 done, 2 usage, topology or option error, 3 the LP solver failed.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "netagg/error.hpp"
#include "netagg/plan/output.hpp"
#include "netagg/plan/policies.hpp"
#include "netagg/plan/topology.hpp"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using netagg::Errc;
using netagg::Error;
using namespace netagg::plan;

constexpr int kExitUsage = 2;
constexpr int kExitSolver = 3;

struct Options {
  std::string topology;
  int fat_tree_k = 0;
  FatTreeOptions fat_tree;
  std::string programmable = "edge,aggregation,core";
  std::string write_topology;
  std::string root;
  bool upward_only = false;
  std::string policy = "all";
  SolverOptions solver;
  JobOptions job;
  std::string json_out, jobs_dir, dot_out, svg_out, png_out, draw;
  bool details = false, quiet = false;
};

void write_file(const fs::path& path, const std::string& text) {
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  std::ofstream out(path);
  out << text;
  if (!out) throw Error(Errc::kConfig, fmt::format("{}: cannot write", path.string()));
}

// Runs Graphviz's dot on `dot_text`, writing `out` in `format` (png, svg).
void render(const std::string& dot_text, const std::string& format, const fs::path& out) {
  const fs::path source = fs::temp_directory_path() / fmt::format("netagg-plan-{}.dot", getpid());
  write_file(source, dot_text);
  if (out.has_parent_path()) fs::create_directories(out.parent_path());
  const std::string type = "-T" + format, output = "-o" + out.string(), input = source.string();
  std::vector<char*> argv{const_cast<char*>("dot"), const_cast<char*>(type.c_str()),
                          const_cast<char*>(output.c_str()), const_cast<char*>(input.c_str()),
                          nullptr};
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, "dot", nullptr, nullptr, argv.data(), environ);
  int status = 0;
  if (spawned == 0) waitpid(pid, &status, 0);
  fs::remove(source);
  if (spawned != 0)
    throw Error(Errc::kConfig, fmt::format("--{}: Graphviz's dot was not found (Debian package "
                                           "graphviz); --dot writes the drawing's source",
                                           format));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw Error(Errc::kConfig, fmt::format("--{}: dot failed", format));
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

int run(const Options& o) {
  Topology topology;
  if (o.fat_tree_k > 0) {
    FatTreeOptions f = o.fat_tree;
    f.k = o.fat_tree_k;
    f.programmable = split(o.programmable);
    topology = fat_tree(f);
  } else {
    topology = load_topology(o.topology);
  }
  if (!o.write_topology.empty()) write_file(o.write_topology, to_json(topology).dump(2) + "\n");
  const Problem problem =
      make_problem(topology, o.root, o.upward_only ? Traffic::kUpwardOnly : Traffic::kAllReduce);

  const bool all = o.policy == "all";
  std::vector<PlanResult> plans;
  std::optional<PathSet> paths;
  if (all || o.policy == "scheme1" || o.policy == "grid" || o.policy == "lp")
    paths = make_paths(problem, o.solver);
  if (all || o.policy == "scheme1") plans.push_back(scheme1(problem, *paths, o.solver));
  if (all || o.policy == "scheme2") plans.push_back(scheme2(problem));
  if (all || o.policy == "grid" || o.policy == "lp") {
    GridResult g = grid(problem, *paths, o.solver);
    if (o.policy != "lp") plans.push_back(std::move(g.grid));
    plans.push_back(std::move(g.lp));
  }

  json report_json{{"topology",
                    {{"name", topology.name},
                     {"description", topology.description},
                     {"workers", problem.workers.size()},
                     {"root", topology.nodes[problem.root].name},
                     {"switches", topology.nodes_of(NodeKind::kSwitch).size()},
                     {"links", topology.links.size()}}},
                   {"options",
                    {{"traffic", to_string(problem.traffic)},
                     {"paths", o.solver.paths},
                     {"rounds", o.solver.rounds},
                     {"seed", o.solver.seed},
                     {"max_trees", o.solver.max_trees},
                     {"time_limit", o.solver.time_limit}}},
                   {"policies", json::object()}};
  for (const PlanResult& plan : plans) {
    std::optional<netagg::JobSpec> job;
    if (plan.executable) job = make_job(problem, plan, o.job);
    report_json["policies"][plan.policy] = report(problem, plan, job ? &*job : nullptr);
    if (job && !o.jobs_dir.empty())
      write_file(fs::path(o.jobs_dir) / (plan.policy + ".job.json"), netagg::to_json(*job) + "\n");
  }
  if (!o.json_out.empty()) write_file(o.json_out, report_json.dump(2) + "\n");

  if (!o.dot_out.empty() || !o.svg_out.empty() || !o.png_out.empty()) {
    const std::string wanted =
        !o.draw.empty() ? o.draw : (report_json["policies"].contains("grid") ? "grid" : "");
    const PlanResult* drawn = plans.empty() ? nullptr : &plans.front();
    for (const PlanResult& plan : plans)
      if (plan.policy == wanted) drawn = &plan;
    if (!o.draw.empty() && (!drawn || drawn->policy != o.draw))
      throw Error(Errc::kConfig, fmt::format("--draw: policy '{}' was not run", o.draw));
    const std::string text = dot(problem, *drawn);
    if (!o.dot_out.empty()) write_file(o.dot_out, text);
    if (!o.svg_out.empty()) render(text, "svg", o.svg_out);
    if (!o.png_out.empty()) render(text, "png", o.png_out);
  }
  if (!o.quiet)
    std::fputs(table(problem, plans, o.details || problem.workers.size() <= 32).c_str(), stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{
      "netagg-plan: routes a job's gradients to its root with in-network aggregation. Scheme 1 "
      "(no aggregation), Scheme 2 (nearest switch), GRID (LP relaxation and randomized "
      "rounding) and the LP bound; see docs/routing.md."};
  app.add_option("topology", o.topology, "topology file (JSON, docs/routing.md)");
  auto* fat = app.add_option("--fat-tree", o.fat_tree_k,
                             "instead of a file: a k-ary fat tree (k even), host h0 the root");
  app.add_option("--workers", o.fat_tree.workers,
                 "--fat-tree: workers, spread evenly over the hosts (default: every host but "
                 "the root)");
  app.add_option("--link-gbps", o.fat_tree.link_gbps, "--fat-tree: every link's capacity")
      ->capture_default_str();
  app.add_option("--agg-gbps", o.fat_tree.aggregation_gbps,
                 "--fat-tree: every programmable switch's aggregation capacity")
      ->capture_default_str();
  app.add_option("--root-ingress-gbps", o.fat_tree.root_ingress_gbps,
                 "--fat-tree: the root's ingress capacity (default: its link's)");
  app.add_option("--programmable", o.programmable,
                 "--fat-tree: programmable layers, comma separated (edge, aggregation, core)")
      ->capture_default_str();
  app.add_option("--write-topology", o.write_topology, "write the topology as JSON to this file");
  app.add_option("--root", o.root, "the job's root, if the topology has several");
  app.add_option("--policy", o.policy, "which plans to compute")
      ->check(CLI::IsMember({"all", "scheme1", "scheme2", "grid", "lp"}))
      ->capture_default_str();
  app.add_option("--seed", o.solver.seed, "seed of the randomized rounding and of path ties")
      ->capture_default_str();
  app.add_option("--rounds", o.solver.rounds,
                 "randomized roundings (and as many threshold roundings); the best is kept")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--paths", o.solver.paths,
                 "shortest paths per node to the root (Yen), besides the shortest-path tree's")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--max-trees", o.solver.max_trees,
                 "GRID: trees in the plan (1: the best single tree)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--time-limit", o.solver.time_limit, "seconds for Scheme 1's branch and bound")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_flag("--upward-only", o.upward_only,
               "count only the streams towards the root, not the results coming back down the "
               "reverse routes (a parameter server whose downlink is not the job's)");
  app.add_option("--json", o.json_out, "write the report (all plans, loads, jobs) here");
  app.add_option("--jobs", o.jobs_dir, "write each plan's job description to DIR/POLICY.job.json");
  app.add_option("--dot", o.dot_out, "write a Graphviz drawing of a plan");
  app.add_option("--svg", o.svg_out, "render the drawing as SVG (needs Graphviz's dot)");
  app.add_option("--png", o.png_out, "render the drawing as PNG (needs Graphviz's dot)");
  app.add_option("--draw", o.draw, "the policy to draw (default: grid if run, else the first)");
  app.add_option("--job-id", o.job.job_id, "the jobs' id (tree t: id + t)")->capture_default_str();
  app.add_option("--window", o.job.window, "slots of each tree at each aggregator")
      ->check(CLI::Range(1, 65535))
      ->capture_default_str();
  app.add_option("--elements-per-packet", o.job.elements_per_packet, "the jobs' packet size")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app.add_flag("--details", o.details, "list every tree in the table (default up to 32 workers)");
  app.add_flag("--quiet", o.quiet, "no table on stdout");
  app.add_flag("--verbose", o.solver.verbose, "GLPK's messages");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : kExitUsage;
  }
  if (o.topology.empty() == (fat->count() == 0)) {
    std::fprintf(stderr, "netagg-plan: give a topology file or --fat-tree K (one of them)\n");
    return kExitUsage;
  }
  try {
    return run(o);
  } catch (const Error& e) {
    std::fprintf(stderr, "netagg-plan: %s\n", e.what());
    return e.code() == Errc::kUnsupported ? kExitSolver : kExitUsage;
  } catch (const std::filesystem::filesystem_error& e) {
    std::fprintf(stderr, "netagg-plan: %s\n", e.what());
    return kExitUsage;
  }
}
