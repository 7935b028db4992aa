#!/usr/bin/env bash
# The receiving Linux socket's buffer tuning and reads, from the kernel's
# own tracepoints (issue 31, docs/validation.md "BBR at 200 ms: the
# receiver's window ACK by ACK"): runs COMMAND (e.g. a `squall emu` of a
# bulk scenario) with tracefs events enabled and writes them to
# OUT/ktrace.txt:
#   tcp:tcp_probe          each segment the socket on PORT receives (data_len)
#   tcp:tcp_rcv_space_adjust  each call of tcp_rcv_space_adjust (at a read)
#   tcp:tcp_rcvbuf_grow    each growth of the receive buffer, with the
#                          measurement's time, rcv_rtt, copied, inq, the
#                          space, the out-of-order span and the new clamp
#   sock:sk_data_ready, sock:sock_recv_length  the reader's wake-up and reads
# Timestamps are CLOCK_MONOTONIC (trace_clock mono). Needs root and tracefs
# (mounted at /sys/kernel/tracing); Linux 6.16 or later for tcp_rcvbuf_grow.
#
# Usage: sudo scripts/linux-rcvbuf-trace.sh OUT PORT -- COMMAND...
#   e.g. PORT 15000, the port of `squall emu`'s bulk workload server
set -euo pipefail
if [ $# -lt 4 ] || [ "$3" != "--" ]; then
    echo "usage: $0 OUT PORT -- COMMAND..." >&2
    exit 2
fi
out=$1 port=$2
shift 3
case "$port" in *[!0-9]* | "") echo "$0: PORT \"$port\" is not a port number" >&2; exit 2 ;; esac
T=/sys/kernel/tracing
[ -w "$T/trace" ] || { echo "$0: $T is not mounted or not writable (root, tracefs)" >&2; exit 2; }
events="tcp/tcp_probe tcp/tcp_rcvbuf_grow tcp/tcp_rcv_space_adjust sock/sk_data_ready sock/sock_recv_length"
for e in $events; do
    [ -d "$T/events/$e" ] || { echo "$0: this kernel has no tracepoint $e" >&2; exit 2; }
done
# The tracefs settings changed here are put back on exit (the ring buffer's
# size, its clock, the events and their filters): a 256 MiB buffer per CPU
# left behind is memory the machine does not get back.
old_clock=$(sed -n 's/.*\[\(.*\)\].*/\1/p' "$T/trace_clock")
old_size=$(cat "$T/buffer_size_kb")
old_size=${old_size%% *}
stop() {
    echo 0 >"$T/tracing_on"
    for e in $events; do echo 0 >"$T/events/$e/enable"; echo 0 >"$T/events/$e/filter"; done
    echo >"$T/trace"
    echo "$old_clock" >"$T/trace_clock"
    echo "$old_size" >"$T/buffer_size_kb"
}
trap stop EXIT
echo 0 >"$T/tracing_on"
echo >"$T/trace"
echo mono >"$T/trace_clock"
echo 262144 >"$T/buffer_size_kb"
echo "sport == $port" >"$T/events/tcp/tcp_probe/filter"
echo "sport == $port" >"$T/events/tcp/tcp_rcvbuf_grow/filter"
echo "sport == $port" >"$T/events/tcp/tcp_rcv_space_adjust/filter"
echo 'protocol == 6' >"$T/events/sock/sk_data_ready/filter"
echo 'protocol == 6 && ret > 0' >"$T/events/sock/sock_recv_length/filter"
for e in $events; do echo 1 >"$T/events/$e/enable"; done
echo 1 >"$T/tracing_on"
status=0
"$@" || status=$?
echo 0 >"$T/tracing_on"
mkdir -p "$out"
cat "$T/trace" >"$out/ktrace.txt"
exit "$status"
