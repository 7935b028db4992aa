#!/usr/bin/env python3
"""Linux's BBR state of the sockets talking to PORT, polled over netlink
(sock_diag, INET_DIAG_BBRINFO: include/uapi/linux/inet_diag.h
`struct tcp_bbr_info`; with tcp_info's snd_cwnd and its
delivery_rate_app_limited bit) as often as the machine answers, for SECONDS
(issue 31, docs/validation.md "BBR at 200 ms"). Run it in the sender's
network namespace while the transfer runs, e.g. for `squall emu`:

  ip netns exec squall-PID-fixed scripts/linux-bbr-poll.py OUT.csv 15000 4.5

OUT.csv: t (CLOCK_MONOTONIC s), bw_Bps (bbr_bw: the max filter of
delivery-rate samples, bytes/s), min_rtt_us, pacing_gain and cwnd_gain
(<<8), cwnd (packets), app_limited, unacked, state (the socket's), then
tcp_info's ca_state (0 Open, 1 Disorder, 2 CWR, 3 Recovery, 4 Loss),
sacked, lost, retrans (packets now) and total_retrans: the packets in
flight as BBR counts them (tcp_packets_in_flight) are unacked - sacked -
lost + retrans.
"""
import socket
import struct
import sys
import time

if len(sys.argv) != 4 or not sys.argv[2].isdigit():
    sys.exit("usage: linux-bbr-poll.py OUT.csv PORT SECONDS")
path, port = sys.argv[1], int(sys.argv[2])
try:
    seconds = float(sys.argv[3])
except ValueError:
    sys.exit(f"linux-bbr-poll: SECONDS \"{sys.argv[3]}\" is not a number")
NETLINK_INET_DIAG, SOCK_DIAG_BY_FAMILY, INET_DIAG_INFO, INET_DIAG_BBRINFO = 4, 20, 2, 16
NLMSG_DONE, NLMSG_ERROR = 3, 2


def request(family):
    # inet_diag_req_v2: family, protocol, ext (INFO and the CC's info), pad,
    # states (all), and an empty socket id (dump).
    ext = (1 << (INET_DIAG_INFO - 1)) | (1 << (3 - 1))
    body = struct.pack("=BBBBI", family, socket.IPPROTO_TCP, ext, 0, 0xFFFFFFFF) + bytes(48)
    return struct.pack("=IHHII", 16 + len(body), SOCK_DIAG_BY_FAMILY, 0x301, 1, 0) + body


nl = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_INET_DIAG)
requests = [request(socket.AF_INET6), request(socket.AF_INET)]
end = time.monotonic() + seconds
with open(path, "w") as out:
    out.write("t,bw_Bps,min_rtt_us,pacing_gain,cwnd_gain,cwnd,app_limited,unacked,state,"
              "ca_state,sacked,lost,retrans,total_retrans\n")
    while time.monotonic() < end:
        for req in requests:
            nl.send(req)
            done = False
            while not done:
                data = nl.recv(1 << 16)
                off = 0
                while off + 16 <= len(data):
                    length, kind = struct.unpack_from("=IH", data, off)
                    if kind in (NLMSG_DONE, NLMSG_ERROR) or length < 16:
                        done = True
                        break
                    msg = data[off + 16: off + length]
                    # inet_diag_msg: family, state, timer, retrans, then the
                    # socket id (sport, dport big-endian, ...): 72 bytes.
                    if struct.unpack_from(">H", msg, 6)[0] == port:
                        bbr = info = None
                        a = 72
                        while a + 4 <= len(msg):
                            alen, atype = struct.unpack_from("=HH", msg, a)
                            if alen < 4:
                                break
                            if atype == INET_DIAG_BBRINFO:
                                bbr = struct.unpack_from("=IIIII", msg, a + 4)
                            elif atype == INET_DIAG_INFO:
                                # struct tcp_info (include/uapi/linux/tcp.h):
                                # byte 1 ca_state, byte 7 bit 0
                                # delivery_rate_app_limited, unacked at 24,
                                # sacked 28, lost 32, retrans 36, snd_cwnd
                                # 80, total_retrans 100.
                                u32 = lambda o: struct.unpack_from("=I", msg, a + 4 + o)[0]
                                info = (u32(80), msg[a + 4 + 7] & 1, u32(24), msg[a + 4 + 1], u32(28), u32(32),
                                        u32(36), u32(100))
                            a += (alen + 3) & ~3
                        if bbr and info:
                            out.write(f"{time.monotonic():.6f},{bbr[0] | (bbr[1] << 32)},{bbr[2]},{bbr[3]},{bbr[4]},"
                                      f"{info[0]},{info[1]},{info[2]},{msg[1]},{info[3]},{info[4]},{info[5]},"
                                      f"{info[6]},{info[7]}\n")
                    off += (length + 3) & ~3
