#!/usr/bin/env bash
# Speed before and after a change, side by side in one run (issue 29's
# "do not slow down"): `squall bench tcp` and `cargo bench -p squall-link`,
# interleaved so that a drift of the machine hits both sides alike.
#
#   scripts/bench-before-after.sh BEFORE_COMMIT [LINK_ROUNDS [TCP_ROUNDS]]
#
# BEFORE_COMMIT (e.g. 88e0c71) is exported with `git archive` into
# /tmp/squall-before-COMMIT and built there with its own target directory;
# the working tree is "after". `squall bench tcp --runs 5` runs TCP_ROUNDS
# times a side (default 100; 0.2 s each), before and after alternating in
# each round; the link model's criterion benchmarks run LINK_ROUNDS rounds
# (default 4; about 5 minutes a round on 2 cores). Each invocation takes
# /tmp/squall-cpu.lock exclusively, so builds and runs that take it shared
# do not overlap a measurement. Prints, per benchmark, the median of the
# per-round ratios after/before (> 1: after is faster) and their quartiles.
# Raw figures: /tmp/bench-before-after/{tcp,link}.tsv.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
before=$(git rev-parse --short "$1")
link_rounds=${2:-4}
tcp_rounds=${3:-100}
after_dir=$(pwd)
before_dir=/tmp/squall-before-$before
out=/tmp/bench-before-after
lock=/tmp/squall-cpu.lock
mkdir -p "$out"
if [ ! -d "$before_dir" ]; then
    mkdir -p "$before_dir"
    git archive "$before" | tar -x -C "$before_dir"
fi
# Each side's binaries, copied out of its target directory: the squall
# binary and the three criterion benchmarks of squall-link.
for side in before after; do
    dir=$before_dir
    [ "$side" = after ] && dir=$after_dir
    mkdir -p "$out/$side"
    (cd "$dir" && flock -s "$lock" cargo build --release -p squall --bin squall)
    cp "$dir/target/release/squall" "$out/$side/squall"
    (cd "$dir" && flock -s "$lock" cargo bench -p squall-link --no-run --message-format json 2>/dev/null) |
        python3 -c '
import json, sys, shutil
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["kind"] == ["bench"] and m.get("executable"):
        shutil.copy(m["executable"], sys.argv[1] + "/" + m["target"]["name"])
' "$out/$side"
done
# squall bench tcp: segments per wall-clock second, the median of 5 runs.
: >"$out/tcp.tsv"
for r in $(seq 1 "$tcp_rounds"); do
    order="before after"
    [ $((r % 2)) -eq 0 ] && order="after before"
    for side in $order; do
        flock "$lock" "$out/$side/squall" bench tcp --runs 5 --json "$out/tcp.json" >/dev/null
        python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(sys.argv[2], sys.argv[3], "bench_tcp_segments_per_s", d["median_segments_per_wall_second"], sep="\t")
' "$out/tcp.json" "$r" "$side" >>"$out/tcp.tsv"
    done
done
# cargo bench -p squall-link: criterion's middle estimate, as a rate
# (1 / time) so that > 1 means faster as for bench tcp.
: >"$out/link.tsv"
for r in $(seq 1 "$link_rounds"); do
    order="before after"
    [ $((r % 2)) -eq 0 ] && order="after before"
    for side in $order; do
        for b in "$out/$side"/*; do
            [ "$(basename "$b")" = squall ] && continue
            mkdir -p "$out/criterion-$side"
            (cd "$out/criterion-$side" && flock "$lock" "$b" --bench --noplot --warm-up-time 1 --measurement-time 3 2>/dev/null) |
                python3 -c '
import re, sys
unit = {"ps": 1e-12, "ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0}
name = None
for line in sys.stdin:
    s = line.strip()
    m = re.match(r"^(?:(\S+)\s+)?time:\s+\[\S+ \S+ (\S+) (\S+) \S+ \S+\]", s)
    if m:
        print(sys.argv[1], sys.argv[2], m.group(1) or name, 1.0 / (float(m.group(2)) * unit[m.group(3)]), sep="\t")
    elif s and " " not in s:
        name = s
' "$r" "$side" >>"$out/link.tsv"
        done
    done
done
python3 - "$out/tcp.tsv" "$out/link.tsv" <<'EOF'
import collections, statistics as st, sys
print("| benchmark | rounds | after/before, median of per-round ratios | quartiles |")
print("| --- | --- | --- | --- |")
for f in sys.argv[1:]:
    by = collections.defaultdict(dict)
    for line in open(f):
        r, side, name, rate = line.rstrip("\n").split("\t")
        by[(name, r)][side] = float(rate)
    for name in sorted({n for n, _ in by}):
        rs = sorted(v["after"] / v["before"] for (n, _), v in by.items() if n == name and len(v) == 2)
        q = lambda p: rs[min(len(rs) - 1, int(p * len(rs)))]
        print(f"| {name} | {len(rs)} | {st.median(rs):.3f} | {q(0.25):.3f}–{q(0.75):.3f} |")
EOF
