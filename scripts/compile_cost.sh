#!/usr/bin/env bash
# Compile cost of the header-only library (issue #6 item 6): wall time and peak memory of
# compiling ONE translation unit that includes memhealth.hpp and instantiates the default
# pipeline's run() on a memory_store<memory_record>, measured with /usr/bin/time -v.
#
# Usage: scripts/compile_cost.sh [compiler] [extra flags...]
#   compiler defaults to $CXX or g++; flags default to -O2. Example:
#   scripts/compile_cost.sh g++ -O2        # the issue's target: under 20 s and 1.5 GB
#   scripts/compile_cost.sh clang++ -O2
# Prints one line per figure and exits non-zero when the compile fails. No targets asserted
# here: the machine may be busy; the load average is printed with the figures.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cxx="${1:-${CXX:-g++}}"
shift || true
flags=("$@")
[ ${#flags[@]} -eq 0 ] && flags=(-O2)
[ -x /usr/bin/time ] || { echo "compile_cost.sh: /usr/bin/time is needed (Debian package 'time')" >&2; exit 2; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/tu.cpp" <<'CPP'
// One TU: the umbrella header and the default pipeline run on the in-memory store.
#include "memhealth/memhealth.hpp"

memhealth::report run_default(const memhealth::memory_store<memhealth::memory_record>& store) {
  return memhealth::make_default_pipeline().run(store, memhealth::detect_options{});
}

int main() {
  memhealth::memory_store<memhealth::memory_record> store;
  return static_cast<int>(run_default(store).findings.size());
}
CPP

load_before="$(cut -d' ' -f1 /proc/loadavg)"
if ! /usr/bin/time -v -o "$tmp/time.txt" "$cxx" -std=c++20 "${flags[@]}" -I"$here/include" -isystem /usr/include/eigen3 \
      -c "$tmp/tu.cpp" -o "$tmp/tu.o" 2> "$tmp/err.txt"; then
  cat "$tmp/err.txt" >&2
  exit 1
fi
load_after="$(cut -d' ' -f1 /proc/loadavg)"
wall="$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$tmp/time.txt")"
user="$(sed -n 's/.*User time (seconds): //p' "$tmp/time.txt")"
sys="$(sed -n 's/.*System time (seconds): //p' "$tmp/time.txt")"
rss_kb="$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$tmp/time.txt")"
obj_kb="$(( $(stat -c %s "$tmp/tu.o") / 1024 ))"
echo "compiler:      $("$cxx" --version | head -1)"
echo "flags:         -std=c++20 ${flags[*]}"
echo "wall:          $wall (m:ss)"
echo "cpu:           user ${user} s + sys ${sys} s"
echo "peak_rss:      $((rss_kb / 1024)) MB"
echo "object:        ${obj_kb} KB"
echo "load_average:  ${load_before} before, ${load_after} after (1-minute; 2 cores)"
