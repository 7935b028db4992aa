#!/usr/bin/env bash
# Mutation testing with cargo-mutants (https://mutants.rs): small changes
# to the model code that its tests must catch (issue 36, docs/mutants.md).
#
#   scripts/mutants.sh crate CRATE [MINUTES]   every mutant of one crate
#   scripts/mutants.sh file PATH... [--minutes M]  the mutants of some files
#   scripts/mutants.sh diff [BASE]             the mutants on the lines a
#                                              change touches (git diff BASE,
#                                              default HEAD: before a commit)
#
# Each run uses one job and low priority (the machine is shared), a
# per-mutant timeout, and the crate's own tests (--test-workspace=false),
# and writes its outcome to mutants.out/ (caught.txt, missed.txt,
# timeout.txt, unviable.txt). Within MINUTES (default 60) it stops; what
# was not tried is not counted. Record the counts in mutants/RECORD.md.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo-mutants >/dev/null 2>&1 || {
    echo "mutants: cargo-mutants missing: cargo install cargo-mutants --locked" >&2
    exit 2
}
usage() {
    sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}
common=(--jobs 1 --timeout 300 --build-timeout 900 --test-workspace=false --cargo-arg=--release)
run() {
    local minutes=$1
    shift
    # `timeout` ends cargo-mutants (and with it the build it runs) at the
    # budget; what it tried by then is in mutants.out/outcomes.json.
    nice -n 10 timeout --foreground "${minutes}m" cargo mutants "${common[@]}" "$@" || {
        rc=$?
        [ "$rc" = 124 ] && echo "mutants: stopped at the ${minutes}-minute budget" >&2
        # cargo-mutants exits 2 when a mutant was missed, 3 on a timeout.
        return "$rc"
    }
}
[ $# -ge 1 ] || usage
mode=$1
shift
case "$mode" in
crate)
    [ $# -ge 1 ] || usage
    run "${2:-60}" --package "$1"
    ;;
file)
    minutes=60
    files=()
    while [ $# -gt 0 ]; do
        case "$1" in
        --minutes) minutes=$2; shift 2 ;;
        *) files+=(--file "$1"); shift ;;
        esac
    done
    [ ${#files[@]} -gt 0 ] || usage
    run "$minutes" "${files[@]}"
    ;;
diff)
    base=${1:-HEAD}
    diff=$(mktemp)
    trap 'rm -f "$diff"' EXIT
    git diff "$base" -- 'crates/*.rs' >"$diff"
    if [ ! -s "$diff" ]; then
        echo "mutants: no Rust change against $base"
        exit 0
    fi
    run 60 --in-diff "$diff"
    ;;
*) usage ;;
esac
