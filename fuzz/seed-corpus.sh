#!/usr/bin/env bash
# Fills fuzz/corpus/TARGET/ with seed inputs from the repository: the
# shipped scenarios (good and bad), experiments, SNR and empirical files,
# --set and netem lines, hand-made packets (IPv4/IPv6, truncated, bad
# lengths, fragments, options, extension headers), a pcap and an events.csv
# written by `squall sim`, and control-socket requests. Also writes
# fuzz/dict/scenario.dict from the scenario schema's keys. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
c=fuzz/corpus
mkdir -p $c/{scenario,scenario_sim,set_override,netem,experiment,snr_file,empirical_file,host_packet,pcap,events_csv,control_request}

for f in scenarios/*.toml scenarios/*/*.toml; do
    name=$(echo "$f" | tr / _)
    cp "$f" "$c/scenario/$name"
    cp "$f" "$c/scenario_sim/$name"
done
cp fuzz/regressions/scenario_sim/* $c/scenario_sim/ 2>/dev/null || true
for f in experiments/*.toml fuzz/regressions/experiment/*; do cp "$f" "$c/experiment/$(basename "$f")"; done
for f in scenarios/traces/*.csv scenarios/bad/snr-*.csv; do cp "$f" "$c/snr_file/$(basename "$f")"; done
cp scenarios/bad/jitter-bad-line.txt $c/empirical_file/
printf '# delays\n12 ms\n\n  13 ms # measured\n1 s\n' > $c/empirical_file/delays.txt
printf '1500 B\n40 B\n576 B\n' > $c/empirical_file/sizes.txt
printf '0.5\n2\n1e-3\n' > $c/empirical_file/ratios.txt
mkdir -p $c/dist_table
printf '# This is the distribution table for the experimental distribution.\n-8192 -4096 0 4096 8192 16384 32767 -32768\n' > $c/dist_table/small.dist
printf '1 2\n3 x4 5\n' > $c/dist_table/bad-word.dist
mkdir -p $c/flow_cdf
cp scenarios/flow-sizes-web.cdf $c/flow_cdf/
printf '1000 0.5\n900 0.7\n2000 1\n' > $c/flow_cdf/unsorted.cdf
mkdir -p $c/loss_sequence
printf '# measured\nkeep\nkeep\ndrop\n1 # burst\n0\n' > $c/loss_sequence/decisions.txt
printf '0\n0110\n\r\n' > $c/loss_sequence/bad.txt
mkdir -p $c/state_series
printf '# train\ntime (ms),state\n0,open\n510,closed\n1010,open\n2000,open\n' > $c/state_series/states.csv
printf 'time (s),state\n0,a\n-5,b\n' > $c/state_series/bad.csv
mkdir -p $c/maketable_samples
printf '# delays in ms\n12.5 13\n14\t15.25 # last\n' > $c/maketable_samples/samples.txt
printf '1\n1\n1\n' > $c/maketable_samples/no-spread.txt
printf '12.5 13\n14 1e\n' > $c/maketable_samples/bad-word.txt

i=0
while IFS= read -r line; do
    i=$((i + 1)); printf '%s\n' "$line" > "$c/set_override/$i"
done <<'LINES'
stage.gsm-down.delay=300 ms
stage.gsm-down.rate="14.4 kbit/s"
seed=7
duration=60 s
links.0.downlink.0.queue={ packets = 10, drop = "head" }
stage.gsm-down.error={ gilbert_elliott = { p = 0.01, r = 0.1 } }
states.0.at=10 s
workload.udp.0.interval={ kind = "exponential", mean = "100 ms" }
LINES
i=0
while IFS= read -r line; do
    i=$((i + 1)); printf '%s' "$line" > "$c/netem/$i"
done <<'LINES'
rate 10mbit delay 50ms loss 1%
delay 100ms 10ms distribution normal
loss gemodel 1% 10% 70% 0.1%
rate 9600bit limit 30 corrupt 0.1%
delay 20ms reorder 25% 50%
duplicate 1% delay 1s
LINES
i=0
while IFS= read -r line; do
    i=$((i + 1)); printf '%s\n' "$line" > "$c/control_request/$i"
done <<'LINES'
{"cmd":"info"}
{"cmd":"status"}
{"cmd":"state","name":"weak-signal"}
{"cmd":"blackout","on":true,"mode":"hold","direction":"both"}
{"cmd":"blackout","on":false,"mode":"drop","direction":"uplink"}
LINES

python3 - "$c/host_packet" <<'PY'
import struct, sys
out = sys.argv[1]
def csum(b):
    if len(b) % 2: b += b'\0'
    s = sum(struct.unpack('!%dH' % (len(b) // 2), b))
    while s >> 16: s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff
def ipv4(proto, payload, tos=0, flags_frag=0x4000, options=b''):
    ihl = 5 + len(options) // 4
    h = struct.pack('!BBHHHBBH4s4s', 0x40 | ihl, tos, 4 * ihl + len(payload), 1, flags_frag, 64, proto, 0,
                    bytes([10, 0, 0, 1]), bytes([10, 0, 1, 1])) + options
    h = h[:10] + struct.pack('!H', csum(h)) + h[12:]
    return h + payload
tcp = struct.pack('!HHIIBBHHH', 5000, 80, 1, 0, 0x50, 0x02, 65535, 0, 0)
udp = struct.pack('!HHHH', 5000, 5001, 8 + 100, 0) + bytes(100)
v6 = struct.pack('!IHBB16s16s', 0x60000000, len(tcp), 6, 64, bytes(15) + b'\1', bytes(15) + b'\2') + tcp
hop = bytes([6, 0]) + bytes(6)  # hop-by-hop, next header TCP
v6ext = struct.pack('!IHBB16s16s', 0x60000000, len(hop) + len(tcp), 0, 64, bytes(16), bytes(16)) + hop + tcp
frag6 = bytes([17, 0, 0, 8, 0, 0, 0, 1])  # fragment header, offset 1
v6frag = struct.pack('!IHBB16s16s', 0x60000000, len(frag6) + 20, 44, 64, bytes(16), bytes(16)) + frag6 + bytes(20)
packets = {
    'tcp-syn': ipv4(6, tcp),
    'udp': ipv4(17, udp, tos=0x02),
    'icmp-echo': ipv4(1, bytes([8, 0, 0, 0, 0, 1, 0, 1]) + bytes(56)),
    'ip-options': ipv4(6, tcp, options=bytes([0x94, 4, 0, 0])),
    'fragment-later': ipv4(17, udp, flags_frag=0x2000 | 185),
    'truncated': ipv4(6, tcp)[:15],
    'total-length-past-end': (lambda p: p[:2] + struct.pack('!H', 1500) + p[4:])(ipv4(6, tcp)),
    'header-length-16': (lambda p: bytes([0x44]) + p[1:])(ipv4(6, tcp)),
    'header-length-past-total': (lambda p: bytes([0x4f]) + p[1:])(ipv4(6, tcp)),
    'ipv6-tcp': v6,
    'ipv6-hop-by-hop': v6ext,
    'ipv6-fragment': v6frag,
    'ipv6-truncated': v6[:30],
    'empty': b'',
}
for name, data in packets.items():
    open(f'{out}/{name}', 'wb').write(data)
PY

# TCP super-frames read with a virtio_net_hdr (as fuzz/regressions/host_packet/super-frame-tcp4 and -tcp6).
python3 - "$c/host_packet" <<'PY'
import struct, sys
def csum(b):
    if len(b) % 2: b += b'\0'
    s = sum(struct.unpack('!%dH' % (len(b) // 2), b))
    while s >> 16: s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff
def super_frames(out):
    # GSO super-frames as a veth passes them to a packet socket with
    # PACKET_VNET_HDR: virtio_net_hdr (flags NEEDS_CSUM, gso_type, hdr_len,
    # gso_size 1448, csum_start, csum_offset; native endian), Ethernet, IP,
    # TCP with 5000 data bytes (FIN, PSH, ACK and CWR set) and a partial checksum.
    data = bytes(i % 251 for i in range(5000))
    tcp = struct.pack('!HHIIBBHHH', 40000, 5201, 0xfffff000, 7, 0x50, 0x80 | 0x10 | 0x08 | 0x01, 501, 0, 0) + data
    eth = bytes([2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1])
    v4 = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(tcp), 0xfffe, 0x4000, 64, 6, 0, bytes([10, 9, 0, 1]), bytes([10, 9, 0, 2]))
    v4 = v4[:10] + struct.pack('!H', csum(v4)) + v4[12:]
    v6 = struct.pack('!IHBB16s16s', 0x60000000, len(tcp), 6, 64, bytes(15) + b'\1', bytes(15) + b'\2')
    for name, gso, ethertype, ip in [('super-frame-tcp4', 1, 0x0800, v4), ('super-frame-tcp6', 4, 0x86dd, v6)]:
        l4 = 14 + len(ip)
        hdr = struct.pack('=BBHHHH', 1, gso, l4 + 20, 1448, l4, 16)
        open(f'{out}/{name}', 'wb').write(hdr + eth + struct.pack('!H', ethertype) + ip + tcp)
super_frames(sys.argv[1])
PY

# A pcap and an events.csv as squall writes them.
squall=${SQUALL:-}
if [ -z "$squall" ]; then
    cargo build --release -q -p squall
    squall=$root/target/release/squall
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$squall" sim builtin:gsm-udp --set 'duration="70 s"' --out "$tmp/udp" >/dev/null
"$squall" sim builtin:seed001-e2e --set 'duration="3 s"' --out "$tmp/tcp" >/dev/null
for run in udp tcp; do
    for p in "$tmp/$run"/rep-0/*.pcap; do cp "$p" "$c/pcap/$run-$(basename "$p")"; done
    head -c 200000 "$tmp/$run/rep-0/events.csv" > "$c/events_csv/$run.csv"
done

# The scenario dictionary: every field name of the schema, and the words
# its values use.
{
    grep -ohE '^\s*pub [a-z_0-9]+:' crates/squall-scenario/src/schema.rs crates/squall-link/src/config.rs \
        crates/squall-link/src/radio/config.rs | sed -E 's/^\s*pub ([a-z_0-9]+):/"\1"/' || true
    grep -ohE 'rename = "[a-z_0-9-]+"' crates/squall-scenario/src/*.rs crates/squall-link/src/*.rs \
        | sed -E 's/rename = ("[^"]+")/\1/' || true
    for w in '[[hosts]]' '[[links]]' '[[links.downlink]]' '[[links.uplink]]' '[[states]]' '[[workload.tcp]]' \
        '[[workload.udp]]' '[[workload.commands]]' '[topology]' ' = ' '"10 Mbit/s"' '"100 ms"' '"1500 B"' '"1%"' \
        '"10.0.0.1"' '{ kind = "empirical", file = "x" }' 'true' 'false' '4294967295' '18446744073709551615' \
        '"1000000 h"'; do
        printf '"%s"\n' "$(printf '%s' "$w" | sed 's/\\/\\\\/g; s/"/\\"/g')"
    done
} | sort -u > fuzz/dict/scenario.dict
echo "seed corpus in $c: $(find $c -type f | wc -l) files; dictionary fuzz/dict/scenario.dict: $(wc -l < fuzz/dict/scenario.dict) words"
