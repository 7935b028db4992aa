#!/usr/bin/env python3
"""Report of a scripts/linux-rcvbuf-trace.sh trace (issue 31): the reader's
lag behind the data (from each received segment, tcp_probe, to the next
tcp_rcv_space_adjust, which Linux 6.18 calls at each skb a read copies) and
each growth of the receive buffer (tcp_rcvbuf_grow: time since the
measurement began, rcv_rtt, copied and inq as the kernel counts them
(the growth uses copied - inq), space, out-of-order span, buffer,
rcv_ssthresh, window clamp, rcv_wnd), with the number of data segments
received before it. Compare with the simulator's receiver of the same run.

Usage: scripts/linux-rcvbuf-report.py OUT/ktrace.txt PORT
"""
import bisect
import re
import sys

if len(sys.argv) != 3 or not sys.argv[2].isdigit():
    sys.exit("usage: linux-rcvbuf-report.py KTRACE PORT")
path, port = sys.argv[1], sys.argv[2]
line_re = re.compile(r"\s(\d+\.\d+): (\w+): (.*)$")
probes, adjusts, grows, reads = [], [], [], 0
try:
    lines = open(path).read().splitlines()
except OSError as e:
    sys.exit(f"linux-rcvbuf-report: {path}: {e.strerror}")
for n, line in enumerate(lines, 1):
    if line.startswith("#"):
        continue
    m = line_re.search(line)
    if not m:
        continue
    t, name, rest = float(m.group(1)), m.group(2), m.group(3)
    if name == "tcp_probe":
        length = re.search(r"data_len=(\d+)", rest)
        if length is None:
            sys.exit(f"linux-rcvbuf-report: {path}:{n}: a tcp_probe without data_len")
        if int(length.group(1)) > 0:
            probes.append(t)
    elif name == "tcp_rcv_space_adjust" and f"sport={port} " in rest:
        adjusts.append(t)
    elif name == "tcp_rcvbuf_grow":
        grows.append((t, dict(kv.split("=", 1) for kv in rest.split() if "=" in kv)))
    elif name == "sock_recv_length":
        reads += 1
if not probes:
    sys.exit(f"linux-rcvbuf-report: {path}: no data segments to port {port}")
lags = sorted((a - probes[i - 1]) * 1e6 for a in adjusts if (i := bisect.bisect_right(probes, a)) > 0)
print(f"{len(probes)} data segments, {len(adjusts)} tcp_rcv_space_adjust, {reads} reads, {len(grows)} growths")
if lags:
    q = lambda p: lags[min(len(lags) - 1, int(p * len(lags)))]
    print("reader's lag after the latest segment, us: " + ", ".join(
        f"p{int(p * 100)} {q(p):.0f}" for p in (0.05, 0.25, 0.5, 0.75, 0.95, 0.99)) + f", max {lags[-1]:.0f}")
t0 = probes[0]
for t, d in grows:
    print(f"{t - t0:8.4f} s after segment {bisect.bisect_right(probes, t)}: time {d['time']} us, rcv_rtt {d['rtt_us']} us, "
          f"copied {d['copied']} inq {d['inq']} space {d['space']} ooo {d['ooo']}, rcvbuf {d['rcvbuf']} "
          f"rcv_ssthresh {d['rcv_ssthresh']} clamp {d['window_clamp']} rcv_wnd {d['rcv_wnd']}")
