#!/usr/bin/env bash
# The simulator's cost per packet from 10 to 100 000 flows (issue 35), on
# one topology for every count: bench/sim/100000-flows.toml (two senders
# -> r -> 100 Mbit/s, 20 ms bottleneck -> r2 -> b, 3 s) with its `count`
# set to each N. Per N: the whole process's wall and CPU time and peak RSS
# (`squall bench measure`), the packets the bottleneck delivered and the
# packets that entered any stage, the costs per packet and each one's
# ratio to the first N's.
#
#   bash bench/sim/scale.sh                      # 10 100 1000 10000 100000
#   SQUALL=target/release/squall bash bench/sim/scale.sh 10 1000
#
# A bottleneck of 100 Mbit/s delivers ~26 000 packets in 3 s whatever N:
# past ~1 000 flows most of the work is per flow (handshakes, SYNs lost in
# the full queue and sent again), so the cost per *delivered* packet grows
# with N while the cost per packet *handled* (entered a stage) shows what
# the engine costs per event.
#
# Each N also runs for 1 us of simulated time: the process, the set-up of
# every flow, its start (the first SYN) and its results, and no other
# packet. The marginal CPU time per packet handled, (CPU 3 s - CPU 1 us) /
# (entered 3 s - entered 1 us), leaves that per-flow part out: it is the
# event loop's cost per packet, the figure that should stay flat in N.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
squall="${SQUALL:-$here/../../target/release/squall}"
[[ -x "$squall" ]] || { echo "no squall binary at $squall (cargo build --release -p squall, or SQUALL=path)" >&2; exit 1; }
counts=("$@")
[[ ${#counts[@]} -gt 0 ]] || counts=(10 100 1000 10000 100000)
work="$(mktemp -d /tmp/squall-scale-XXXXXX)"
trap 'rm -rf "$work"' EXIT

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for n in "${counts[@]}"; do
    sed "s/^count = 100000$/count = $n/" "$here/100000-flows.toml" > "$work/flows-$n.toml"
    "$squall" bench measure --stdout "$work/stdout-$n.txt" -- \
        "$squall" sim "$work/flows-$n.toml" --no-pcap --no-events --jobs 1 --out "$work/out-$n" > "$work/usage-$n.json"
    sed 's/^duration = "3 s"$/duration = "1 us"/' "$work/flows-$n.toml" > "$work/flows0-$n.toml"
    "$squall" bench measure --stdout "$work/stdout0-$n.txt" -- \
        "$squall" sim "$work/flows0-$n.toml" --no-pcap --no-events --jobs 1 --out "$work/out0-$n" > "$work/usage0-$n.json"
done
python3 - "$work" "${counts[@]}" <<'EOF'
import json, sys
work, counts = sys.argv[1], [int(n) for n in sys.argv[2:]]

def stages(o, acc):
    if isinstance(o, dict):
        if {"name", "entered", "delivered"} <= o.keys():
            acc.append(o)
            return
        for v in o.values():
            stages(v, acc)
    elif isinstance(o, list):
        for v in o:
            stages(v, acc)

def run(n, tag):
    u = json.load(open(f"{work}/usage{tag}-{n}.json"))
    acc = []
    stages(json.load(open(f"{work}/out{tag}-{n}/summary.json"))["runs"], acc)
    delivered = next(s["delivered"] for s in acc if s["name"] == "down")
    entered = sum(s["entered"] for s in acc)
    return u, u["user_seconds"] + u["system_seconds"], delivered, entered

rows, marginal = [], []
for n in counts:
    u, cpu, delivered, entered = run(n, "")
    rows.append((n, u["wall_seconds"], cpu, u["max_rss_kb"], delivered, entered))
    _, cpu0, _, entered0 = run(n, "0")
    marginal.append((n, cpu0, entered0, (cpu - cpu0) / max(entered - entered0, 1)))
base = rows[0]
print(f"{'flows':>7} {'wall s':>8} {'CPU s':>7} {'RSS MB':>8} {'KB/flow':>8} {'delivered':>9} {'entered':>8}"
      f" {'wall us/dlv':>11} {'ratio':>6} {'CPU us/dlv':>10} {'ratio':>6} {'CPU us/ent':>10} {'ratio':>6}")
for n, wall, cpu, rss, dlv, ent in rows:
    print(f"{n:>7} {wall:>8.3f} {cpu:>7.3f} {rss/1024:>8.1f} {rss/n:>8.1f} {dlv:>9} {ent:>8}"
          f" {wall/dlv*1e6:>11.3f} {wall/dlv/(base[1]/base[4]):>6.2f}"
          f" {cpu/dlv*1e6:>10.3f} {cpu/dlv/(base[2]/base[4]):>6.2f}"
          f" {cpu/ent*1e6:>10.3f} {cpu/ent/(base[2]/base[5]):>6.2f}")
print()
print(f"{'flows':>7} {'CPU 1us s':>9} {'entered 1us':>11} {'set-up us/flow':>14} {'marginal CPU us/ent':>19} {'ratio':>6}")
for n, cpu0, ent0, per in marginal:
    print(f"{n:>7} {cpu0:>9.3f} {ent0:>11} {cpu0/n*1e6:>14.2f} {per*1e6:>19.3f} {per/marginal[0][3]:>6.2f}")
EOF
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
