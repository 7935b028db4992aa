#!/usr/bin/env bash
# bench/sim/scale.sh's measure in instructions instead of seconds (issue
# 35): the same runs (bench/sim/100000-flows.toml with `count` set to each
# N, 3 s and 1 us of simulated time) under valgrind's callgrind with its
# cache simulator, whose counts do not depend on the machine's load. Per
# N: instructions (Ir) and simulated L1 data read misses (D1mr) of the
# whole process; Ir per packet delivered by the bottleneck and per packet
# that entered any stage; the marginal Ir and D1mr per packet handled,
# (3 s - 1 us) / (entered 3 s - entered 1 us), the event loop's cost per
# packet; each as a ratio to the first N. The last column, "scenario",
# is the ratio of packets handled per packet delivered to the first N's:
# what the cost per delivered packet would grow by if every packet
# handled cost the same whatever N (the scenario's part, not squall's).
#
#   bash bench/sim/scale-instructions.sh                  # 10 1000 10000
#   SQUALL=/tmp/squall-before bash bench/sim/scale-instructions.sh 10 1000 100000
#
# Slow: callgrind runs ~50x slower than the process alone (100 000 flows:
# ~8 min).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
squall="${SQUALL:-$here/../../target/release/squall}"
[[ -x "$squall" ]] || { echo "no squall binary at $squall (cargo build --release -p squall, or SQUALL=path)" >&2; exit 1; }
command -v valgrind > /dev/null || { echo "valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
counts=("$@")
[[ ${#counts[@]} -gt 0 ]] || counts=(10 1000 10000)
work="$(mktemp -d /tmp/squall-scale-ir-XXXXXX)"
trap 'rm -rf "$work"' EXIT

for n in "${counts[@]}"; do
    sed "s/^count = 100000$/count = $n/" "$here/100000-flows.toml" > "$work/flows-$n.toml"
    sed 's/^duration = "3 s"$/duration = "1 us"/' "$work/flows-$n.toml" > "$work/flows0-$n.toml"
    for tag in "" 0; do
        valgrind --tool=callgrind --cache-sim=yes --callgrind-out-file="$work/cg$tag-$n.out" \
            "$squall" sim "$work/flows$tag-$n.toml" --no-pcap --no-events --jobs 1 --out "$work/out$tag-$n" \
            > /dev/null 2> "$work/cg$tag-$n.log"
    done
done
python3 - "$work" "${counts[@]}" <<'PY'
import json, re, sys
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
    # "Collected : Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw"
    log = open(f"{work}/cg{tag}-{n}.log").read()
    ev = [int(x) for x in re.search(r"Collected : ([\d ]+)", log).group(1).split()]
    acc = []
    stages(json.load(open(f"{work}/out{tag}-{n}/summary.json"))["runs"], acc)
    delivered = next(s["delivered"] for s in acc if s["name"] == "down")
    return ev[0], ev[4], delivered, sum(s["entered"] for s in acc)

rows = []
for n in counts:
    ir, d1, dlv, ent = run(n, "")
    ir0, d10, _, ent0 = run(n, "0")
    rows.append((n, ir, ir0, dlv, ent, (ir - ir0) / max(ent - ent0, 1), (d1 - d10) / max(ent - ent0, 1)))
b = rows[0]
print(f"{'flows':>7} {'Ir 3 s':>14} {'Ir 1 us':>14} {'delivered':>9} {'entered':>8} {'Ir/dlv':>8} {'ratio':>6}"
      f" {'Ir/ent':>7} {'ratio':>6} {'marg Ir/ent':>11} {'ratio':>6} {'marg D1mr/ent':>13} {'ratio':>6} {'scenario':>8}")
for n, ir, ir0, dlv, ent, m, md in rows:
    print(f"{n:>7} {ir:>14,} {ir0:>14,} {dlv:>9} {ent:>8} {ir/dlv:>8.0f} {ir/dlv/(b[1]/b[3]):>6.2f}"
          f" {ir/ent:>7.0f} {ir/ent/(b[1]/b[4]):>6.2f} {m:>11.0f} {m/b[5]:>6.2f} {md:>13.2f} {md/b[6]:>6.2f}"
          f" {(ent/dlv)/(b[4]/b[3]):>8.2f}")
PY
