#!/usr/bin/env bash
# Installs the Debian packages memhealth's build, tests, tools and benchmarks need, only when they
# are missing (dpkg-query first; `apt-get update` only if something must be installed).
#
# usage: scripts/install-deps.sh [--bench-peers]
#   --bench-peers  also install the libraries memhealth-bench compares against
#                  (FAISS, hnswlib, OpenBLAS); never needed by the library itself.
# Runs apt-get through sudo when not root. Safe to run repeatedly.
set -euo pipefail

packages=(
  cmake ninja-build g++ clang pkg-config    # toolchain (the presets use Ninja)
  libclang-rt-14-dev                        # libFuzzer + sanitizer runtimes for clang (presets fuzz, asan); only recommended by clang
  libeigen3-dev libboost-dev libutf8proc-dev libsimdjson-dev  # the library's dependencies
  doctest-dev libbenchmark-dev              # tests, benchmarks
  libsqlite3-dev nlohmann-json3-dev         # SQLite store backend, JSON in tools and tests
  libpq-dev                                 # PostgreSQL store backend (memhealth::pg, libpq)
  postgresql-15                             # the throwaway server of the PostgreSQL store tests
  zlib1g-dev                                # gzip plan files (io/gzip_stream.hpp)
  libcurl4-openssl-dev libssl-dev           # model adapters (net/: OpenAI-compatible embedder, judge)
  libcpp-httplib-dev                        # the local test server of the net/ tests
  libcli11-dev                              # the memhealth command-line tool (tools/memhealth)
  libtomlplusplus-dev prometheus-cpp-dev    # memhealth watch: TOML configuration, Prometheus metrics
  chromium                                  # renders the HTML audit report in a test (headless)
  python3                                   # scripts/
  python3-dev pybind11-dev python3-numpy python3-pytest  # the Python module (python/) and its tests
  clang-format                              # scripts/format_check.sh (a CI step)
)
for arg in "$@"; do
  case "$arg" in
    --bench-peers) packages+=(libfaiss-dev libhnswlib-dev libopenblas-dev) ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "install-deps.sh: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps.sh: all ${#packages[@]} packages are installed"
  exit 0
fi

echo "install-deps.sh: installing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "install-deps.sh: not root and sudo is missing; install as root: ${missing[*]}" >&2
    exit 1
  fi
  sudo_cmd=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -q --no-install-recommends "${missing[@]}"
