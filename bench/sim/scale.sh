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

rows = []
for n in counts:
    u = json.load(open(f"{work}/usage-{n}.json"))
    acc = []
    stages(json.load(open(f"{work}/out-{n}/summary.json"))["runs"], acc)
    delivered = next(s["delivered"] for s in acc if s["name"] == "down")
    entered = sum(s["entered"] for s in acc)
    cpu = u["user_seconds"] + u["system_seconds"]
    rows.append((n, u["wall_seconds"], cpu, u["max_rss_kb"], delivered, entered))
base = rows[0]
print(f"{'flows':>7} {'wall s':>8} {'CPU s':>7} {'RSS MB':>8} {'KB/flow':>8} {'delivered':>9} {'entered':>8}"
      f" {'wall us/dlv':>11} {'ratio':>6} {'CPU us/dlv':>10} {'ratio':>6} {'CPU us/ent':>10} {'ratio':>6}")
for n, wall, cpu, rss, dlv, ent in rows:
    print(f"{n:>7} {wall:>8.3f} {cpu:>7.3f} {rss/1024:>8.1f} {rss/n:>8.1f} {dlv:>9} {ent:>8}"
          f" {wall/dlv*1e6:>11.3f} {wall/dlv/(base[1]/base[4]):>6.2f}"
          f" {cpu/dlv*1e6:>10.3f} {cpu/dlv/(base[2]/base[4]):>6.2f}"
          f" {cpu/ent*1e6:>10.3f} {cpu/ent/(base[2]/base[5]):>6.2f}")
EOF
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
