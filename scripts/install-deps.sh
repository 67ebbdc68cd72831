#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian 12 packages netagg needs to build, test and benchmark.
# Idempotent: does nothing when everything is already installed. Needs root or sudo.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config make
  libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev libfmt-dev
  libhwy-dev
  libgloo-dev
  clang libclang-rt-14-dev   # libFuzzer target for the wire decoder
  clang-format               # the format check (scripts/check/check-format.sh)
  python3
  python3-matplotlib         # the plots of `make bench`
  tshark                     # the Wireshark dissector tests (formats/wireshark/netagg.lua); dumpcap
  iperf3                     # `make bench`'s competing TCP flow (scripts/bench/bench-competing.sh)
  verilator yosys            # RTL simulation and lint; synthesis check (scripts/hw/synth.sh)
  zlib1g-dev                 # Verilator's FST trace writer (fstapi) includes zlib.h
  libxrt-dev uuid-dev        # the Alveo driver over XRT 2.13 (driver/fpga; compiled, linked, error paths tested)
  dpdk libdpdk-dev dpdk-dev  # the DPDK transport (pkg-config libdpdk; PMDs net_af_packet, ...)
  iproute2 nftables ethtool  # namespace tests and benches: namespaces, veths, tbf, loss, offloads
  libns3-dev ns3 libgsl-dev  # the ns-3 fabric (sim/fabric, netagg-fabric): ns-3 3.37's headers, libraries, its GSL
  libglpk-dev graphviz       # netagg-plan's linear programs (plan/) and its --png/--svg drawings
  python3-torch libtorch-dev pybind11-dev python3-dev  # the torch.distributed backend (torch/)
  python3-sklearn            # the training example's data set (examples/pytorch)
  openmpi-bin                # mpirun for the MPI example (examples/mpi)
  libsystemc-dev             # the Alveo card's virtual platform (sim/vp, SystemC 2.3.4)
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1; then
  sudo=(sudo)
else
  echo "install-deps: need root or sudo to install: ${missing[*]}" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# tshark's wireshark-common asks whether users outside the wireshark group may capture: no (the
# capture test runs as root), answered here so that the install asks nothing.
echo "wireshark-common wireshark-common/install-setuid boolean false" |
  "${sudo[@]}" debconf-set-selections
"${sudo[@]}" apt-get update -q
"${sudo[@]}" apt-get install -y -q "${missing[@]}"
