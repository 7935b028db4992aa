#!/usr/bin/env bash
# The simulator/emulator parity grid of issue 14: `squall compare` over
# 10 Mbit/s links with RTT 20, 60 and 200 ms, random loss 0.1 %, 1 % and
# 2 % on the data direction, reno and cubic (the `linux` profile in the
# simulator, real Linux TCP in the emulator), a 100-packet tail-drop queue,
# REPS replications per point. Writes OUT/grid.md (per point: the sim and
# emu mean ± 95 % CI half-width and the relative difference (emu − sim)/emu
# of goodput, retransmitted segments (% of data segments), mean RTT and
# elapsed time; a point passes when all four are within 10 %; how many
# emulated runs kept timing, as `squall emu` flags it) and
# OUT/POINT/ (each point's compare report).
#
# Congestion-only points (issue 31): LOSSES=0 and a queue shallower or
# deeper than the path's bandwidth-delay product, e.g.
#   RATES="10 50" RTTS="20 60" LOSSES=0 QUEUES="0.5bdp 2bdp"
#
# Usage: sudo scripts/parity-grid.sh OUT
#
# Environment (all optional):
#   SQUALL  the squall binary (default: target/release/squall); give a copy
#           so that rebuilding does not change it under a running grid
#   CCS     congestion controls (default: "reno cubic"; "bbr" runs the
#           simulator's BBR against the kernel's bbr)
#   RATES   bottleneck rates, Mbit/s (default: "10")
#   RTTS    round-trip propagation delays, ms (default: "20 60 200")
#   LOSSES  packet loss on the data direction, % (default: "0.1 1 2"; 0 for
#           none: the tail-drop queue is then the only loss)
#   QUEUES  tail-drop queue limits (default: "100"): packets, or "Fbdp" for
#           F times the bandwidth-delay product in 1500-byte packets
#           (rounded up), e.g. "0.5bdp 2bdp"
#   REPS    replications per point and engine (default: 5)
#   SIM_REPS the simulator's replications per point, if more than REPS
#           (squall compare --sim-replications; default: REPS): its runs
#           are cheap, and the hosts' clock phases and random losses vary
#           from run to run
#   SIZES   transfer size per point, "RTT/LOSS=SIZE;…" (default below:
#           each transfer lasts ~15–40 s at the expected goodput, so that
#           slow start does not dominate the mean); a point not listed
#           gets SIZE, or with LOSS 0 the bytes of 25 s at the rate
#   SCENARIO the base scenario (default: scenarios/emu/compare-bulk.toml)
#   SEED    seed of the first replication (default: the scenario's)
#   REALTIME the emulator data plane's SCHED_FIFO priority (squall compare
#           --realtime; default: none): keeps its timing on a loaded machine
#           where the data plane mostly sleeps (10 Mbit/s). Not at 50 Mbit/s
#           on two CPUs: a data plane that spins most of each second is
#           stopped by the kernel's RT throttling (kernel.sched_rt_runtime_us,
#           950 ms of each 1 s) for ~50 ms every second (docs/validation.md,
#           "Congestion-only points again")
#   LATE    the emulator's late threshold (squall compare --late-threshold;
#           default: squall emu's, 1 ms): a delivery later than this flags
#           the run, which the "emu runs on time" column counts. At 10
#           Mbit/s 0.8 ms of lateness can end cubic's HyStart ACK train
#           (docs/validation.md, "Cubic 200 ms 0.1 %: one late ACK")
#   LOCK    a lock file taken around each point's `squall compare` with
#           flock(1) (default: none), e.g. /tmp/squall-emu.lock: other
#           emulations wait for one point, not for the whole grid
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
RATES=${RATES:-"10"}
RTTS=${RTTS:-"20 60 200"}
LOSSES=${LOSSES:-"0.1 1 2"}
QUEUES=${QUEUES:-"100"}
REPS=${REPS:-5}
SIZE=${SIZE:-"10 MB"}
SIZES=${SIZES:-"20/0.1=20 MB;20/1=10 MB;20/2=6 MB;60/0.1=15 MB;60/1=5 MB;60/2=4 MB;200/0.1=20 MB;200/1=6 MB;200/2=3 MB"}
SCENARIO=$(realpath -m "${SCENARIO:-$here/scenarios/emu/compare-bulk.toml}")
TOLERANCE=0.10

[ -x "$SQUALL" ] || { echo "$0: no squall binary at $SQUALL (build it or set SQUALL)" >&2; exit 2; }
mkdir -p "$out"

# The transfer size of point RTT/LOSS at RATE Mbit/s.
size_of() {
    local key=$1 rate=$2 loss=$3 entry
    IFS=';' read -ra entries <<<"$SIZES"
    for entry in "${entries[@]}"; do
        if [ "${entry%%=*}" = "$key" ]; then
            echo "${entry#*=}"
            return
        fi
    done
    if awk -v l="$loss" 'BEGIN { exit !(l == 0) }'; then
        awk -v r="$rate" 'BEGIN { printf "%g MB\n", r * 25 / 8 }'
    else
        echo "$SIZE"
    fi
}

# A queue limit in packets: N, or F times the BDP of RATE Mbit/s and RTT ms
# in 1500-byte packets, rounded up.
queue_of() {
    local spec=$1 rate=$2 rtt=$3
    case "$spec" in
        *bdp) awk -v f="${spec%bdp}" -v r="$rate" -v t="$rtt" \
            'BEGIN { q = f * r * 1e6 * t / 1e3 / 12000; n = int(q); if (n < q) n++; print n }' ;;
        *[!0-9]* | "") echo "$0: QUEUES: \"$spec\" is neither packets nor Fbdp" >&2; exit 2 ;;
        *) echo "$spec" ;;
    esac
}

# Bytes of SIZE ("20 MB", "500 kB", "1.5 GB", "1000 B").
bytes_of() {
    awk -v s="$1" 'BEGIN {
        n = split(s, w, " "); m = (n > 1) ? w[2] : "B"
        f = (m == "GB") ? 1e9 : (m == "MB") ? 1e6 : (m == "kB") ? 1e3 : 1
        printf "%.0f\n", w[1] * f }'
}

# Each run writes two captures (fixed.pcap, mobile.pcap) that carry the
# transfer once each, in both engines: about 2 x SIZE per run (a 50
# Mbit/s point of 10 + 10 runs wrote 4.5 GB). A point is not started when
# the disk has less than that free: a full disk stops every program that
# writes there, a shell's included.
runs_per_point=$((REPS + ${SIM_REPS:-$REPS}))
check_space() {
    local size=$1 dir=$2 need free
    need=$(awk -v b="$(bytes_of "$size")" -v r="$runs_per_point" 'BEGIN { printf "%.0f", 2 * b * r }')
    free=$(df -Pk "$out" | awk 'NR == 2 { printf "%.0f", $4 * 1024 }')
    if [ "$free" -lt "$need" ]; then
        echo "$0: $dir needs about $(awk -v n="$need" 'BEGIN { printf "%.1f", n / 1e9 }') GB for its captures (2 x $size x $runs_per_point runs), and $out's disk has $(awk -v n="$free" 'BEGIN { printf "%.1f", n / 1e9 }') GB free: stopping here (free space, or set fewer REPS)" >&2
        exit 1
    fi
}

log="$out/commands.txt"
: >"$log"
rows="$out/rows.tsv"
: >"$rows"
for cc in $CCS; do
  for rate in $RATES; do
    for rtt in $RTTS; do
        for loss in $LOSSES; do
          for qspec in $QUEUES; do
            point="$rtt/$loss"
            size=$(size_of "$point" "$rate" "$loss")
            queue=$(queue_of "$qspec" "$rate" "$rtt")
            dir="$out/${rate}mbit-${rtt}ms-${loss}pct-${queue}p-$cc"
            check_space "$size" "$dir"
            # Half the RTT each way; the duration only bounds a run, the
            # transfer ends it.
            half=$(awk -v r="$rtt" 'BEGIN { printf "%g", r / 2 }')
            cmd=("$SQUALL" compare "$SCENARIO" --replications "$REPS" --out "$dir" --tolerance 10%
                --set "links.0.downlink.0.delay=\"$half ms\"" --set "links.0.uplink.0.delay=\"$half ms\""
                --set "links.0.downlink.0.rate=\"$rate Mbit/s\"" --set "links.0.uplink.0.rate=\"$rate Mbit/s\""
                --set "links.0.downlink.0.queue.packets=$queue"
                --set "links.0.downlink.0.error.packet=\"$loss%\"" --set "workload.tcp.0.cc=$cc"
                --set "workload.tcp.0.app.bulk=\"$size\"" --set "duration=\"900 s\"")
            [ -n "${SIM_REPS:-}" ] && cmd+=(--sim-replications "$SIM_REPS")
            [ -n "${SEED:-}" ] && cmd+=(--seed "$SEED")
            [ -n "${REALTIME:-}" ] && cmd+=(--realtime "$REALTIME")
            [ -n "${LATE:-}" ] && cmd+=(--late-threshold "$LATE")
            [ -n "${LOCK:-}" ] && cmd=(flock "$LOCK" "${cmd[@]}")
            printf '%q ' "${cmd[@]}" >>"$log"
            echo >>"$log"
            echo "== $cc $rate Mbit/s, RTT $rtt ms, loss $loss %, queue $queue packets, $size" >&2
            status=0
            "${cmd[@]}" >"$dir.log" 2>&1 || status=$?
            if [ "$status" -ge 2 ] || [ ! -f "$dir/compare.csv" ]; then
                echo "$0: squall compare failed for $cc $rate Mbit/s $point queue $queue (status $status), see $dir.log" >&2
                printf '%s\t%s\t%s\t%s\t%s\t%s\terror\n' "$cc" "$rate" "$rtt" "$loss" "$queue" "$size" >>"$rows"
                continue
            fi
            # One row: per metric, sim mean, CI half-width, emu mean, CI
            # half-width, relative difference.
            python3 - "$dir/compare.csv" "$cc" "$rate" "$rtt" "$loss" "$queue" "$size" >>"$rows" <<'PY'
import csv, sys
path, *point = sys.argv[1:]
rows = {r["metric"]: r for r in csv.DictReader(open(path))}
cells = list(point)
for metric in ("goodput_bps", "retransmitted_pct", "rtt_mean", "elapsed"):
    r = rows[metric]
    sim, emu = float(r["sim_mean"]), float(r["emu_mean"])
    cells += [str(sim), str(float(r["sim_ci95_high"]) - sim), str(emu),
              str(float(r["emu_ci95_high"]) - emu), r["relative_difference"]]
# The emulated runs that kept timing (no delivery more than 1 ms late;
# result.json's timing.on_time): a late emulator bunches deliveries, and
# the receiver then ACKs several segments at once.
import glob, json, os
runs = [json.load(open(f))["timing"] for f in sorted(glob.glob(os.path.join(os.path.dirname(path), "emu", "rep-*", "result.json")))]
cells.append(f"{sum(1 for t in runs if t['on_time'])}/{len(runs)}")
print("\t".join(cells))
PY
          done
        done
    done
  done
done

# grid.md: one row per point.
{
    echo "# Parity grid: simulator (linux profile) against real Linux TCP"
    echo
    echo "Tail-drop queue, random loss on the data direction (0: none), ${SIM_REPS:-$REPS} replications"
    echo "in the simulator and $REPS in the emulator; each metric's sim and emu mean ± 95 % CI half-width (goodput Mbit/s,"
    echo "retransmitted segments % of data segments, mean RTT ms, elapsed s) and difference"
    echo "(emu − sim)/emu; a point passes when every |difference| ≤ 10 %."
    echo "Commands: commands.txt. squall: $SQUALL ($("$SQUALL" --version 2>/dev/null || echo unknown))."
    echo
    echo "| cc | rate | RTT | loss | queue | transfer | goodput sim / emu (diff) | retransmitted sim / emu (diff) | RTT sim / emu (diff) | elapsed sim / emu (diff) | emu runs on time | verdict |"
    echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    awk -F'\t' -v tol="$TOLERANCE" '
        $7 == "error" { printf "| %s | %s Mbit/s | %s ms | %s %% | %s p | %s | error | error | error | error | | fail |\n", $1, $2, $3, $4, $5, $6; fails++; next }
        {
            line = sprintf("| %s | %s Mbit/s | %s ms | %s %% | %s p | %s", $1, $2, $3, $4, $5, $6)
            verdict = "pass"
            # Columns 7-11 goodput, 12-16 retransmitted, 17-21 RTT, 22-26 elapsed.
            split("1e-6 1 1e3 1", scale, " ")
            split("%.3f %.2f %.1f %.2f", fmt, " ")
            for (m = 0; m < 4; m++) {
                c = 7 + 5 * m
                d = $(c + 4) + 0
                if (d > tol || d < -tol) { verdict = "fail"; bad[m]++ }
                f = fmt[m + 1]
                line = line sprintf(" | " f " ± " f " / " f " ± " f " (%+.1f %%)",
                    $c * scale[m + 1], $(c + 1) * scale[m + 1], $(c + 2) * scale[m + 1], $(c + 3) * scale[m + 1], 100 * d)
            }
            if (verdict == "fail") fails++
            print line " | " $27 " | " verdict " |"
            n++
        }
        END { printf "\n%d points, %d with a metric outside 10 %% (goodput %d, retransmitted %d, RTT %d, elapsed %d).\n", n + 0, fails + 0, bad[0] + 0, bad[1] + 0, bad[2] + 0, bad[3] + 0 }' "$rows"
} >"$out/grid.md"
cat "$out/grid.md"
