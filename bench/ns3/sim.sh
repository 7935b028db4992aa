#!/usr/bin/env bash
# `squall bench sim` with ns-3 beside it (issue 35): N bulk TCP NewReno
# flows sharing one 100 Mbit/s, 20 ms link with a 1 000-packet queue for 3
# simulated seconds (N = 1: 10 Mbit/s, 30 ms, 0.1% loss, 100 s), each
# simulator run as a child process and measured from outside (whole-process
# wall time and peak RSS); per point both, and ns-3's over squall's.
#
#   bash bench/ns3/sim.sh                     # 1, 10, 100, 1000, 10000 flows
#   bash bench/ns3/sim.sh --flows 1,10,100    # any `squall bench sim` flags
#
# Sets up ns-3 from the PyPI wheel and compiles many_flows.cc as run.sh
# compiles tcp_bulk.cc (bench/ns3/ns3.sh), builds squall, then runs
# `squall bench sim --ns3 bench/ns3/build/many_flows "$@"`. ns-3 runs only
# the points up to 1 000 flows (--ns3-max-flows): its peak memory grows by
# about 1 MB a flow (1 053 MB at 1 000 flows on this machine).
#
# Environment: SQUALL=path (a squall binary to use instead of building
# one), NS3_VERSION (default 3.44.post0), JOBS=N (cargo build jobs).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="$here/.venv"
build="$here/build"
ns3_version="${NS3_VERSION:-3.44.post0}"

# shellcheck source=bench/ns3/ns3.sh
source "$here/ns3.sh"
ns3_setup
exe="$(ns3_compile many_flows)"
squall="$(squall_binary)"

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "ns-3: ns3 wheel $("$venv/bin/python" -m pip show ns3 | sed -n 's/^Version: //p') (lib$lib_tag-*.so), $(g++ --version | head -1)"
echo "squall: $squall, commit $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet HEAD -- crates 2>/dev/null || echo ' + uncommitted changes'), $(rustc --version)"
exec "$squall" bench sim --ns3 "$exe" "$@"
