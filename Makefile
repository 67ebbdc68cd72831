# SPDX-License-Identifier: Apache-2.0
# Front door. Every target installs what it needs (scripts/install-deps.sh, once: again only when
# its package list changes, or with `make deps`), configures once and builds what it runs.
BUILD ?= build
BUILD_TYPE ?= Release
CMAKE_FLAGS ?=
# ON: compiler warnings are errors (-DNETAGG_WERROR=ON); .ci/run sets it.
NETAGG_WERROR ?= OFF
JOBS ?= $(shell nproc)
DEPS_STAMP := $(BUILD)/.deps-installed

.PHONY: all deps configure build test test-long demo bench bench-fabric bench-plan bench-bmv2 pytorch clean sim xclbin p4 formats format-check

all: build

deps:
	@bash scripts/install-deps.sh
	@mkdir -p $(BUILD) && touch $(DEPS_STAMP)

$(DEPS_STAMP): scripts/install-deps.sh
	@bash scripts/install-deps.sh
	@mkdir -p $(BUILD) && touch $@

# CMake re-runs itself when a CMakeLists.txt changes; `make configure` forces it (new CMAKE_FLAGS).
$(BUILD)/build.ninja: | $(DEPS_STAMP)
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) \
	  -DNETAGG_WERROR=$(NETAGG_WERROR) $(CMAKE_FLAGS)

configure: $(DEPS_STAMP)
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) \
	  -DNETAGG_WERROR=$(NETAGG_WERROR) $(CMAKE_FLAGS)

build: $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

# Every generated view of formats/wire.json and formats/csr.json (docs/wire-format.md).
formats:
	python3 scripts/gen_formats.py

# The C++ against .clang-format (run by .ci/run before the tests).
format-check: $(DEPS_STAMP)
	bash scripts/check/check-format.sh

# Unit, model and end-to-end tests. Tests labelled "long" run only with `make test-long`.
test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) -LE long

test-long: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# 4 workers all-reduce a 16M-element fp32 tensor through the switch model on loopback, then a
# 4M-element one through the FPGA aggregator's RTL in Verilator (fp32 adds on the wire; the
# simulated RTL runs some 10^5 cycles a second, so the tensor is smaller). Only what it runs is
# built: the launcher, the worker and the two daemons, no tests.
demo: $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target netagg-local netagg-allreduce netagg-switchd netagg-fpgad
	$(BUILD)/sim/launcher/netagg-local --workers 4 --target switch-sim --dtype fp32 --count 16777216
	$(BUILD)/sim/launcher/netagg-local --workers 4 --target fpga-sim --dtype fp32 --count 4194304

# The RTL testbench: a scripted scenario through the Verilated aggregator, checked step by
# step, with an FST waveform for GTKWave (the path is printed at the end).
sim: $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target netagg-fpga-scenario
	$(BUILD)/sim/fpga/netagg-fpga-scenario --model rtl --trace $(BUILD)/netagg_aggregator.fst

# Benchmarks: JSON (and plots) in $(BUILD)/bench/, summary on stdout. BENCH_PACKETS=0 skips the cost
# of a packet (scripts/bench/bench-packets.sh), BENCH_SHAPED=0 the shaped-link comparison
# (scripts/bench/bench-shaped.sh; as root, else reported as skipped), BENCH_COMPETING=0 the
# competing TCP flow (scripts/bench/bench-competing.sh; as root), BENCH_FALLBACK=0 the host fallback
# against Gloo's ring (scripts/bench/bench-fallback.sh).
bench: build
	status=0; bash scripts/bench/bench.sh $(BUILD) || status=$$?; \
	if [ "$${BENCH_PACKETS:-1}" != 0 ]; then bash scripts/bench/bench-packets.sh $(BUILD) || status=$$?; fi; \
	if [ "$${BENCH_SHAPED:-1}" != 0 ]; then bash scripts/bench/bench-shaped.sh $(BUILD) || status=$$?; fi; \
	if [ "$${BENCH_COMPETING:-1}" != 0 ]; then bash scripts/bench/bench-competing.sh $(BUILD) || status=$$?; fi; \
	if [ "$${BENCH_FALLBACK:-1}" != 0 ]; then bash scripts/bench/bench-fallback.sh $(BUILD) || status=$$?; fi; \
	exit $$status

# The ns-3 fabric (docs/fabric.md): all-reduce completion time against the number of workers,
# in-network (a tree of switch models) and ring over TCP; then several trees on an
# oversubscribed fabric and congestion control against long TCP flows. JSON and plots in
# $(BUILD)/bench/. Builds only netagg-fabric.
bench-fabric: $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target netagg-fabric
	status=0; bash scripts/bench/bench-fabric.sh $(BUILD) || status=$$?; \
	bash scripts/bench/bench-fabric-studies.sh $(BUILD) || status=$$?; exit $$status

# netagg-plan (docs/routing.md): Scheme 1, Scheme 2, GRID and the LP bound on fat trees k = 4, 8,
# 16; JSON and a plot in $(BUILD)/bench/.
bench-plan: $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target netagg-plan
	bash scripts/bench/bench-plan.sh $(BUILD)

# BMv2's simple_switch running the P4 program (docs/switch-pipeline.md): 4 workers' all-reduce
# time against elements per packet; JSON in $(BUILD)/bench/bmv2.json. Root and the P4 tools
# (scripts/p4/p4-tools.sh) needed, else it says what is missing.
bench-bmv2: $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target netagg-replay netagg-ctl netagg-allreduce
	mkdir -p $(BUILD)/bench
	bash scripts/bench/bench-bmv2.sh $(BUILD) $(BUILD)/bench/bmv2.json

# The torch.distributed backend's example (docs/pytorch.md): DDP on 4 ranks with Gloo and through
# netagg (switch model, FPGA HLS model, both also with 1 % loss, 10 RTL steps); accuracy, samples/s
# and all-reduce time per step on stdout, loss curves in $(BUILD)/pytorch/.
pytorch: $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target netagg-torch
	/usr/bin/python3 examples/pytorch/run_digits.py --build $(BUILD)

# The P4 programs: compiled with the P4 tools in NETAGG_P4_PREFIX/bin (default /opt/netagg-p4) or on
# PATH; otherwise says which are missing and where they were looked for, and exits 0
# (scripts/p4/p4-build.sh; the tests of label p4-toolchain use the same tools,
# scripts/p4/p4-tools.sh).
p4:
	bash scripts/p4/p4-build.sh $(BUILD)

# The Alveo xclbin (docs/hardware.md, "Vitis build flow"): PLATFORM=u250|u280|u55c, KERNEL=rtl|hls,
# CMAC_XO=<the 100G Ethernet kernels>. Needs Vitis on PATH: without it, stops at once saying what
# is needed (nothing is configured or built first).
PLATFORM ?=
KERNEL ?= rtl
xclbin:
	@$(MAKE) --no-print-directory -C hw/vitis xclbin PLATFORM="$(PLATFORM)" KERNEL="$(KERNEL)" \
	  BUILD_DIR="$(abspath $(BUILD))/vitis"

clean:
	rm -rf $(BUILD)
