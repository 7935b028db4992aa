#!/usr/bin/env bash
# squall's simulator against ns-3 3.44, side by side, on this machine: one
# bulk TCP NewReno flow, 10 Mbit/s, 30 ms one way, 0.1% packet loss on the
# data direction, 100 simulated seconds; delivered segments (bytes received
# by the application / 1460) per wall-clock second.
#
#   bash bench/ns3/run.sh
#
# Sets up ns-3 once (a venv under bench/ns3/.venv with the `ns3` wheel from
# PyPI, whose headers and shared libraries are all this needs: its Python
# bindings, and so cppyy, are left out; tcp_bulk.cc compiled against it into
# bench/ns3/build/), builds squall (cargo build --release -p squall), then
# runs each simulator once per seed, interleaved (three repetitions each by
# default), and prints every run, both medians and their ratio. Each
# program times its own simulation (ns-3: Simulator::Run; squall:
# squall_sim::run), in wall-clock and in CPU seconds; process start and
# scenario setup are left out of both.
#
# Environment:
#   SEEDS="1 2 3"     seeds of the runs (one run of each simulator per seed)
#   SQUALL=path       a squall binary to use instead of building one
#   NS3_VERSION=...   the ns3 wheel to install (default 3.44.post0)
#   JOBS=N            cargo build jobs (default: cargo's)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="$here/.venv"
build="$here/build"
ns3_version="${NS3_VERSION:-3.44.post0}"
read -r -a seeds <<<"${SEEDS:-1 2 3}"

# shellcheck source=bench/ns3/ns3.sh
source "$here/ns3.sh"
ns3_setup
exe="$(ns3_compile tcp_bulk)"
squall="$(squall_binary)"

# --- runs ----------------------------------------------------------------------
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "ns-3: ns3 wheel $("$venv/bin/python" -m pip show ns3 | sed -n 's/^Version: //p') (lib$lib_tag-*.so), $(g++ --version | head -1)"
echo "squall: $squall, commit $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet HEAD -- crates 2>/dev/null || echo ' + uncommitted changes'), $(rustc --version)"
echo
for seed in "${seeds[@]}"; do
    "$exe" --seed="$seed" >"$out/ns3-$seed.txt"
    head -1 "$out/ns3-$seed.txt"
    "$squall" bench tcp --runs 1 --seed "$seed" --json "$out/squall-$seed.json" >"$out/squall-$seed.txt"
    head -1 "$out/squall-$seed.txt"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo

"$venv/bin/python" - "$out" "${seeds[@]}" <<'EOF'
import json, math, statistics, sys

out, seeds = sys.argv[1], sys.argv[2:]
ns3, sq = [], []
for s in seeds:
    line = next(l for l in open(f"{out}/ns3-{s}.txt") if l.startswith("RESULT "))
    ns3.append({k: float(v) for k, v in (kv.split("=") for kv in line.split()[1:] if not kv.startswith("sim="))})
    j = json.load(open(f"{out}/squall-{s}.json"))
    r = j["runs"][0]
    r["peak_rss_kb"] = j["peak_rss_kb"] or float("nan")
    r["cpu_seconds"] = r["cpu_seconds"] or -1
    sq.append(r)

med = statistics.median
def summary(name, runs):
    rates = [r["segments_per_wall_second"] for r in runs]
    cpu = [r["segments"] / r["cpu_seconds"] for r in runs if r.get("cpu_seconds", -1) and r["cpu_seconds"] > 0]
    print(f"{name:<7} {med(rates):>12,.0f} {med(r['wall_seconds'] for r in runs):>8.3f} "
          f"{med(cpu) if cpu else float('nan'):>14,.0f} {med(r['segments'] for r in runs):>9,.0f} "
          f"{med(r['goodput_bps'] for r in runs) / 1e6:>7.3f} {med(r['peak_rss_kb'] for r in runs) / 1024:>8.1f}   "
          f"{', '.join(f'{x:,.0f}' for x in rates)}")
    return med(rates), (med(cpu) if cpu else float("nan"))

print(f"medians of {len(seeds)} runs (seeds {' '.join(seeds)}):")
print(f"{'':<7} {'segments/s':>12} {'wall s':>8} {'segments/CPU s':>14} {'segments':>9} {'Mbit/s':>7} {'RSS MiB':>8}   segments/s per run")
n, n_cpu = summary("ns-3", ns3)
s, s_cpu = summary("squall", sq)
print(f"ratio squall / ns-3: {s / n:.1f}x per wall-clock second, {s_cpu / n_cpu:.1f}x per CPU second")
print(f"target (squall >= 800,000 delivered segments per wall-clock second): {'met' if s >= 800_000 else 'NOT met'}")

# Mathis et al. 1997: goodput = MSS/RTT * sqrt(3 / (2 b p)), b segments per
# ACK. RTT: 60 ms of propagation + 1.2 ms serialising a 1500-byte packet at
# 10 Mbit/s (the queue stays short: the mean window is below the 50-packet
# path).
mss, rtt, p = 1460 * 8, 0.060 + 1500 * 8 / 10e6, 0.001
for b, what in ((1, "an ACK per segment, 1.22/sqrt(p)"), (2, "delayed ACKs, b = 2, 0.87/sqrt(p)")):
    print(f"Mathis ({what}): {mss / rtt * math.sqrt(3 / (2 * b * p)) / 1e6:.2f} Mbit/s")
EOF
