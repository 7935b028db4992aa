#!/usr/bin/env bash
# Runs squall's fuzz targets (cargo fuzz, nightly, AddressSanitizer).
#
#   bash fuzz/run.sh smoke               every target for 10 s (CI; the campaigns are in stats.log)
#   bash fuzz/run.sh SECONDS [TARGET..]  the targets (default: all) for SECONDS each
#
# Inputs start from fuzz/corpus (made by fuzz/seed-corpus.sh) and the
# regression corpus; new ones are kept in fuzz/corpus. A crash, a timeout
# (an input taking more than FUZZ_TIMEOUT seconds of wall-clock time,
# default 30: generous, since fuzzers at low priority on a busy machine run
# slowly; inputs take well under a second) or more than 2 GiB of memory
# stops the run with the
# input saved under fuzz/artifacts/TARGET/: copy it into
# fuzz/regressions/TARGET/ once it is fixed. Per target, the CPU time,
# executions, coverage and corpus size are appended to fuzz/stats.log.
set -euo pipefail
cd "$(dirname "$0")"
if ! rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    echo "fuzz: no nightly toolchain (rustup toolchain install nightly); fuzz targets not run"
    # Under CI a smoke run that fuzzes nothing is a failure, not a pass.
    if [ "${CI:-}" = true ]; then
        echo "fuzz: CI=true requires the nightly toolchain" >&2
        exit 1
    fi
    exit 0
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "fuzz: installing cargo-fuzz"
    cargo install cargo-fuzz --locked -q
fi
seconds=${1:-smoke}
[ "$seconds" = smoke ] && seconds=10
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <(cargo +nightly fuzz list)
[ -d corpus ] || bash seed-corpus.sh
cargo +nightly fuzz build -O
failed=()
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t" "regressions/$t"
    dict=()
    case $t in scenario | scenario_sim | set_override | experiment) dict=(-dict=dict/scenario.dict) ;; esac
    log=$(mktemp)
    cpu=$(mktemp)
    if /usr/bin/time -o "$cpu" -f '%U %S' cargo +nightly fuzz run -O "$t" "corpus/$t" "regressions/$t" -- \
        -max_total_time="$seconds" -timeout="${FUZZ_TIMEOUT:-30}" -rss_limit_mb=2048 -malloc_limit_mb=2048 -max_len=65536 \
        -print_final_stats=1 "${dict[@]}" >"$log" 2>&1; then
        status=ok
    else
        status=FAILED
        failed+=("$t")
        tail -40 "$log"
    fi
    execs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo 0)
    cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+' || echo 0)
    corpus=$(find "corpus/$t" -type f | wc -l)
    cpu_s=$(awk '/^[0-9.]+ [0-9.]+$/ { printf "%.0f", $1 + $2 }' "$cpu")
    line="$(date -u +%FT%TZ) $t ${seconds}s $status cpu=${cpu_s:-?}s executions=$execs cov=$cov corpus=$corpus"
    echo "fuzz: $line"
    echo "$line" >>stats.log
    rm -f "$log" "$cpu"
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: ${#failed[@]} target(s) failed: ${failed[*]} (inputs under fuzz/artifacts/)"
    exit 1
fi
echo "fuzz: all ${#targets[@]} targets ran clean"
