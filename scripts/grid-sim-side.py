#!/usr/bin/env python3
"""The simulator's side of an emulated parity grid again, with another squall
binary (issue 31, docs/validation.md): for each point of GRID/rows.tsv (written
by scripts/parity-grid.sh), `squall sim` of the point's scenario.toml with the
grid's seeds and REPS replications (env, default 5; --no-pcap), into SIMOUT
(env, default /tmp/simside; it holds GBs of events.csv: delete it after).
Prints per point: goodput Mbit/s grid's simulator → this binary / emulated
mean ± 95 % CI (difference), retransmitted % likewise, elapsed s, the RTO count.
Goodput here is summary.json's (the model's), which differs slightly from
`squall compare`'s (from the captures) for short transfers: compare two
binaries with each other, not this column with the grid's emulated one.

Usage: scripts/grid-sim-side.py GRID SQUALL_BINARY
"""
import json, subprocess, sys, os, statistics as st, csv
grid = sys.argv[1]; squall = sys.argv[2]
for line in open(os.path.join(grid, 'rows.tsv')):
    f = line.rstrip('\n').split('\t')
    cc, rate, rtt, loss, q = f[:5]
    name = f"{rate}mbit-{rtt}ms-{loss}pct-{q}p-{cc}"
    point = os.path.join(grid, name)
    out = os.environ.get("SIMOUT","/tmp/simside") + f"/{name}"
    subprocess.run([squall, "sim", os.path.join(point, "scenario.toml"), "--replications", os.environ.get("REPS","5"), "--out", out, "--no-pcap", "--force"], check=True, capture_output=True)
    d = json.load(open(os.path.join(out, "summary.json")))
    gp = [r['tcp_flows'][0]['goodput_bps'] for r in d['runs']]
    rx = [100 * r['tcp_flows'][0]['sender']['retransmitted_segments'] / r['tcp_flows'][0]['sender']['data_segments_sent'] for r in d['runs']]
    el = [r['tcp_flows'][0]['transfer_time'] for r in d['runs']]
    v = [float(x) for x in f[6:26]]
    emu_gp, emu_rx, emu_el = v[2] / 1e6, v[7], v[17]
    g, x, e = st.mean(gp) / 1e6, st.mean(rx), st.mean(el)
    to = sum(r["tcp_flows"][0]["sender"].get("timeouts", 0) for r in d["runs"])
    print(f"| {cc} | {loss} % | RTO {to} | {rate} Mbit/s | {rtt} ms | {q} p | {v[0]/1e6:.3f} → {g:.3f} / {emu_gp:.3f} ± {v[3]/1e6:.3f} ({(emu_gp-g)/emu_gp*100:+.1f} %) | {v[5]:.3f} → {x:.3f} / {emu_rx:.3f} ± {v[8]:.3f} ({(emu_rx-x)/emu_rx*100:+.1f} %) | {v[15]:.2f} → {e:.2f} / {emu_el:.2f} ({(emu_el-e)/emu_el*100:+.1f} %) |")
