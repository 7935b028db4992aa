#!/usr/bin/env bash
# Speed before and after a change, side by side in one run (issue 29's
# "do not slow down"): `cargo bench -p squall-link` and `squall bench tcp`,
# alternating before/after so that a drift of the machine hits both alike.
#
#   scripts/bench-before-after.sh BEFORE_COMMIT [ROUNDS]
#
# BEFORE_COMMIT (e.g. 88e0c71) is exported with `git archive` into
# /tmp/squall-before-COMMIT and built there with a target/ hard-linked
# from this tree's (only what differs is rebuilt); the working tree is
# "after". ROUNDS (default 3) rounds each run both sides once, before
# first in odd rounds and after first in even ones. Outputs, one file a
# side and round, go to /tmp/bench-before-after/: link-{before,after}-R.txt
# (criterion's report lines: each benchmark's time interval) and
# tcp-{before,after}-R.txt (`squall bench tcp`'s table). Run it on an idle
# machine; it takes about 10 minutes a round on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
before=$(git rev-parse --short "$1")
rounds=${2:-3}
after_dir=$(pwd)
before_dir=/tmp/squall-before-$before
out=/tmp/bench-before-after
mkdir -p "$out"
if [ ! -d "$before_dir" ]; then
    mkdir -p "$before_dir"
    git archive "$before" | tar -x -C "$before_dir"
    if [ -d target ]; then
        # Hard links save the copy, but cargo rewrites some files in place
        # (build-script outputs, fingerprints): those directories are
        # copied for real, or the before tree's build would write into
        # this tree's (a squall built in the exported tree, where git
        # finds no repository, left SQUALL_COMMIT=unknown in this tree's
        # build-script output, and `squall --version` said so).
        cp -al target "$before_dir/target"
        for d in "$before_dir"/target/release "$before_dir"/target/debug; do
            [ -d "$d" ] || continue
            for sub in .fingerprint build; do
                [ -d "$d/$sub" ] || continue
                cp -a "$d/$sub" "$d/$sub.copy" && rm -rf "${d:?}/$sub" && mv "$d/$sub.copy" "$d/$sub"
            done
        done
    fi
fi
for dir in "$before_dir" "$after_dir"; do
    (cd "$dir" && cargo build --release -p squall && cargo bench -p squall-link --no-run)
done
run_side() { # side dir round
    local side=$1 dir=$2 r=$3
    echo "round $r: $side" >&2
    (cd "$dir" && cargo bench -p squall-link 2>/dev/null | grep -E '^[a-z].*|time:' >"$out/link-$side-$r.txt")
    (cd "$dir" && target/release/squall bench tcp >"$out/tcp-$side-$r.txt")
}
for r in $(seq 1 "$rounds"); do
    if [ $((r % 2)) -eq 1 ]; then
        run_side before "$before_dir" "$r"
        run_side after "$after_dir" "$r"
    else
        run_side after "$after_dir" "$r"
        run_side before "$before_dir" "$r"
    fi
done
echo "squall bench tcp, each round (before, then after):"
for r in $(seq 1 "$rounds"); do
    echo "--- round $r"
    paste -d'|' "$out/tcp-before-$r.txt" "$out/tcp-after-$r.txt" | sed 's/|/    ||    /'
done
echo "cargo bench -p squall-link: time intervals per benchmark in $out/link-*.txt"
