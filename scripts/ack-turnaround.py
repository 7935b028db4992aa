#!/usr/bin/env python3
"""How long a host takes to answer data with an ACK, from its capture
(issue 31, docs/validation.md "BBR at 200 ms: the hosts' turnaround"):
for each pure ACK HOST_ADDRESS sends, the time since the last data segment
it received. In `squall emu` a host's pcap is taken where the simulator
takes it (a packet received as it arrives, one sent as it enters the
link), so this is the real stack's turnaround plus squall's TUN path; the
simulator's hosts answer at once (0 µs).

Prints the quantiles of all the turnarounds, of those under 500 µs (the
ACKs a segment's arrival sent at once) and of the rest. With --values
FILE, writes 200 quantiles of those under 500 µs as an `empirical`
distribution's values ("12.5 us" per line).

Usage: scripts/ack-turnaround.py PCAP HOST_ADDRESS [--values FILE]
"""
import statistics
import subprocess
import sys

args = sys.argv[1:]
values = None
if "--values" in args:
    i = args.index("--values")
    if i + 1 >= len(args):
        sys.exit("ack-turnaround: --values needs a FILE")
    values = args[i + 1]
    del args[i:i + 2]
if len(args) != 2:
    sys.exit("usage: ack-turnaround.py PCAP HOST_ADDRESS [--values FILE]")
pcap, me = args
fields = subprocess.run(["tshark", "-r", pcap, "-Y", "tcp", "-T", "fields", "-e", "frame.time_epoch", "-e", "ip.src",
                         "-e", "tcp.len"], capture_output=True, text=True)
if fields.returncode != 0:
    sys.exit(f"ack-turnaround: tshark could not read {pcap}: {fields.stderr.strip()}")
last, turns = None, []
for line in fields.stdout.splitlines():
    t, src, length = line.split("\t")
    t, length = float(t), int(length or 0)
    if src != me and length > 0:
        last = t
    elif src == me and length == 0 and last is not None:
        turns.append((t - last) * 1e6)
        last = None
if not turns:
    sys.exit(f"ack-turnaround: no pure ACK from {me} after data in {pcap}")


def report(name, xs):
    xs = sorted(xs)
    q = lambda p: xs[min(len(xs) - 1, int(p * len(xs)))]
    print(f"{name}: {len(xs)} ACKs, µs: p10 {q(.1):.1f} p25 {q(.25):.1f} p50 {q(.5):.1f} p75 {q(.75):.1f} "
          f"p90 {q(.9):.1f} p99 {q(.99):.1f} mean {statistics.mean(xs):.1f}")


report("all", turns)
fast = sorted(x for x in turns if x < 500)
if fast:
    report("under 500 µs", fast)
if len(fast) < len(turns):
    report("500 µs and over", [x for x in turns if x >= 500])
if values and fast:
    with open(values, "w") as out:
        out.writelines(f"{fast[int((i + 0.5) * len(fast) / 200)]:.1f} us\n" for i in range(200))
