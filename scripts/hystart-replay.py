#!/usr/bin/env python3
"""Cubic's HyStart (net/ipv4/tcp_cubic.c, Linux 6.18) replayed on the ACK times of
a run (issue 31, docs/validation.md "Cubic's slow-start exit: the receiver's window clamp").

Usage: scripts/hystart-replay.py EVENTS.csv [-v]

EVENTS.csv is a `squall sim` or `squall emu` run's events.csv with one bulk TCP
flow: data are the downlink packets over 100 bytes (in order of entering the
first stage = sequence order until the first loss), ACKs the uplink packets.
Each ACK's cumulative point is the data delivered before the ACK entered the
uplink. Slow start from IW 10, one segment per segment ACKed; the RTT sample is
the ACK's arrival less the send time of the newest segment it covers
(`ca_rtt_us`); `hystart_update` with rounds reset on every slow-start ACK past
end_seq (upstream 25c1a9ca53db), the ACK train (2 ms, (delay_min + 1 ms)/2
without pacing) and the delay test (8 samples, delay_min/8 in 4..16 ms).
Stops at the exit or the first duplicate ACK. -v prints each ACK: time, segments
acked, snd_una, snd_nxt, cwnd, RTT sample, time since the round's start, R at a
round's start and T or D at the exit.
"""
import csv, sys

def load(path):
    data = {}   # id -> [send, deliver or None]
    order = []
    acks = {}   # id -> [capture, deliver]
    with open(path) as f:
        r = csv.reader(f); next(r)
        for row in r:
            t = float(row[0]); d = row[2]; ev = row[3]; pid = int(row[4]); size = int(row[6])
            if d == 'downlink' and size > 100:
                if ev == 'enqueue':
                    data[pid] = [t, None]; order.append(pid)
                elif ev == 'deliver':
                    data[pid][1] = t
            elif d == 'uplink':
                if ev == 'enqueue':
                    acks[pid] = [t, None]
                elif ev == 'deliver':
                    acks[pid][1] = t
    return data, order, acks

def replay(path, variant='model', verbose=False, low=16, delta=2e-3):
    """variant 'model': rounds reset whatever the window (Linux since
    25c1a9ca53db, congestion/hystart.rs); 'linux': only from cwnd 16 on
    (Linux before that fix)."""
    data, order, acks = load(path)
    send = [data[p][0] for p in order]
    dlv = [data[p][1] for p in order]
    ack_list = sorted((v[1], v[0], k) for k, v in acks.items() if v[1] is not None)
    ack_list = ack_list[1:]  # SYN-ACK
    cwnd = 10; una = 0; end_seq = 0; found = None
    round_start = last_ack = 0.0; curr = None; samples = 0; dmin = None
    rows = []
    for (t, cap, pid) in ack_list:
        # cumulative: leading delivered segments before capture
        n = una
        while n < len(order) and dlv[n] is not None and dlv[n] <= cap:
            n += 1
        nxt = sum(1 for s in send if s < t)
        if n <= una:
            rows.append((t, 'dup', una, nxt, cwnd)); break
        acked = n - una; una = n
        rtt = t - send[n - 1]
        dmin = rtt if dmin is None else min(dmin, rtt)
        event = ''
        if found is None:
            if variant == 'model' and una > end_seq:
                round_start = last_ack = t; end_seq = nxt; curr = None; samples = 0; event += 'R'
            if cwnd >= low:
                if variant == 'linux' and una > end_seq:
                    round_start = last_ack = t; end_seq = nxt; curr = None; samples = 0; event += 'R'
                thr = (dmin + 1e-3) / 2
                if t - last_ack <= delta:
                    last_ack = t
                    if t - round_start > thr:
                        found = ('train', cwnd, t); event += 'T'
                if found is None:
                    curr = rtt if curr is None else min(curr, rtt)
                    if samples < 8: samples += 1
                    else:
                        eta = min(max(dmin / 8, 4e-3), 16e-3)
                        if curr > dmin + eta:
                            found = ('delay', cwnd, t); event += 'D'
        rows.append((t, acked, una, nxt, cwnd, rtt, t - round_start, event))
        cwnd += acked
        if found: break
    if verbose:
        for r in rows:
            print(*[f'{x:.4f}' if isinstance(x, float) else x for x in r])
    return found, rows

if __name__ == '__main__':
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    f, rows = replay(sys.argv[1], 'model', verbose='-v' in sys.argv)
    print(f'{sys.argv[1]}: ' + (f'{f[0]} at cwnd {f[1]}, {f[2]:.4f} s' if f else 'no exit before the first duplicate ACK'))
