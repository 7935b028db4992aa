#!/usr/bin/env python3
"""Mean RTT of a TCP sender's capture by `squall compare`'s rule (issue 31,
docs/validation.md): Karn's, a data segment sent once, to the first ACK at or
after it that covers its end (crates/squall-analysis flows.rs `rtt_samples`).
For simulator runs written with --no-pcap elsewhere, or to check one run.

Usage: scripts/karn-rtt.py SENDER_IP PCAP...   (needs tshark)
Prints per capture: samples, mean and median RTT in ms.
"""
import collections
import statistics
import subprocess
import sys


def rtt_samples(pcap, sender_ip):
    fields = ['frame.time_relative', 'ip.src', 'tcp.seq', 'tcp.len', 'tcp.ack']
    cmd = ['tshark', '-r', pcap, '-o', 'tcp.relative_sequence_numbers:FALSE', '-Y', 'tcp', '-T', 'fields', '-E',
           'separator=,'] + [a for f in fields for a in ('-e', f)]
    data, acks = [], []
    for line in subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.splitlines():
        t, src, seq, length, ack = line.split(',')
        if src == sender_ip:
            if int(length) > 0:
                data.append(((int(seq) + int(length)) % 2**32, float(t)))
        elif ack:
            acks.append((float(t), int(ack)))
    times_sent = collections.Counter(end for end, _ in data)
    ends = sorted((t, end) for end, t in data if times_sent[end] == 1)

    def after(x, y):
        return x != y and (x - y) % 2**32 < 2**31

    out, a = [], 0
    for t, end in ends:
        while a < len(acks) and (acks[a][0] < t or after(end, acks[a][1])):
            a += 1
        if a < len(acks):
            out.append(acks[a][0] - t)
    return out


if __name__ == '__main__':
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    for pcap in sys.argv[2:]:
        r = rtt_samples(pcap, sys.argv[1])
        if not r:
            print(f'{pcap}: no RTT samples')
            continue
        print(f'{pcap} {len(r)} samples, mean {statistics.mean(r) * 1e3:.2f} ms, '
              f'median {statistics.median(r) * 1e3:.1f} ms')
