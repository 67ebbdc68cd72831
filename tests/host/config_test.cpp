// SPDX-License-Identifier: Apache-2.0
// Config from files and from the environment a launcher sets: every field read, every error
// names the field or variable at fault.
#include "netagg/config.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "expect_error.hpp"
#include "netagg/engine.hpp"
#include "netagg/error.hpp"

namespace netagg {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr const char* kJob4 = R"({
  "job_id": 7, "slots": {"base": 16, "count": 32}, "elements_per_packet": 64,
  "aggregator": "10.0.0.1:20033",
  "workers": [
    {"rank": 0, "address": "10.0.0.10:40000"}, {"rank": 1, "address": "10.0.0.11:40000"},
    {"rank": 2, "address": "10.0.0.12:40000"}, {"rank": 3, "address": "10.0.0.13:40000"}]})";

// Every variable from_env reads: cleared before each test, restored after.
constexpr const char* kVariables[] = {"NETAGG_CONFIG",
                                      "NETAGG_JOB_FILE",
                                      "NETAGG_JOB_ID",
                                      "NETAGG_RANK",
                                      "OMPI_COMM_WORLD_RANK",
                                      "PMI_RANK",
                                      "RANK",
                                      "NETAGG_WORLD_SIZE",
                                      "OMPI_COMM_WORLD_SIZE",
                                      "PMI_SIZE",
                                      "WORLD_SIZE",
                                      "NETAGG_AGGREGATOR",
                                      "NETAGG_TRANSPORT",
                                      "NETAGG_FLOAT_WIRE",
                                      "NETAGG_TIMEOUT_MS",
                                      "NETAGG_JOB_TIMEOUT_MS",
                                      "NETAGG_UDP_OFFLOAD",
                                      "NETAGG_CONGESTION_CONTROL",
                                      "NETAGG_RETRANSMIT_TIMEOUT_MS",
                                      "NETAGG_MAX_RETRANSMIT_TIMEOUT_MS",
                                      "NETAGG_MIN_RETRANSMIT_TIMEOUT_MS",
                                      "NETAGG_ADAPTIVE_RETRANSMIT",
                                      "NETAGG_LOSS",
                                      "NETAGG_LOSS_SEED",
                                      "NETAGG_EPOCH",
                                      "NETAGG_PACE_GBPS",
                                      "TORCHELASTIC_RUN_ID",
                                      "OMPI_MCA_ess_base_jobid",
                                      "PMIX_NAMESPACE",
                                      "SLURM_JOB_ID",
                                      "NETAGG_FALLBACK",
                                      "NETAGG_FALLBACK_AFTER_MS",
                                      "NETAGG_FALLBACK_TIMEOUT_MS",
                                      "NETAGG_STORE",
                                      "SLURM_STEP_ID"};

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : kVariables) {
      if (const char* old = std::getenv(v)) saved_.emplace_back(v, old);
      ::unsetenv(v);
    }
    dir_ = fs::path(::testing::TempDir()) /
           ("netagg-config-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override {
    for (const char* v : kVariables) ::unsetenv(v);
    for (const auto& [k, v] : saved_) ::setenv(k.c_str(), v.c_str(), 1);
    fs::remove_all(dir_);
  }
  fs::path write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p;
  }
  template <typename F>
  static std::string error_of(F&& f, Errc code = Errc::kConfig) {
    return testing::error_of(std::forward<F>(f), code);
  }

  fs::path dir_;
  std::vector<std::pair<std::string, std::string>> saved_;
};

TEST_F(ConfigTest, FileWithEveryField) {
  write("jobs/job.json", kJob4);
  const auto file = write("conf/worker.json", R"({
    "rank": 2, "job_file": "../jobs/job.json", "aggregator": "10.0.0.2:30000",
    "transport": "udp", "float_wire": "fp32", "retransmit_timeout_ms": 5,
    "max_retransmit_timeout_ms": 80, "min_retransmit_timeout_ms": 0.5,
    "adaptive_retransmit": false, "job_timeout_ms": 2500, "loss": 0.01, "loss_seed": 99})");
  const Config c = Config::from_file(file);
  EXPECT_EQ(c.rank, 2);
  EXPECT_EQ(c.job.job_id, 7);
  EXPECT_EQ(c.job.world_size(), 4u);
  EXPECT_EQ(c.aggregator, Endpoint::parse("10.0.0.2:30000"));
  EXPECT_EQ(c.aggregator_address(), Endpoint::parse("10.0.0.2:30000"));
  EXPECT_EQ(c.local_address(), Endpoint::parse("10.0.0.12:40000"));
  EXPECT_EQ(c.float_wire, FloatWire::kFp32);
  EXPECT_EQ(c.retransmit_timeout, std::chrono::milliseconds(5));
  EXPECT_EQ(c.max_retransmit_timeout, std::chrono::milliseconds(80));
  EXPECT_EQ(c.min_retransmit_timeout, std::chrono::microseconds(500));
  EXPECT_FALSE(c.adaptive_retransmit);
  EXPECT_EQ(c.job_timeout, std::chrono::milliseconds(2500));
  EXPECT_DOUBLE_EQ(c.loss, 0.01);
  EXPECT_EQ(c.loss_seed, 99u);
}

TEST_F(ConfigTest, FileWithInlineJobAndDefaults) {
  const auto file = write("w.json", std::string(R"({"rank": 3, "job": )") + kJob4 + "}");
  const Config c = Config::from_file(file);
  EXPECT_EQ(c.rank, 3);
  EXPECT_EQ(c.job.slot_base, 16);
  EXPECT_EQ(c.aggregator.port, 0);  // not given: the job's is used
  EXPECT_EQ(c.aggregator_address(), Endpoint::parse("10.0.0.1:20033"));
  EXPECT_EQ(c.float_wire, FloatWire::kBlockInt32);
  EXPECT_EQ(c.transport, "udp");
  EXPECT_EQ(c.job_timeout, Config{}.job_timeout);
}

TEST_F(ConfigTest, FilePicksOneJobOfSeveral) {
  write("jobs.json", R"({"jobs": [
    {"job_id": 1, "slots": {"base": 0, "count": 8}, "elements_per_packet": 64,
     "workers": [{"rank": 0, "address": "127.0.0.1:5000"}]},
    {"job_id": 2, "slots": {"base": 8, "count": 8}, "elements_per_packet": 32,
     "workers": [{"rank": 0, "address": "127.0.0.1:5001"}, {"rank": 1, "address": "127.0.0.1:5002"}]}]})");
  const auto good = write("w.json", R"({"rank": 1, "job_file": "jobs.json", "job_id": 2,
                                        "aggregator": "127.0.0.1:20033"})");
  const Config c = Config::from_file(good);
  EXPECT_EQ(c.job.job_id, 2);
  EXPECT_EQ(c.job.elements_per_packet, 32);

  const auto ambiguous = write("a.json", R"({"rank": 0, "job_file": "jobs.json"})");
  EXPECT_THAT(error_of([&] { Config::from_file(ambiguous); }),
              AllOf(HasSubstr("jobs.json"), HasSubstr("holds 2 jobs"), HasSubstr("job_id")));
  const auto absent = write("b.json", R"({"rank": 0, "job_file": "jobs.json", "job_id": 9})");
  EXPECT_THAT(error_of([&] { Config::from_file(absent); }), HasSubstr("no job with job_id 9"));
}

TEST_F(ConfigTest, FileErrorsNameTheField) {
  write("job.json", kJob4);
  const auto err = [&](const std::string& body) {
    const auto f = write("bad.json", body);
    return error_of([&] { Config::from_file(f); });
  };
  EXPECT_THAT(err(R"({"rank": 0, "job_file": "job.json", "colour": 1})"),
              AllOf(HasSubstr("bad.json"), HasSubstr("colour"), HasSubstr("unknown field")));
  EXPECT_THAT(err(R"({"rank": "zero", "job_file": "job.json"})"), HasSubstr("rank: must be"));
  EXPECT_THAT(err(R"({"rank": -1, "job_file": "job.json"})"), HasSubstr("rank: must be"));
  EXPECT_THAT(err(R"({"rank": 5, "job_file": "job.json"})"),
              HasSubstr("rank 5 is outside the job's 4 workers"));
  EXPECT_THAT(err(R"({"job_file": "job.json"})"), HasSubstr("rank: not set"));
  EXPECT_THAT(err(R"({"rank": 0})"), HasSubstr("job_file or job: missing"));
  EXPECT_THAT(err(R"({"rank": 0, "job_file": "nowhere.json"})"),
              AllOf(HasSubstr("nowhere.json"), HasSubstr("cannot open")));
  EXPECT_THAT(err(std::string(R"({"rank": 0, "job_file": "job.json", "job": )") + kJob4 + "}"),
              HasSubstr("either job_file or an inline job"));
  EXPECT_THAT(err(R"({"rank": 0, "job": {"job_id": 1}})"), HasSubstr("slots"));
  EXPECT_THAT(err(R"({"rank": 0, "job_file": "job.json", "aggregator": "10.0.0.1"})"),
              HasSubstr("aggregator"));
  EXPECT_THAT(err(R"({"rank": 0, "job_file": "job.json", "aggregator": 7})"),
              HasSubstr("aggregator: must be a string"));
  EXPECT_THAT(err(R"({"rank": 0, "job_file": "job.json", "float_wire": "bf16"})"),
              AllOf(HasSubstr("float_wire"), HasSubstr("'bf16'")));
  EXPECT_THAT(err(R"({"rank": 0, "job_file": "job.json", "transport": "carrier-pigeon"})"),
              AllOf(HasSubstr("transport"), HasSubstr("'carrier-pigeon'")));
  EXPECT_THAT(err(R"({"rank": 0, "job_file": "job.json", "job_timeout_ms": 0})"),
              HasSubstr("job_timeout_ms: 0 ms is outside (0, 86400000] ms"));
  // Beyond a day: refused before any conversion to the clock could overflow.
  EXPECT_THAT(err(R"({"rank": 0, "job_file": "job.json", "job_timeout_ms": 1e13})"),
              HasSubstr("job_timeout_ms: 10000000000000 ms is outside (0, 86400000] ms"));
  EXPECT_THAT(err(R"({"rank": 0, "job_file": "job.json", "adaptive_retransmit": 1})"),
              HasSubstr("adaptive_retransmit: must be true or false"));
  EXPECT_THAT(err(R"({"rank": 0, "job_file": "job.json", "min_retransmit_timeout_ms": -1})"),
              HasSubstr("min_retransmit_timeout_ms: -1 ms is outside"));
  EXPECT_THAT(err(R"({"rank": 0, "job_file": "job.json", "retransmit_timeout_ms": "fast"})"),
              HasSubstr("retransmit_timeout_ms: must be a number"));
  EXPECT_THAT(err(R"({"rank": 0, "job_file": "job.json", "retransmit_timeout_ms": 100,
                      "max_retransmit_timeout_ms": 50})"),
              HasSubstr("max_retransmit_timeout"));
  EXPECT_THAT(err(R"({"rank": 0, "job_file": "job.json", "loss": 1.5})"),
              HasSubstr("loss: 1.5 is outside [0, 1)"));
  EXPECT_THAT(err(R"({"rank": 0, "job_file": "job.json", "loss_seed": -3})"),
              HasSubstr("loss_seed"));
  EXPECT_THAT(err("[1, 2]"), HasSubstr("must be a JSON object"));
  EXPECT_THAT(err("{ not json"), HasSubstr("not valid JSON"));
  // No aggregator in the job and none in the config.
  write("noagg.json", R"({"job_id": 1, "slots": {"base": 0, "count": 4}, "elements_per_packet": 8,
                          "workers": [{"rank": 0, "address": "127.0.0.1:5000"}]})");
  EXPECT_THAT(err(R"({"rank": 0, "job_file": "noagg.json"})"), HasSubstr("aggregator: not set"));
}

TEST_F(ConfigTest, DpdkIsNamedButNotBuilt) {
  if (netagg::dpdk_built())
    GTEST_SKIP() << "built with DPDK: dpdk_transport_test tests the transport";
  write("job.json", kJob4);
  const auto f = write("w.json", R"({"rank": 0, "job_file": "job.json", "transport": "dpdk"})");
  EXPECT_THAT(error_of([&] { Config::from_file(f); }, Errc::kUnsupported),
              AllOf(HasSubstr("dpdk"), HasSubstr("not built")));
}

TEST_F(ConfigTest, EnvironmentOfALauncher) {
  const auto job = write("job.json", kJob4);
  ::setenv("NETAGG_JOB_FILE", job.c_str(), 1);
  ::setenv("NETAGG_RANK", "1", 1);
  ::setenv("NETAGG_WORLD_SIZE", "4", 1);
  ::setenv("NETAGG_AGGREGATOR", "192.168.1.1:20033", 1);
  ::setenv("NETAGG_FLOAT_WIRE", "fp32", 1);
  ::setenv("NETAGG_TIMEOUT_MS", "1500", 1);
  ::setenv("NETAGG_RETRANSMIT_TIMEOUT_MS", "2.5", 1);
  ::setenv("NETAGG_LOSS", "0.1", 1);
  ::setenv("NETAGG_LOSS_SEED", "18446744073709551615", 1);
  const Config c = Config::from_env();
  EXPECT_EQ(c.rank, 1);
  EXPECT_EQ(c.aggregator_address(), Endpoint::parse("192.168.1.1:20033"));
  EXPECT_EQ(c.float_wire, FloatWire::kFp32);
  EXPECT_EQ(c.job_timeout, std::chrono::milliseconds(1500));
  EXPECT_EQ(c.retransmit_timeout, std::chrono::microseconds(2500));
  EXPECT_DOUBLE_EQ(c.loss, 0.1);
  EXPECT_EQ(c.loss_seed, UINT64_MAX);
}

// Every setting of a config file has a variable of the same name (NETAGG_ and the key in
// capitals), and the two give the same configuration.
TEST_F(ConfigTest, AFileKeyAndItsVariableGiveTheSameSetting) {
  const fs::path job = write("job.json", kJob4);
  const auto describe = [](const Config& c) {
    return fmt::format(
        "{} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {}", c.aggregator.to_string(), c.transport,
        to_string(c.float_wire), c.retransmit_timeout.count(), c.max_retransmit_timeout.count(),
        c.adaptive_retransmit, c.min_retransmit_timeout.count(), c.job_timeout.count(), c.loss,
        c.loss_seed, c.congestion_control, c.pace_gbps, c.udp_offload, to_string(c.fallback),
        c.fallback_after.count(), c.fallback_timeout.count(), c.store);
  };
  struct Row {
    const char* key;
    const char* json_value;
    const char* text;
  };
  const Row rows[] = {{"aggregator", "\"10.0.0.9:20040\"", "10.0.0.9:20040"},
                      {"float_wire", "\"fp32\"", "fp32"},
                      {"retransmit_timeout_ms", "2.5", "2.5"},
                      {"max_retransmit_timeout_ms", "900", "900"},
                      {"adaptive_retransmit", "false", "0"},
                      {"min_retransmit_timeout_ms", "0.5", "0.5"},
                      {"job_timeout_ms", "1500", "1500"},
                      {"loss", "0.25", "0.25"},
                      {"loss_seed", "18446744073709551615", "18446744073709551615"},
                      {"congestion_control", "true", "1"},
                      {"pace_gbps", "2.5", "2.5"},
                      {"udp_offload", "false", "0"},
                      {"fallback", "\"off\"", "off"},
                      {"fallback_after_ms", "300", "300"},
                      {"fallback_timeout_ms", "4000", "4000"},
                      {"store", "\"file:/tmp/x\"", "file:/tmp/x"}};
  for (const Row& r : rows) {
    const Config from_file = Config::from_file(
        write("c.json", fmt::format(R"({{"rank": 1, "job_file": "{}", "{}": {}}})", job.string(),
                                    r.key, r.json_value)));
    std::string variable = "NETAGG_";
    for (const char* c = r.key; *c; ++c) variable += static_cast<char>(std::toupper(*c));
    ::setenv("NETAGG_JOB_FILE", job.c_str(), 1);
    ::setenv("NETAGG_RANK", "1", 1);
    ::setenv(variable.c_str(), r.text, 1);
    const Config from_env = Config::from_env();
    ::unsetenv(variable.c_str());
    EXPECT_EQ(describe(from_file), describe(from_env)) << r.key << " / " << variable;
    EXPECT_NE(describe(from_file), describe(Config::from_env())) << r.key << " had no effect";
  }
}

TEST_F(ConfigTest, TheJobTimeoutIsReadFromItsShortVariableToo) {
  ::setenv("NETAGG_JOB_FILE", write("job.json", kJob4).c_str(), 1);
  ::setenv("NETAGG_RANK", "1", 1);
  ::setenv("NETAGG_TIMEOUT_MS", "1500", 1);
  EXPECT_EQ(Config::from_env().job_timeout, std::chrono::milliseconds(1500));
  ::setenv("NETAGG_JOB_TIMEOUT_MS", "2500", 1);  // the setting's own name wins
  EXPECT_EQ(Config::from_env().job_timeout, std::chrono::milliseconds(2500));
}

TEST_F(ConfigTest, RankAndSizeFromOtherLaunchers) {
  ::setenv("NETAGG_JOB_FILE", write("job.json", kJob4).c_str(), 1);
  ::setenv("OMPI_COMM_WORLD_RANK", "3", 1);
  ::setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
  EXPECT_EQ(Config::from_env().rank, 3);
  ::unsetenv("OMPI_COMM_WORLD_RANK");
  ::unsetenv("OMPI_COMM_WORLD_SIZE");
  ::setenv("RANK", "2", 1);  // torchrun
  ::setenv("WORLD_SIZE", "4", 1);
  EXPECT_EQ(Config::from_env().rank, 2);
  ::setenv("NETAGG_RANK", "0", 1);  // ours wins over the launcher's
  EXPECT_EQ(Config::from_env().rank, 0);
  ::setenv("WORLD_SIZE", "8", 1);
  EXPECT_EQ(error_of([] { Config::from_env(); }), "WORLD_SIZE=8 but the job has 4 workers");
}

// The epoch: NETAGG_EPOCH, else the run id of the launcher that started every rank (the same
// on every rank, another for the next run), else none.
TEST_F(ConfigTest, EpochFromTheEnvironmentOrTheLaunchersRunId) {
  ::setenv("NETAGG_JOB_FILE", write("job.json", kJob4).c_str(), 1);
  ::setenv("NETAGG_RANK", "1", 1);
  EXPECT_FALSE(Config::from_env().epoch);
  ::setenv("OMPI_MCA_ess_base_jobid", "2183593985", 1);
  const auto ompi = Config::from_env().epoch;
  ASSERT_TRUE(ompi);
  EXPECT_EQ(launcher_epoch(), ompi);
  ::setenv("OMPI_MCA_ess_base_jobid", "2183593986", 1);  // the next mpirun
  EXPECT_NE(Config::from_env().epoch, ompi);
  ::unsetenv("OMPI_MCA_ess_base_jobid");
  ::setenv("SLURM_JOB_ID", "77", 1);
  ::setenv("SLURM_STEP_ID", "0", 1);
  const auto step0 = launcher_epoch();
  ::setenv("SLURM_STEP_ID", "1", 1);
  EXPECT_NE(launcher_epoch(), step0);
  ::setenv("TORCHELASTIC_RUN_ID", "a1b2", 1);  // torchrun, ahead of the others
  EXPECT_NE(launcher_epoch(), step0);
  ::setenv("NETAGG_EPOCH", " 3735928559\n", 1);  // ours wins; blanks as od writes them
  EXPECT_EQ(Config::from_env().epoch, 3735928559u);
  ::setenv("NETAGG_EPOCH", "0xdeadbeef", 1);
  EXPECT_EQ(Config::from_env().epoch, 0xdeadbeefu);
  EXPECT_EQ(Config::from_env().engine_params().epoch, 0xdeadbeefu);
  ::setenv("NETAGG_EPOCH", "4294967296", 1);
  EXPECT_EQ(error_of([] { Config::from_env(); }),
            "NETAGG_EPOCH: 4294967296 does not fit in 32 bits");
  ::setenv("NETAGG_EPOCH", "12ab", 1);
  EXPECT_EQ(error_of([] { Config::from_env(); }),
            "NETAGG_EPOCH: '12ab' is not a decimal or 0x-hexadecimal integer");
  ::setenv("NETAGG_EPOCH", "", 1);
  EXPECT_THAT(error_of([] { Config::from_env(); }), ::testing::HasSubstr("NETAGG_EPOCH"));
}

// A run id that every launch repeats would give two runs one token, and the second run another
// run's sums: none is taken, and the refusal says what to set. 0 is refused as a token.
TEST_F(ConfigTest, ARunIdThatEveryLaunchRepeatsGivesNoEpoch) {
  ::setenv("NETAGG_JOB_FILE", write("job.json", kJob4).c_str(), 1);
  ::setenv("NETAGG_RANK", "1", 1);
  EXPECT_FALSE(launcher_run_id_problem());
  for (const char* id : {"none", "", " ", "0", "None", "default", "null"}) {
    ::setenv("TORCHELASTIC_RUN_ID", id, 1);
    EXPECT_FALSE(launcher_epoch()) << "'" << id << "'";
    EXPECT_FALSE(Config::from_env().epoch) << "'" << id << "'";
    const auto problem = launcher_run_id_problem();
    ASSERT_TRUE(problem) << "'" << id << "'";
    EXPECT_THAT(*problem, ::testing::HasSubstr("is the same in every launch"));
    EXPECT_THAT(*problem, ::testing::HasSubstr("--rdzv-id"));
    EXPECT_THAT(*problem, ::testing::HasSubstr("NETAGG_EPOCH"));
  }
  ::setenv("TORCHELASTIC_RUN_ID", "none", 1);
  ::setenv("OMPI_MCA_ess_base_jobid", "2183593985", 1);  // torchrun's id comes first
  EXPECT_FALSE(launcher_epoch());
  ::unsetenv("TORCHELASTIC_RUN_ID");
  EXPECT_TRUE(launcher_epoch());
  EXPECT_FALSE(launcher_run_id_problem());
  ::setenv("OMPI_MCA_ess_base_jobid", "", 1);
  EXPECT_FALSE(launcher_epoch());
  EXPECT_THAT(*launcher_run_id_problem(), ::testing::HasSubstr("OMPI_MCA_ess_base_jobid=''"));
  ::unsetenv("OMPI_MCA_ess_base_jobid");
  ::setenv("TORCHELASTIC_RUN_ID", "3f2a9c", 1);  // a real run id still gives one
  EXPECT_TRUE(launcher_epoch());
  for (const char* zero : {"0", "0x0", " 0\n"}) {
    ::setenv("NETAGG_EPOCH", zero, 1);
    EXPECT_THAT(error_of([] { Config::from_env(); }),
                ::testing::StartsWith("NETAGG_EPOCH: 0 is not a run token"));
  }
  EXPECT_THAT(error_of([] { check_epoch(0, "epoch"); }), ::testing::HasSubstr("/dev/urandom"));
  for (int i = 0; i < 1000; ++i) ASSERT_NE(random_epoch(), 0u);
}

TEST_F(ConfigTest, EnvironmentOverridesTheConfigFile) {
  write("job.json", kJob4);
  const auto f = write("w.json", R"({"rank": 0, "job_file": "job.json", "loss": 0.2,
                                     "job_timeout_ms": 100})");
  ::setenv("NETAGG_CONFIG", f.c_str(), 1);
  Config c = Config::from_env();
  EXPECT_EQ(c.rank, 0);
  EXPECT_DOUBLE_EQ(c.loss, 0.2);
  EXPECT_EQ(c.job_timeout, std::chrono::milliseconds(100));
  ::setenv("NETAGG_RANK", "3", 1);
  ::setenv("NETAGG_LOSS", "0", 1);
  c = Config::from_env();
  EXPECT_EQ(c.rank, 3);
  EXPECT_EQ(c.loss, 0.0);
}

TEST_F(ConfigTest, EnvironmentErrorsNameTheVariable) {
  const auto job = write("job.json", kJob4);
  const auto err = [&](std::initializer_list<std::pair<const char*, const char*>> vars,
                       Errc code = Errc::kConfig) {
    for (const char* v : kVariables) ::unsetenv(v);
    ::setenv("NETAGG_JOB_FILE", job.c_str(), 1);
    ::setenv("NETAGG_RANK", "0", 1);
    for (auto [k, v] : vars) {
      if (v)
        ::setenv(k, v, 1);
      else
        ::unsetenv(k);
    }
    return error_of([] { Config::from_env(); }, code);
  };
  EXPECT_EQ(err({{"NETAGG_RANK", "x"}}), "NETAGG_RANK: 'x' is not an integer");
  EXPECT_EQ(err({{"NETAGG_RANK", "1x"}}), "NETAGG_RANK: '1x' is not an integer");
  EXPECT_EQ(err({{"NETAGG_RANK", ""}}), "NETAGG_RANK: '' is not an integer");
  EXPECT_THAT(err({{"NETAGG_RANK", "-1"}}), HasSubstr("NETAGG_RANK: -1 is out of range"));
  EXPECT_EQ(err({{"NETAGG_RANK", "5"}}), "rank 5 is outside the job's 4 workers (0..3)");
  EXPECT_EQ(err({{"PMI_RANK", "x"}, {"NETAGG_RANK", nullptr}}), "PMI_RANK: 'x' is not an integer");
  EXPECT_THAT(err({{"NETAGG_RANK", nullptr}}), HasSubstr("NETAGG_RANK: not set"));
  EXPECT_EQ(err({{"NETAGG_WORLD_SIZE", "3"}}), "NETAGG_WORLD_SIZE=3 but the job has 4 workers");
  EXPECT_EQ(err({{"NETAGG_WORLD_SIZE", "four"}}), "NETAGG_WORLD_SIZE: 'four' is not an integer");
  EXPECT_THAT(err({{"NETAGG_JOB_FILE", nullptr}}), HasSubstr("NETAGG_JOB_FILE: not set"));
  EXPECT_THAT(err({{"NETAGG_JOB_FILE", "/nonexistent/job.json"}}),
              AllOf(HasSubstr("/nonexistent/job.json"), HasSubstr("cannot open")));
  EXPECT_THAT(err({{"NETAGG_JOB_ID", "8"}}), HasSubstr("no job with job_id 8"));
  EXPECT_THAT(err({{"NETAGG_CONFIG", "/nonexistent/conf.json"}}),
              HasSubstr("/nonexistent/conf.json"));
  EXPECT_THAT(err({{"NETAGG_AGGREGATOR", "localhost:1"}}),
              AllOf(HasSubstr("NETAGG_AGGREGATOR"), HasSubstr("'localhost'")));
  EXPECT_THAT(err({{"NETAGG_AGGREGATOR", "10.0.0.1:99999"}}),
              AllOf(HasSubstr("NETAGG_AGGREGATOR"), HasSubstr("'99999'")));
  EXPECT_EQ(err({{"NETAGG_FLOAT_WIRE", "fp16"}}),
            "NETAGG_FLOAT_WIRE: 'fp16' is not one of int32-bfp, fp32, fp32-exact");
  EXPECT_EQ(err({{"NETAGG_TIMEOUT_MS", "soon"}}), "NETAGG_TIMEOUT_MS: 'soon' is not a number");
  EXPECT_EQ(err({{"NETAGG_TIMEOUT_MS", "-5"}}),
            "NETAGG_TIMEOUT_MS: -5 ms is outside (0, 86400000] ms");
  EXPECT_EQ(err({{"NETAGG_TIMEOUT_MS", "1e10"}}),
            "NETAGG_TIMEOUT_MS: 10000000000 ms is outside (0, 86400000] ms");
  EXPECT_EQ(err({{"NETAGG_TIMEOUT_MS", "inf"}}), "NETAGG_TIMEOUT_MS: 'inf' is not a number");
  EXPECT_EQ(err({{"NETAGG_RETRANSMIT_TIMEOUT_MS", "0"}}),
            "NETAGG_RETRANSMIT_TIMEOUT_MS: 0 ms is outside (0, 86400000] ms");
  EXPECT_EQ(err({{"NETAGG_MAX_RETRANSMIT_TIMEOUT_MS", "1"}}),
            "max_retransmit_timeout: 1 ms is below retransmit_timeout 20 ms");
  EXPECT_EQ(err({{"NETAGG_ADAPTIVE_RETRANSMIT", "maybe"}}),
            "NETAGG_ADAPTIVE_RETRANSMIT: 'maybe' is not a boolean (1/0, true/false)");
  EXPECT_EQ(err({{"NETAGG_LOSS", "1"}}), "NETAGG_LOSS: 1 is outside [0, 1)");
  EXPECT_EQ(err({{"NETAGG_LOSS", "lots"}}), "NETAGG_LOSS: 'lots' is not a number");
  EXPECT_EQ(err({{"NETAGG_LOSS_SEED", "-1"}}),
            "NETAGG_LOSS_SEED: '-1' is not a non-negative integer");
  EXPECT_THAT(err({{"NETAGG_TRANSPORT", "tcp"}}), HasSubstr("transport: 'tcp'"));
  if (!netagg::dpdk_built()) {
    EXPECT_THAT(err({{"NETAGG_TRANSPORT", "dpdk"}}, Errc::kUnsupported), HasSubstr("dpdk"));
  }
}

TEST_F(ConfigTest, EngineParamsFollowTheJob) {
  Config c;
  c.job = parse_job(kJob4);
  c.rank = 3;
  c.retransmit_timeout = std::chrono::milliseconds(3);
  c.max_retransmit_timeout = std::chrono::milliseconds(30);
  c.min_retransmit_timeout = std::chrono::milliseconds(2);
  c.job_timeout = std::chrono::milliseconds(300);
  c.validate();
  const EngineParams p = c.engine_params();
  EXPECT_TRUE(p.adaptive_retransmit) << "adaptive unless configured otherwise";
  EXPECT_EQ(p.min_retransmit_timeout, std::chrono::milliseconds(2));
  EXPECT_EQ(p.job_id, 7);
  EXPECT_EQ(p.rank, 3);
  EXPECT_EQ(p.slot_base, 16);
  EXPECT_EQ(p.window, 32);
  EXPECT_EQ(p.retransmit_timeout, std::chrono::milliseconds(3));
  EXPECT_EQ(p.max_retransmit_timeout, std::chrono::milliseconds(30));
  EXPECT_EQ(p.job_timeout, std::chrono::milliseconds(300));
}

TEST_F(ConfigTest, PaceFromTheFileTheEnvironmentAndItsErrors) {
  write("job.json", kJob4);
  EXPECT_EQ(Config{}.pace_gbps, 0) << "unpaced unless configured";
  const auto f = write("w.json", R"({"rank": 1, "job_file": "job.json", "pace_gbps": 2.5})");
  EXPECT_DOUBLE_EQ(Config::from_file(f).pace_gbps, 2.5);
  ::setenv("NETAGG_CONFIG", f.c_str(), 1);
  EXPECT_DOUBLE_EQ(Config::from_env().pace_gbps, 2.5);
  ::setenv("NETAGG_PACE_GBPS", "0.06", 1);  // the environment wins over the file
  EXPECT_DOUBLE_EQ(Config::from_env().pace_gbps, 0.06);
  ::setenv("NETAGG_PACE_GBPS", "0", 1);
  EXPECT_EQ(Config::from_env().pace_gbps, 0);

  // For a Config built by hand (netagg-allreduce --job): apply_run_environment reads it too.
  Config hand;
  ::setenv("NETAGG_PACE_GBPS", "1.25", 1);
  apply_run_environment(hand);
  EXPECT_DOUBLE_EQ(hand.pace_gbps, 1.25);

  // A world size the job does not have is refused for a Config built by hand too.
  Config four;
  four.job = parse_job(kJob4, "job.json");
  ::setenv("NETAGG_WORLD_SIZE", "3", 1);
  EXPECT_EQ(error_of([&] { apply_run_environment(four); }),
            "NETAGG_WORLD_SIZE=3 but the job has 4 workers");
  ::setenv("NETAGG_WORLD_SIZE", "4", 1);
  EXPECT_NO_THROW(apply_run_environment(four));
  ::unsetenv("NETAGG_WORLD_SIZE");

  ::setenv("NETAGG_PACE_GBPS", "fast", 1);
  EXPECT_EQ(error_of([] { Config::from_env(); }), "NETAGG_PACE_GBPS: 'fast' is not a number");
  ::setenv("NETAGG_PACE_GBPS", "-1", 1);
  EXPECT_EQ(error_of([] { Config::from_env(); }),
            "NETAGG_PACE_GBPS: -1 Gbit/s is neither 0 (off) nor in [0.001, 10000]");
  ::unsetenv("NETAGG_PACE_GBPS");
  ::unsetenv("NETAGG_CONFIG");
  const auto bad = write("bad.json", R"({"rank": 1, "job_file": "job.json", "pace_gbps": 1e5})");
  EXPECT_THAT(error_of([&] { Config::from_file(bad); }),
              AllOf(HasSubstr("bad.json"),
                    HasSubstr("pace_gbps: 100000 Gbit/s is neither 0 (off) nor in")));
  const auto text = write("text.json", R"({"rank": 1, "job_file": "job.json", "pace_gbps": "1"})");
  EXPECT_THAT(error_of([&] { Config::from_file(text); }), HasSubstr("pace_gbps: must be a number"));
  Config c;
  c.job = parse_job(kJob4);
  c.rank = 0;
  c.pace_gbps = std::nan("");
  EXPECT_THAT(error_of([&] { c.validate(); }), HasSubstr("pace_gbps: nan Gbit/s is neither"));
}

TEST_F(ConfigTest, ValidateCatchesHandBuiltMistakes) {
  Config c;
  c.job = parse_job(kJob4);
  c.rank = 0;
  EXPECT_NO_THROW(c.validate());
  Config bad = c;
  bad.rank = -1;
  EXPECT_EQ(error_of([&] { bad.validate(); }), "rank: not set");
  bad = c;
  bad.job.workers.clear();
  EXPECT_EQ(error_of([&] { bad.validate(); }), "job: has no workers");
  bad = c;
  bad.job.aggregator.reset();
  EXPECT_THAT(error_of([&] { bad.validate(); }), HasSubstr("aggregator: not set"));
  bad = c;
  bad.job_timeout = Duration::zero();
  EXPECT_EQ(error_of([&] { bad.validate(); }), "job_timeout: 0 ms is outside (0, 86400000] ms");
  bad = c;
  bad.loss = -0.5;
  EXPECT_EQ(error_of([&] { bad.validate(); }), "loss: -0.5 is outside [0, 1)");
  bad = c;
  bad.job.elements_per_packet = 0;
  EXPECT_THAT(error_of([&] { bad.validate(); }), HasSubstr("elements_per_packet"));
}

TEST(FloatWireTest, NamesRoundTrip) {
  for (auto w : {FloatWire::kBlockInt32, FloatWire::kFp32})
    EXPECT_EQ(parse_float_wire(to_string(w)), w);
  EXPECT_THROW(parse_float_wire("int8"), Error);
}

}  // namespace
}  // namespace netagg
