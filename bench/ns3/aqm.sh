#!/usr/bin/env bash
# squall's queue disciplines against ns-3 3.44's, side by side: four bulk
# TCP NewReno flows over a 10 Mbit/s, 20 ms bottleneck (aqm.toml in squall,
# aqm_bulk.cc in ns-3; each file says how the two are matched) through PIE,
# CoDel, FQ-CoDel (1000-packet limit) and a 100-packet FIFO, for 125 s.
# For each queue and each simulator, the median over seeds of, in the
# run's second minute (65 s to 125 s, after the flows' start-up): the
# queue's drops per minute, the 50th and 90th percentiles (nearest rank)
# of the sojourn time of the packets that left the queue, and the
# senders' retransmissions over the whole run.
#
#   bash bench/ns3/aqm.sh
#
# Sojourn: ns-3's QueueDisc "SojournTime" trace (enqueue to dequeue);
# squall's events.csv, enqueue to tx_start of the bottleneck stage. ns-3's
# device holds one more packet below the queue disc (cut to one packet in
# aqm_bulk.cc), so its sojourns end up to one packet's transmission time
# (1.2 ms) earlier.
#
# Environment:
#   SEEDS="1 2 3"        seeds (one run of each simulator and queue per seed)
#   QUEUES="pie codel fq_codel fifo"
#   NS3_ARGS="..."       extra arguments for aqm_bulk (e.g. --ns3-pie)
#   SQUALL=path          a squall binary (default: target/release/squall,
#                        built if missing)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="$here/.venv"
build="$here/build"
read -r -a seeds <<<"${SEEDS:-1 2 3}"
read -r -a queues <<<"${QUEUES:-pie codel fq_codel fifo}"
read -r -a ns3_args <<<"${NS3_ARGS:-}"

log() { printf '== %s\n' "$*" >&2; }

if ! "$venv/bin/python" -m pip show ns3 >/dev/null 2>&1; then
    log "installing ns3==3.44.post0 into $venv"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps "ns3==3.44.post0"
fi
site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')"
ns3="$site/ns3"
lib_tag="$(basename "$(ls "$ns3"/lib64/libns3.*-core.so | head -1)" | sed -E 's/^lib(ns3\.[0-9.]+)-core\.so$/\1/')"
mkdir -p "$build"
exe="$build/aqm_bulk"
if [[ ! -x "$exe" || "$here/aqm_bulk.cc" -nt "$exe" ]]; then
    log "compiling $exe against $lib_tag"
    g++ -O2 -std=c++20 -Wall \
        -DNS3_BUILD_PROFILE_RELEASE -DNS3_LOG_ENABLE -DNS3_ASSERT_ENABLE \
        -I"$ns3/include" "$here/aqm_bulk.cc" -o "$exe" \
        -L"$ns3/lib64" -Wl,-rpath,"$ns3/lib64" \
        -l"$lib_tag"-applications -l"$lib_tag"-internet \
        -l"$lib_tag"-point-to-point -l"$lib_tag"-traffic-control \
        -l"$lib_tag"-network -l"$lib_tag"-core
fi

squall="${SQUALL:-$root/target/release/squall}"
if [[ ! -x "$squall" ]]; then
    log "building squall (cargo build --release -p squall)"
    (cd "$root" && cargo build --release -p squall)
fi

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "ns-3: ns3 wheel $("$venv/bin/python" -m pip show ns3 | sed -n 's/^Version: //p') (lib$lib_tag-*.so)${NS3_ARGS:+, aqm_bulk $NS3_ARGS}"
echo "squall: $squall, commit $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet HEAD -- crates 2>/dev/null || echo ' + uncommitted changes')"

for q in "${queues[@]}"; do
    case "$q" in
        pie) line='queue = { packets = 1000, pie = {} }'; limit=1000 ;;
        codel) line='queue = { packets = 1000, codel = { target = "5 ms", interval = "100 ms" } }'; limit=1000 ;;
        fq_codel) line='queue = { fq_codel = { packets = 1000 } }'; limit=1000 ;;
        fifo) line='queue = { packets = 100 }'; limit=100 ;;
        *) echo "QUEUES: unknown queue $q (expected pie, codel, fq_codel, fifo)" >&2; exit 2 ;;
    esac
    sed "s|^queue = .*|$line|" "$here/aqm.toml" >"$out/$q.toml"
    for seed in "${seeds[@]}"; do
        "$exe" --queue="$q" --limit="$limit" --seed="$seed" --seconds=125 --warmup=65 "${ns3_args[@]}" >"$out/ns3-$q-$seed.txt"
        "$squall" sim "$out/$q.toml" --seed "$seed" --no-pcap --format json \
            --out "$out/squall-$q-$seed" >"$out/squall-$q-$seed.json" 2>"$out/squall-$q-$seed.err" || { cat "$out/squall-$q-$seed.err" >&2; exit 1; }
    done
done

"$venv/bin/python" - "$out" "${seeds[*]}" "${queues[*]}" <<'PY'
import csv, json, math, statistics, sys

out, seeds, queues = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
WARMUP, END = 65.0, 125.0

def rank(v, q):
    v = sorted(v)
    return v[max(math.ceil(q * len(v)), 1) - 1]

def squall(q, seed):
    enq, soj, drops = {}, [], 0
    with open(f"{out}/squall-{q}-{seed}/rep-0/events.csv") as f:
        for r in csv.DictReader(f):
            if r["stage"] != "bottleneck":
                continue
            t = float(r["time"])
            if r["event"] == "enqueue":
                enq[r["packet"]] = t
            elif r["event"] == "tx_start" and r["frame"] == "0":
                t0 = enq.pop(r["packet"], None)
                if t0 is not None and t >= WARMUP:
                    soj.append(t - t0)
            elif r["event"] == "drop" and t >= WARMUP:
                drops += 1
    run = json.load(open(f"{out}/squall-{q}-{seed}/summary.json"))["runs"][0]
    rexmit = sum(f["sender"]["retransmitted_segments"] for f in run["tcp_flows"])
    return dict(p50=rank(soj, .5) * 1e3, p90=rank(soj, .9) * 1e3,
                drops=drops * 60 / (END - WARMUP), rexmit=rexmit)

def ns3(q, seed):
    line = next(l for l in open(f"{out}/ns3-{q}-{seed}.txt") if l.startswith("RESULT "))
    kv = dict(x.split("=") for x in line.split()[1:])
    return dict(p50=float(kv["sojourn_p50_ms"]), p90=float(kv["sojourn_p90_ms"]),
                drops=float(kv["drops_per_minute"]), rexmit=int(kv["retransmissions"]))

med = statistics.median
print(f"\nmedians over seeds {' '.join(seeds)}; sojourn and drops of the bottleneck queue, from 65 s to 125 s; retransmissions of the four senders over the whole run")
print(f"{'queue':<9} {'sojourn p50 ms':>16} {'sojourn p90 ms':>16} {'drops/min':>13} {'retransmissions':>17}")
print(f"{'':<9} {'ns-3':>7} {'squall':>8} {'ns-3':>7} {'squall':>8} {'ns-3':>6} {'squall':>6} {'ns-3':>8} {'squall':>8}")
for q in queues:
    n = [ns3(q, s) for s in seeds]
    s = [squall(q, s) for s in seeds]
    m = lambda runs, k: med(r[k] for r in runs)
    print(f"{q:<9} {m(n,'p50'):>7.1f} {m(s,'p50'):>8.1f} {m(n,'p90'):>7.1f} {m(s,'p90'):>8.1f} "
          f"{m(n,'drops'):>6.0f} {m(s,'drops'):>6.0f} {m(n,'rexmit'):>8.0f} {m(s,'rexmit'):>8.0f}")
PY
