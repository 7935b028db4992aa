#!/usr/bin/env python3
"""How a TCP receiver ACKs, from its own capture (issue 31, docs/validation.md's BBR section).

Usage: scripts/ack-pattern.py RECEIVER.pcap [AFTER_SECONDS]   (needs tshark)

For each pure ACK the receiver sends: how many data segments arrived since its
previous ACK, how long after the latest of them it left, whether it carries
SACK blocks (out-of-order queue non-empty), whether the cumulative ACK moved.
"""
import subprocess, sys, collections

def read(pcap):
    f = ["frame.time_relative","ip.src","tcp.seq","tcp.ack","tcp.len","tcp.options.sack_le","tcp.flags.syn","tcp.flags.fin"]
    cmd = ["tshark","-r",pcap,"-T","fields","-E","separator=,","-E","aggregator=;"]
    for x in f: cmd += ["-e",x]
    out = subprocess.run(cmd,check=True,capture_output=True,text=True).stdout
    rows=[]
    for line in out.splitlines():
        c=line.split(",")
        if not c[2]: continue
        rows.append(dict(t=float(c[0]),src=c[1],seq=int(c[2]),ack=int(c[3]),len=int(c[4] or 0),
                         sack=len(c[5].split(";")) if c[5] else 0, syn=c[6]=="1", fin=c[7]=="1"))
    return rows

def analyse(pcap, after=0.0):
    rows=read(pcap)
    sender=next(r["src"] for r in rows if r["len"]>0)
    mss=max(r["len"] for r in rows if r["src"]==sender)
    pending=[]  # data segments since last ACK: (t, seq, len)
    prev_ack=None; prev_sack=0
    cats=collections.Counter(); delays=collections.defaultdict(list)
    nseg=collections.Counter()
    episode=[]; episodes=[]
    seq_runs=[]
    for r in rows:
        if r["syn"]: continue
        if r["src"]==sender:
            if r["len"]>0: pending.append(r)
            continue
        if r["len"]>0 or r["fin"]: continue
        if prev_ack is None:
            prev_ack=r["ack"]; pending=[]; continue
        if r["t"]<after:
            prev_ack=r["ack"]; prev_sack=r["sack"]; pending=[]; continue
        d = (r["t"]-pending[-1]["t"])*1e6 if pending else None
        late = d is not None and d>500
        k=len(pending)
        if r["sack"]==0 and prev_sack==0:
            cat="in-order"
            nseg[k]+=1
        elif r["sack"]>0 and r["ack"]==prev_ack:
            cat="dupack(sack)"
        elif r["sack"]>0 and r["ack"]>prev_ack:
            cat="partial-fill(sack)"
        else:
            cat="hole-filled"
        cats[(cat,"late" if late else "prompt")]+=1
        if d is not None: delays[cat].append(d)
        # loss episodes: consecutive ACKs with SACK blocks
        if r["sack"]>0:
            episode.append("L" if late else "p")
        elif episode:
            episode.append("F" + ("L" if late else "p")); episodes.append("".join(episode)); episode=[]
        prev_ack=r["ack"]; prev_sack=r["sack"]; pending=[]
    return mss,cats,nseg,episodes,delays

if __name__=="__main__":
    if len(sys.argv) < 2 or len(sys.argv) > 3:
        sys.exit(__doc__.splitlines()[2])
    after=float(sys.argv[2]) if len(sys.argv)>2 else 0.0
    mss,cats,nseg,eps,delays=analyse(sys.argv[1],after)
    tot=sum(cats.values())
    if tot == 0:
        sys.exit(f"{sys.argv[1]}: no pure ACKs of a data transfer in this capture")
    print(f"{sys.argv[1]}: {tot} ACKs after {after}s, mss {mss}")
    for k,v in sorted(cats.items()): print(f"  {k[0]:20s} {k[1]:7s} {v:6d} {100*v/tot:5.1f}%")
    it=sum(nseg.values())
    print("  in-order ACKs by data segments since the previous ACK:", {k:f"{v} ({100*v/it:.1f}%)" for k,v in sorted(nseg.items())})
    import statistics
    for c,ds in delays.items():
        ds=sorted(ds); n=len(ds)
        print(f"  delay after latest data, {c}: n={n} p10 {ds[n//10]:.0f} p50 {ds[n//2]:.0f} p90 {ds[9*n//10]:.0f} us")
    # pattern of the first ACKs of each loss episode
    pat=collections.Counter(e[:6] for e in eps)
    print(f"  {len(eps)} loss episodes; first 6 ACKs (p prompt, L late >0.5 ms, F = hole filled):")
    for p,n in pat.most_common(8): print(f"    {p:8s} {n}")
    lens=[len(e) for e in eps]
    if lens: print(f"  ACKs per episode: mean {sum(lens)/len(lens):.1f}")
