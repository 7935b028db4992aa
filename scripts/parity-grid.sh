#!/usr/bin/env bash
# The simulator/emulator parity grid of issue 14: `squall compare` over
# 10 Mbit/s links with RTT 20, 60 and 200 ms, random loss 0.1 %, 1 % and
# 2 % on the data direction, reno and cubic (the `linux` profile in the
# simulator, real Linux TCP in the emulator), a 100-packet tail-drop queue,
# REPS replications per point. Writes OUT/grid.md (point, sim and emu
# goodput mean ± 95 % CI half-width, relative difference (emu − sim)/emu,
# pass/fail at 10 %) and OUT/RTT-LOSS-CC/ (each point's compare report).
#
# Usage: sudo scripts/parity-grid.sh OUT
#
# Environment (all optional):
#   SQUALL  the squall binary (default: target/release/squall); give a copy
#           so that rebuilding does not change it under a running grid
#   CCS     congestion controls (default: "reno cubic"; "bbr" runs the
#           simulator's BBR against the kernel's bbr)
#   RTTS    round-trip propagation delays, ms (default: "20 60 200")
#   LOSSES  packet loss on the data direction, % (default: "0.1 1 2")
#   REPS    replications per point and engine (default: 5)
#   SIZES   transfer size per point, "RTT/LOSS=SIZE;…" (default below:
#           each transfer lasts ~15–40 s at the expected goodput, so that
#           slow start does not dominate the mean); a point not listed
#           gets SIZE (default "10 MB")
#   SCENARIO the base scenario (default: scenarios/emu/compare-bulk.toml)
#   SEED    seed of the first replication (default: the scenario's)
#
# Example:
#   cp target/release/squall /tmp/squall-grid
#   sudo SQUALL=/tmp/squall-grid REPS=5 scripts/parity-grid.sh /tmp/grid
set -euo pipefail

if [ $# -ne 1 ]; then
    echo "usage: $0 OUT (an output directory)" >&2
    exit 2
fi
here=$(cd "$(dirname "$0")/.." && pwd)
out=$(realpath -m "$1")
SQUALL=$(realpath -m "${SQUALL:-$here/target/release/squall}")
CCS=${CCS:-"reno cubic"}
RTTS=${RTTS:-"20 60 200"}
LOSSES=${LOSSES:-"0.1 1 2"}
REPS=${REPS:-5}
SIZE=${SIZE:-"10 MB"}
SIZES=${SIZES:-"20/0.1=20 MB;20/1=10 MB;20/2=6 MB;60/0.1=15 MB;60/1=5 MB;60/2=4 MB;200/0.1=20 MB;200/1=6 MB;200/2=3 MB"}
SCENARIO=$(realpath -m "${SCENARIO:-$here/scenarios/emu/compare-bulk.toml}")
TOLERANCE=0.10

[ -x "$SQUALL" ] || { echo "$0: no squall binary at $SQUALL (build it or set SQUALL)" >&2; exit 2; }
mkdir -p "$out"

# The transfer size of point RTT/LOSS.
size_of() {
    local key=$1 entry
    IFS=';' read -ra entries <<<"$SIZES"
    for entry in "${entries[@]}"; do
        if [ "${entry%%=*}" = "$key" ]; then
            echo "${entry#*=}"
            return
        fi
    done
    echo "$SIZE"
}

log="$out/commands.txt"
: >"$log"
rows="$out/rows.tsv"
: >"$rows"
for cc in $CCS; do
    for rtt in $RTTS; do
        for loss in $LOSSES; do
            point="$rtt/$loss"
            size=$(size_of "$point")
            dir="$out/${rtt}ms-${loss}pct-$cc"
            # Half the RTT each way; the duration only bounds a run, the
            # transfer ends it.
            half=$(awk -v r="$rtt" 'BEGIN { printf "%g", r / 2 }')
            cmd=("$SQUALL" compare "$SCENARIO" --replications "$REPS" --out "$dir" --tolerance 10%
                --set "links.0.downlink.0.delay=\"$half ms\"" --set "links.0.uplink.0.delay=\"$half ms\""
                --set "links.0.downlink.0.error.packet=\"$loss%\"" --set "workload.tcp.0.cc=$cc"
                --set "workload.tcp.0.app.bulk=\"$size\"" --set "duration=\"900 s\"")
            [ -n "${SEED:-}" ] && cmd+=(--seed "$SEED")
            printf '%q ' "${cmd[@]}" >>"$log"
            echo >>"$log"
            echo "== $cc RTT $rtt ms, loss $loss %, $size" >&2
            status=0
            "${cmd[@]}" >"$dir.log" 2>&1 || status=$?
            if [ "$status" -ge 2 ] || [ ! -f "$dir/compare.csv" ]; then
                echo "$0: squall compare failed for $cc $point (status $status), see $dir.log" >&2
                printf '%s\t%s\t%s\t%s\terror\n' "$cc" "$rtt" "$loss" "$size" >>"$rows"
                continue
            fi
            # The goodput row: sim mean, CI, emu mean, CI, relative difference.
            python3 - "$dir/compare.csv" "$cc" "$rtt" "$loss" "$size" >>"$rows" <<'PY'
import csv, sys
path, cc, rtt, loss, size = sys.argv[1:]
for r in csv.DictReader(open(path)):
    if r["metric"] == "goodput_bps":
        sim, emu = float(r["sim_mean"]), float(r["emu_mean"])
        print("\t".join([cc, rtt, loss, size, str(sim), str(float(r["sim_ci95_high"]) - sim), str(emu),
                         str(float(r["emu_ci95_high"]) - emu), r["relative_difference"]]))
PY
        done
    done
done

# grid.md: one row per point.
{
    echo "# Parity grid: simulator (linux profile) against real Linux TCP"
    echo
    echo "10 Mbit/s, 100-packet tail-drop queue, random loss on the data direction,"
    echo "$REPS replications per engine; goodput mean ± 95 % CI half-width, Mbit/s;"
    echo "difference = (emu − sim)/emu; pass when |difference| ≤ 10 %."
    echo "Commands: commands.txt. squall: $SQUALL ($("$SQUALL" --version 2>/dev/null || echo unknown))."
    echo
    echo "| cc | RTT | loss | transfer | sim goodput | emu goodput | difference | verdict |"
    echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
    awk -F'\t' -v tol="$TOLERANCE" '
        $5 == "error" { printf "| %s | %s ms | %s %% | %s | error | error | | fail |\n", $1, $2, $3, $4; fails++; next }
        {
            d = $9 + 0
            verdict = (d <= tol && d >= -tol) ? "pass" : "fail"
            if (verdict == "fail") fails++
            printf "| %s | %s ms | %s %% | %s | %.3f ± %.3f | %.3f ± %.3f | %+.1f %% | %s |\n",
                $1, $2, $3, $4, $5 / 1e6, $6 / 1e6, $7 / 1e6, $8 / 1e6, 100 * d, verdict
            n++
        }
        END { printf "\n%d points, %d outside 10 %%.\n", n + 0, fails + 0 }' "$rows"
} >"$out/grid.md"
cat "$out/grid.md"
