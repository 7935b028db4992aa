#!/usr/bin/env python3
"""ACK-by-ACK windows reaching the sender in a `squall compare` of the
compare-bulk scenario (receiver 10.0.1.1): an emulated run's fixed.pcap (Linux)
against the simulator's run of the same seed (`squall sim POINT/scenario.toml
--seed N --replications 1`, its rep-0/fixed.pcap).
Pairs ACKs arriving within TOL ms of each other (default 1; an ACK without a
partner is skipped, three in a row end the pairing: the runs diverged) and
counts the windows that are equal once the simulator's is rounded up to
Linux's unit of 1024 B (window scale 10; the model announced 6 before),
overall and while a SACK block is present (a hole open). -v prints each
ACK that differs or has a hole open.
Usage: ack-windows-compare.py LINUX_fixed.pcap SIM_fixed.pcap [TOL_ms] [-v]
Needs tshark."""
import subprocess, sys
def acks(p):
    out=subprocess.run(['tshark','-r',p,'-Y','ip.src==10.0.1.1 && tcp.len==0','-T','fields','-e','frame.time_relative','-e','tcp.ack','-e','tcp.window_size','-e','tcp.options.sack_le'],capture_output=True,text=True).stdout
    r=[]
    for l in out.splitlines():
        f=l.split('\t')
        r.append((float(f[0]),int(f[1]),int(f[2]),bool(f[3])))
    return r
L=acks(sys.argv[1]); S=acks(sys.argv[2])
tol=float(sys.argv[3]) if len(sys.argv)>3 and not sys.argv[3].startswith('-') else 1.0
v='-v' in sys.argv
n=ok=nh=okh=0; i=j=0; miss=0; lt=0
while i<len(L) and j<len(S):
    (lt,la,lw,lh),(st,sa,sw,sh)=L[i],S[j]
    if abs(lt-st)*1000>tol:
        miss+=1
        if miss>=3: break
        if lt<st: i+=1
        else: j+=1
        continue
    miss=0; i+=1; j+=1
    sw_r=-(-sw//1024)*1024
    good=sw_r==lw
    n+=1; ok+=good
    if lh: nh+=1; okh+=good
    if v and (not good or lh): print(f'{lt:.4f} L ack={la} win={lw} hole={int(lh)} | S {st:.4f} ack={sa} win={sw} ({sw_r}) {"OK" if good else "BAD"}')
print(f'{sys.argv[2]}: paired {n} ACKs up to {lt:.3f} s; windows equal {ok}/{n}; with a hole open {okh}/{nh}')
