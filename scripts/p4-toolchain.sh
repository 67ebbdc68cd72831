#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the open-source P4 tool chain from its public sources with Debian 12's libraries, into a
# prefix outside the source tree: BMv2 (simple_switch, simple_switch_CLI) and p4c (p4c-bm2-ss,
# p4test). Nothing of it is committed; `make p4` and the tests of label p4-toolchain find it
# through NETAGG_P4_PREFIX (default /opt/netagg-p4) and skip, saying why, when it is absent.
#
#   bash scripts/p4-toolchain.sh [options]
#     --prefix DIR        where to build and install (default: $NETAGG_P4_PREFIX or /opt/netagg-p4)
#     --bmv2-src URL      git source of p4lang/behavioral-model (default: its GitHub address)
#     --p4c-src URL       git source of p4lang/p4c
#     --p4runtime-src URL git source of p4lang/p4runtime
#     --jobs N            parallel build jobs (default: nproc)
#     --only bmv2|p4c     build one of the two
#     --no-deps           do not apt-get install the build dependencies
#     --with-tofino       also the open-source Tofino back end of p4c (p4c-barefoot): p4c's newest
#                         sources, which need C++20, protobuf 25.3, abseil 20240722.1, Z3 4.11.2
#                         and spdlog 1.8.3, all built from source into DIR/tofino-deps (Debian 12
#                         has protobuf 3.21, abseil 20220623 and Z3 4.8.12: too old), and the
#                         Python module jsl 0.2.4 its code generators import (not in Debian).
#                         Several hours on 2 cores; resumable. Sources: --p4c-tofino-src URL
#                         (default --p4c-src), --z3-src, --abseil-src, --protobuf-src,
#                         --spdlog-src, --jsl-src
#     --tofino-only       only the Tofino back end (after a build of the rest)
#
# Versions (the newest that build against Debian 12's protobuf 3.21 without abseil):
#   BMv2 1.15.5 at 9674187f; p4c v1.2.4.8 (32893b7e) with the p4runtime it pins (1e771c4e).
# Result: DIR/bin/{p4c-bm2-ss,p4test,simple_switch,simple_switch_CLI}, DIR/share/p4c/p4include,
# DIR/tna-include (tna.p4 and tofino*.p4 from p4c's Tofino back end, for `p4test` checks of the
# TNA program), and DIR/versions.json with the commits and build times.
# Each step is skipped when its result is already there, so a stopped build resumes.
set -euo pipefail

prefix=${NETAGG_P4_PREFIX:-/opt/netagg-p4}
bmv2_src=https://github.com/p4lang/behavioral-model.git
p4c_src=https://github.com/p4lang/p4c.git
p4runtime_src=https://github.com/p4lang/p4runtime.git
jobs=$(nproc)
only=""
deps=1
tofino=0
p4c_tofino_src=""
z3_src=https://github.com/Z3Prover/z3.git
abseil_src=https://github.com/abseil/abseil-cpp.git
protobuf_src=https://github.com/protocolbuffers/protobuf.git
spdlog_src=https://github.com/gabime/spdlog.git
jsl_src=https://github.com/aromanovich/jsl.git

bmv2_commit=9674187f
p4c_ref=v1.2.4.8
p4runtime_commit=1e771c4e05c4e7e250df00212b3ca02ee3202d71
# The Tofino back end: p4c's main branch of 2026-08-07 and what it pins.
p4c_tofino_ref=34b86e9bac
p4runtime_tofino_commit=ec4eb5ef70dbcbcbf2f8357a4b2b8c2f218845a5
z3_ref=z3-4.11.2          # p4c wants 4.8.14 <= Z3 < 4.12 (4.12 and later crash with libgc)
abseil_ref=20240722.1
protobuf_ref=v25.3
spdlog_ref=v1.8.3
jsl_ref=0.2.4

usage() { sed -n '3,31p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
while [[ $# -gt 0 ]]; do
  case $1 in
    --prefix) prefix=$2; shift 2 ;;
    --bmv2-src) bmv2_src=$2; shift 2 ;;
    --p4c-src) p4c_src=$2; shift 2 ;;
    --p4runtime-src) p4runtime_src=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --no-deps) deps=0; shift ;;
    --with-tofino) tofino=1; shift ;;
    --tofino-only) tofino=1; only=tofino; shift ;;
    --p4c-tofino-src) p4c_tofino_src=$2; shift 2 ;;
    --z3-src) z3_src=$2; shift 2 ;;
    --abseil-src) abseil_src=$2; shift 2 ;;
    --protobuf-src) protobuf_src=$2; shift 2 ;;
    --spdlog-src) spdlog_src=$2; shift 2 ;;
    --jsl-src) jsl_src=$2; shift 2 ;;
    -h|--help) usage ;;
    *) echo "p4-toolchain: unknown option $1" >&2; usage ;;
  esac
done
case $only in ""|bmv2|p4c|tofino) ;; *) echo "p4-toolchain: --only takes bmv2 or p4c" >&2; exit 2 ;; esac
p4c_tofino_src=${p4c_tofino_src:-$p4c_src}

root=$(cd "$(dirname "$0")/.." && pwd)
prefix=$(mkdir -p "$prefix" && cd "$prefix" && pwd)
case $prefix/ in "$root"/*) echo "p4-toolchain: the prefix must be outside the source tree" >&2; exit 2 ;; esac
src=$prefix/src
mkdir -p "$src" "$prefix/bin"
log() { echo "p4-toolchain: $*" >&2; }

if [[ $deps == 1 ]]; then
  packages=(build-essential cmake ninja-build git pkg-config libprotobuf-dev protobuf-compiler
    libgc-dev libboost-dev libboost-graph-dev libboost-iostreams-dev libboost-program-options-dev
    libboost-system-dev libboost-filesystem-dev libboost-thread-dev bison flex libfl-dev
    libgmp-dev libthrift-dev thrift-compiler libnanomsg-dev libpcap-dev libtool autoconf automake
    python3-thrift libxxhash-dev libjsoncpp-dev iputils-ping)
  [[ $tofino == 1 ]] && packages+=(python3-dev libboost-graph-dev libboost-iostreams-dev rapidjson-dev
    python3-jsonschema)
  missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [[ ${#missing[@]} -gt 0 ]]; then
    log "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q && apt-get install -y -q "${missing[@]}"
  fi
fi

# checkout DIR URL REF: a clone of URL at REF in DIR (kept if already there at REF).
checkout() {
  local dir=$1 url=$2 ref=$3 fresh=0
  if [[ ! -d $dir/.git ]]; then
    log "cloning $url into $dir"
    git clone -q --no-checkout "$url" "$dir"
    fresh=1
  fi
  if [[ $fresh == 1 || $(git -C "$dir" rev-parse HEAD) != $(git -C "$dir" rev-parse "$ref^{commit}") ]]; then
    # A file missing from a mirror's snapshot (binary documents) is harmless: checkout reports
    # it and leaves everything else in place.
    git -C "$dir" -c advice.detachedHead=false checkout -q -f "$ref" || true
    [[ $(git -C "$dir" rev-parse HEAD) == $(git -C "$dir" rev-parse "$ref^{commit}") ]] \
      || { log "could not check out $ref in $dir"; exit 1; }
  fi
}

seconds() { date +%s; }
declare -A took

build_bmv2() {
  local dir=$src/bmv2 t0
  checkout "$dir" "$bmv2_src" "$bmv2_commit"
  if [[ -x $dir/targets/simple_switch/.libs/simple_switch ]]; then
    log "BMv2 already built"; return
  fi
  t0=$(seconds)
  (
    cd "$dir"
    [[ -x configure ]] || ./autogen.sh
    # No --without-pi: in this configure.ac it turns PI on. -g0 keeps the build small.
    [[ -f Makefile ]] || ./configure --without-packet-trace --disable-static CXXFLAGS="-O2 -g0"
    for d in thrift_src third_party src include tools targets/simple_switch; do
      make -j"$jobs" -C "$d"
    done
  )
  took[bmv2]=$(( $(seconds) - t0 ))
  log "BMv2 built in ${took[bmv2]} s"
}

install_bmv2() {
  local dir=$src/bmv2
  cat > "$prefix/bin/simple_switch" <<EOF
#!/bin/sh
# BMv2's simple_switch, built in $dir (libtool wrapper: finds its libraries there).
exec "$dir/targets/simple_switch/simple_switch" "\$@"
EOF
  cat > "$prefix/bin/simple_switch_CLI" <<EOF
#!/bin/sh
# BMv2's runtime CLI for simple_switch (Thrift, port 9090 unless --thrift-port).
PYTHONPATH="$dir/tools:$dir/targets/simple_switch\${PYTHONPATH:+:\$PYTHONPATH}" \\
  exec /usr/bin/python3 "$dir/targets/simple_switch/sswitch_CLI.py" "\$@"
EOF
  chmod +x "$prefix/bin/simple_switch" "$prefix/bin/simple_switch_CLI"
}

build_p4c() {
  local dir=$src/p4c t0
  checkout "$dir" "$p4c_src" "$p4c_ref"
  checkout "$src/p4runtime" "$p4runtime_src" "$p4runtime_commit"
  if [[ -x $dir/build/backends/bmv2/p4c-bm2-ss && -x $dir/build/backends/p4test/p4test ]]; then
    log "p4c already built"; return
  fi
  t0=$(seconds)
  cmake -S "$dir" -B "$dir/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DENABLE_GTESTS=OFF \
    -DENABLE_EBPF=OFF -DENABLE_UBPF=OFF -DENABLE_DPDK=OFF -DENABLE_P4TC=OFF \
    -DENABLE_TEST_TOOLS=OFF -DENABLE_P4C_GRAPHS=OFF -DENABLE_DOCS=OFF -DENABLE_LTO=OFF \
    -DENABLE_PROTOBUF_STATIC=OFF -DP4C_USE_PREINSTALLED_PROTOBUF=ON \
    -DFETCHCONTENT_FULLY_DISCONNECTED=ON -DFETCHCONTENT_SOURCE_DIR_P4RUNTIME="$src/p4runtime" \
    > "$prefix/p4c-cmake.log"
  cmake --build "$dir/build" -j"$jobs" --target p4c-bm2-ss p4test
  took[p4c]=$(( $(seconds) - t0 ))
  log "p4c built in ${took[p4c]} s"
}

install_p4c() {
  local dir=$src/p4c
  # The compilers look for core.p4 and v1model.p4 in p4include beside their binary.
  ln -sfn ../p4include "$dir/build/p4include"
  ln -sfn "$dir/build/backends/bmv2/p4c-bm2-ss" "$prefix/bin/p4c-bm2-ss"
  ln -sfn "$dir/build/backends/p4test/p4test" "$prefix/bin/p4test"
  mkdir -p "$prefix/share/p4c"
  ln -sfn "$dir/p4include" "$prefix/share/p4c/p4include"
  # The TNA architecture files live in p4c's Tofino back end (newer than the release built
  # here): taken from the source's newest commit, for p4test's language checks.
  local tna=backends/tofino/bf-p4c/p4include
  mkdir -p "$prefix/tna-include"
  local head
  head=$(git -C "$dir" rev-parse --verify -q "origin/HEAD^{commit}" || git -C "$dir" rev-parse --verify -q "origin/main^{commit}" || true)
  if [[ -n $head ]] && git -C "$dir" cat-file -e "$head:$tna/tna.p4" 2>/dev/null; then
    for f in $(git -C "$dir" ls-tree "$head" "$tna/" | awk '$2 == "blob" {print $4}'); do
      git -C "$dir" show "$head:$f" > "$prefix/tna-include/$(basename "$f")"
    done
    echo "$head" > "$prefix/tna-include/COMMIT"
  else
    log "TNA includes not found in $p4c_src (p4test checks of the Tofino program need them)"
  fi
}

record() {
  local f=$prefix/versions.json old="{}"
  [[ -f $f ]] && old=$(cat "$f")
  /usr/bin/python3 - "$f" "$old" "$@" <<'PY'
import json, sys
path, old = sys.argv[1], json.loads(sys.argv[2])
for kv in sys.argv[3:]:
    k, v = kv.split("=", 1)
    old[k] = int(v) if v.isdigit() else v
json.dump(old, open(path, "w"), indent=2, sort_keys=True)
PY
}


# ---- the Tofino back end ----
deps_prefix=$prefix/tofino-deps

# cmake_dep NAME URL REF CMAKE_ARGS...: a CMake project built and installed into deps_prefix.
cmake_dep() {
  local name=$1 url=$2 ref=$3; shift 3
  local dir=$src/$name stamp=$deps_prefix/.$name-$ref t0
  [[ -f $stamp ]] && { log "$name $ref already installed"; return; }
  checkout "$dir" "$url" "$ref"
  t0=$(seconds)
  cmake -S "$dir" -B "$dir/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$deps_prefix" -DCMAKE_PREFIX_PATH="$deps_prefix" "$@" \
    > "$prefix/$name-cmake.log"
  cmake --build "$dir/build" -j"$jobs"
  cmake --install "$dir/build" > /dev/null
  took[$name]=$(( $(seconds) - t0 ))
  log "$name $ref built in ${took[$name]} s"
  record "${name}_ref=$ref" "${name}_build_seconds=${took[$name]}"
  touch "$stamp"
}

build_tofino() {
  mkdir -p "$deps_prefix"
  cmake_dep abseil "$abseil_src" "$abseil_ref" -DCMAKE_CXX_STANDARD=20 \
    -DABSL_PROPAGATE_CXX_STD=ON -DABSL_BUILD_TESTING=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON
  cmake_dep protobuf "$protobuf_src" "$protobuf_ref" -DCMAKE_CXX_STANDARD=20 \
    -Dprotobuf_ABSL_PROVIDER=package -Dprotobuf_BUILD_TESTS=OFF -Dprotobuf_BUILD_SHARED_LIBS=OFF \
    -DCMAKE_POSITION_INDEPENDENT_CODE=ON
  cmake_dep z3 "$z3_src" "$z3_ref" -DZ3_BUILD_LIBZ3_SHARED=ON -DZ3_BUILD_TEST_EXECUTABLES=OFF \
    -DZ3_BUILD_PYTHON_BINDINGS=OFF -DZ3_BUILD_DOCUMENTATION=OFF -DZ3_ENABLE_EXAMPLE_TARGETS=OFF \
    -DZ3_INCLUDE_GIT_HASH=OFF -DZ3_INCLUDE_GIT_DESCRIBE=OFF
  # p4c's FindZ3 module makes the z3::z3 target it links; Z3's own CMake package (z3::libz3)
  # would be taken first, since p4c prefers packages once abseil is a preinstalled one.
  rm -rf "$deps_prefix/lib/cmake/z3"

  # The back end's logging and manifest code is generated by Python scripts that describe their
  # JSON schemas with jsl, a pure-Python module: its package folder on PYTHONPATH is enough.
  checkout "$src/jsl" "$jsl_src" "$jsl_ref"
  export PYTHONPATH="$src/jsl${PYTHONPATH:+:$PYTHONPATH}"

  local dir=$src/p4c-tofino t0
  checkout "$dir" "$p4c_tofino_src" "$p4c_tofino_ref"
  checkout "$src/p4runtime-tofino" "$p4runtime_src" "$p4runtime_tofino_commit"
  # p4c's Tofino back end takes spdlog from this folder when it is there.
  checkout "$dir/backends/tofino/third_party/spdlog" "$spdlog_src" "$spdlog_ref"
  # Debian 12's GCC 12 libstdc++ hands std::erase_if's predicate a const element: a lambda
  # taking a non-const reference does not compile there (newer libstdc++ accepts it).
  sed -i 's/\[this\](flow_join_points_t::value_type &el)/[this](const flow_join_points_t::value_type \&el)/' \
    "$dir/ir/visitor.cpp"
  local bin=$dir/build/backends/tofino/bf-p4c/p4c-barefoot
  if [[ ! -x $bin ]]; then
    t0=$(seconds)
    rm -f "$dir/build/CMakeCache.txt"  # a failed configuration is not kept
    cmake -S "$dir" -B "$dir/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$deps_prefix" -DENABLE_TOFINO=ON -DENABLE_BMV2=OFF -DENABLE_EBPF=OFF \
      -DENABLE_UBPF=OFF -DENABLE_DPDK=OFF -DENABLE_P4TC=OFF -DENABLE_P4FMT=OFF \
      -DENABLE_P4TEST=OFF -DENABLE_TEST_TOOLS=OFF -DENABLE_P4C_GRAPHS=OFF -DENABLE_GTESTS=OFF \
      -DENABLE_DOCS=OFF -DENABLE_LTO=OFF -DENABLE_UNIFIED_COMPILATION=ON \
      -DP4C_USE_PREINSTALLED_PROTOBUF=ON -DP4C_USE_PREINSTALLED_ABSEIL=ON \
      -DP4C_USE_PREINSTALLED_BDWGC=ON -DUSE_PREINSTALLED_Z3=ON -DENABLE_PROTOBUF_STATIC=OFF \
      -DFETCHCONTENT_FULLY_DISCONNECTED=ON \
      -DFETCHCONTENT_SOURCE_DIR_P4RUNTIME="$src/p4runtime-tofino" \
      -DFETCHCONTENT_SOURCE_DIR_SPDLOG="$dir/backends/tofino/third_party/spdlog" \
      > "$prefix/p4c-tofino-cmake.log"
    cmake --build "$dir/build" -j"$jobs" --target p4c-barefoot
    # tna.p4 and the other architecture files into the build's p4include, beside the binary.
    cmake --build "$dir/build" --target linkp4cbarefoot
    took[p4c_tofino]=$(( $(seconds) - t0 ))
    log "p4c's Tofino back end built in ${took[p4c_tofino]} s"
  fi
  # core.p4 and p4c's other includes into the same p4include (p4c's target of all, not of the
  # back end's).
  cmake --build "$dir/build" --target update_includes > /dev/null
  ln -sfn "$bin" "$prefix/bin/p4c-barefoot"
  # The assembler (bfas): p4c-barefoot stops at the assembly (.bfa) and does not check the
  # number of stages it placed tables in; bfas does ("supports up to 12 stages").
  local asm=$dir/build/backends/tofino/bf-asm/bfas
  if [[ ! -x $asm ]]; then
    t0=$(seconds)
    cmake --build "$dir/build" -j"$jobs" --target bfas
    took[bfas]=$(( $(seconds) - t0 ))
    log "p4c's Tofino assembler built in ${took[bfas]} s"
  fi
  ln -sfn "$asm" "$prefix/bin/bfas"
  record "p4c_tofino_commit=$(git -C "$dir" rev-parse HEAD)" \
    ${took[p4c_tofino]:+"p4c_tofino_build_seconds=${took[p4c_tofino]}"} \
    ${took[bfas]:+"bfas_build_seconds=${took[bfas]}"}
}

if [[ $only != p4c && $only != tofino ]]; then
  build_bmv2
  install_bmv2
  record "bmv2_commit=$(git -C "$src/bmv2" rev-parse HEAD)" \
    "bmv2_version=$(cat "$src/bmv2/VERSION" 2>/dev/null || echo unknown)" \
    ${took[bmv2]:+"bmv2_build_seconds=${took[bmv2]}"} "jobs=$jobs" "cores=$(nproc)"
fi
if [[ $only != bmv2 && $only != tofino ]]; then
  build_p4c
  install_p4c
  record "p4c_commit=$(git -C "$src/p4c" rev-parse HEAD)" "p4c_ref=$p4c_ref" \
    "p4runtime_commit=$p4runtime_commit" \
    ${took[p4c]:+"p4c_build_seconds=${took[p4c]}"} "jobs=$jobs" "cores=$(nproc)"
fi
if [[ $tofino == 1 ]]; then build_tofino; fi
log "done: $prefix/bin has $(ls "$prefix/bin" | tr '\n' ' ')"
log "use it: export NETAGG_P4_PREFIX=$prefix (default), then make p4 / ctest -L p4-toolchain"
