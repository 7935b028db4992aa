#!/usr/bin/env python3
"""Delivery-rate samples of a bulk TCP run, rebuilt from its captures.

Applies Linux's delivery-rate sampler (net/ipv4/tcp_rate.c:
tcp_rate_skb_sent, tcp_rate_skb_delivered, tcp_rate_gen; a sample's
interval is the longer of its send and ACK phases, and samples shorter than
min_rtt are dropped) to the sender's capture, with data packets at the time
they were captured and ACKs at the time they were captured. Then, from the
receiver's capture, measures how long after the latest data segment each ACK
left the receiver, checks with the ACK's TSval (millisecond clock) whether
the receiver built it then or at the data's arrival, and samples again with
the late ACKs moved back by the receiver's delay (docs/validation.md, BBR,
"The 20 ms RTT gap").

Usage (a `squall emu` or `squall sim` run directory with HOST.pcap files):

  scripts/bbr-rate-samples.py RUN/fixed.pcap RUN/mobile.pcap --min-rtt-ms 20

Needs tshark. The sender is the host that sends payload; the link's payload
rate is --rate-mbit x MSS / (MSS + 52) (IPv4 + TCP with timestamps).
"""

import argparse
import bisect
import subprocess
import sys

FIELDS = [
    "frame.time_relative",
    "ip.src",
    "tcp.seq",
    "tcp.ack",
    "tcp.len",
    "tcp.options.sack_le",
    "tcp.options.sack_re",
    "tcp.flags.syn",
    "tcp.options.timestamp.tsval",
]


def read(pcap):
    cmd = ["tshark", "-r", pcap, "-T", "fields", "-E", "separator=,", "-E", "aggregator=;"]
    for f in FIELDS:
        cmd += ["-e", f]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        c = line.split(",")
        if c[7] == "1" or not c[2]:
            continue
        sack = list(zip(map(int, c[5].split(";")), map(int, c[6].split(";")))) if c[5] else []
        rows.append(
            dict(t=float(c[0]), src=c[1], seq=int(c[2]), ack=int(c[3]), len=int(c[4] or 0), sack=sack,
                 tsval=int(c[8]) if c[8] else None)
        )
    return rows


def samples(rows, sender, min_rtt):
    """tcp_rate.c over the sender's capture: (time, packets/s, send phase, ACK phase)."""
    out = {}
    delivered, first_tx, dmstamp = 0, None, None
    result = []
    for r in rows:
        t = r["t"]
        if r["src"] == sender:
            if r["len"] == 0:
                continue
            if not any(not p["sacked"] for p in out.values()):
                first_tx, dmstamp = t, t  # nothing outstanding (tcp_rate_skb_sent)
            out[r["seq"]] = dict(end=r["seq"] + r["len"], ts=t, first_tx=first_tx, dmstamp=dmstamp,
                                 delivered=delivered, sacked=False)
            continue
        newly = []
        for s in sorted(out):
            p = out[s]
            if p["end"] <= r["ack"]:
                if not p["sacked"]:
                    newly.append(p)
                del out[s]
            elif not p["sacked"] and any(le <= s and p["end"] <= re for le, re in r["sack"]):
                p["sacked"] = True
                newly.append(p)
        if not newly:
            continue
        rs = max(newly, key=lambda p: p["ts"])  # the most recently sent (tcp_rate_skb_delivered)
        delivered += len(newly)
        snd, ack = rs["ts"] - rs["first_tx"], t - rs["dmstamp"]
        first_tx, dmstamp = rs["ts"], t
        interval = max(snd, ack)
        if interval >= min_rtt:
            result.append((t, (delivered - rs["delivered"]) / interval, snd, ack))
    return result


def report(label, result, link, after):
    kept = sorted((s for s in result if s[0] > after), key=lambda s: -s[1])
    top = " ".join(f"{s[1] / link:.4f}" for s in kept[:5])
    over = lambda x: sum(s[1] / link > x for s in kept)
    print(f"{label}: {len(kept)} samples after {after} s; largest / payload rate {top}; "
          f"above 1.01: {over(1.01)}, above 1.02: {over(1.02)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sender_pcap")
    ap.add_argument("receiver_pcap")
    ap.add_argument("--min-rtt-ms", type=float, required=True)
    ap.add_argument("--rate-mbit", type=float, default=10.0)
    ap.add_argument("--mss", type=int, default=1448)
    ap.add_argument("--after", type=float, default=2.0, help="seconds of the run left out (STARTUP)")
    a = ap.parse_args()
    snd, rcv = read(a.sender_pcap), read(a.receiver_pcap)
    if not snd or not rcv:
        sys.exit("bbr-rate-samples: a capture has no TCP segments")
    sender = max({r["src"] for r in snd}, key=lambda h: sum(r["len"] for r in snd if r["src"] == h))
    link = a.rate_mbit * 1e6 * a.mss / (a.mss + 52) / 8 / a.mss
    report("sender capture", samples(snd, sender, a.min_rtt_ms / 1000), link, a.after)

    # The receiver: each ACK's delay after the latest data segment.
    data = [(r["t"], r["seq"] + r["len"]) for r in rcv if r["src"] == sender and r["len"] > 0]
    times = [d[0] for d in data]
    delay, late, buckets = {}, [], {}
    for r in rcv:
        if r["src"] == sender:
            continue
        i = bisect.bisect_right(times, r["t"])
        if i == 0:
            continue
        d = r["t"] - times[i - 1]
        key = (r["ack"], tuple(r["sack"]))
        late_one = 0.0009 < d < 0.0013
        delay.setdefault(key, []).append(d if late_one else 0.0)
        if r["t"] > a.after:
            buckets[int(d * 1e4)] = buckets.get(int(d * 1e4), 0) + 1
            if late_one:
                late.append((r, times[i - 1]))
    n = sum(buckets.values())
    print("receiver: ACKs by delay after the latest data segment (0.1 ms bins, > 0.5 %): "
          + ", ".join(f"{k / 10:.1f} ms {100 * v / n:.1f} %" for k, v in sorted(buckets.items()) if v / n > 0.005))
    prompt = [r["tsval"] - r["t"] * 1000 for r in rcv if r["src"] != sender and r["tsval"]
              and 0 <= r["t"] - times[max(0, bisect.bisect_right(times, r["t"]) - 1)] < 0.0002]
    if prompt and late:
        lo, hi = min(prompt) - 0.05, max(prompt) + 0.05
        fits = lambda ts, t: lo <= ts - t * 1000 <= hi
        at_leave = sum(fits(r["tsval"], r["t"]) for r, _ in late if r["tsval"])
        at_data = sum(fits(r["tsval"], td) for r, td in late if r["tsval"])
        print(f"receiver: {len(late)} ACKs 0.9-1.3 ms late; TSval fits the time they left: {at_leave}, "
              f"the data's arrival: {at_data}")

    # The sender's capture with each late ACK moved back by the receiver's delay.
    used = {}
    moved = []
    for r in snd:
        r = dict(r)
        if r["src"] != sender:
            key = (r["ack"], tuple(r["sack"]))
            k = used.get(key, 0)
            used[key] = k + 1
            ds = delay.get(key, [0.0])
            r["t"] -= ds[min(k, len(ds) - 1)]
        moved.append(r)
    moved.sort(key=lambda r: r["t"])
    report("without the receiver's delay", samples(moved, sender, a.min_rtt_ms / 1000), link, a.after)


if __name__ == "__main__":
    main()
