#!/usr/bin/env python3
"""Linux 6.18's receive-window growth replayed on a receiver's capture (issue
31, docs/validation.md "Cubic's slow-start exit: the receiver's window clamp").

Usage: scripts/rcv-window-replay.py RECEIVER.pcap [LINES] [-q]   (needs tshark)

For a `squall emu` run's mobile.pcap (sender 10.0.0.1, receiver 10.0.1.1,
1448-byte segments, window scale 10): the receiver's millisecond clock from its
TSvals; per data segment in order, the receiver RTT estimate from TS echoes
(whole ms, a smaller sample at once, 1/8 of a larger one: tcp_rcv_rtt_update),
`tcp_grow_window` at arrival (clamp less the queued segment, 2 segments per
step), then `tcp_rcv_space_adjust`/`tcp_rcvbuf_grow` at an immediate read
(2·copied + 2·(2·copied·(copied − space)/space)), the clamp starting at
131 072·160/256 (scaling_ratio of a 1448-byte segment in a 2 304-byte buffer)
and rcv_ssthresh at 65 160. Prints the predicted window (×1024, rounded up)
beside each ACK's and counts the ACKs it predicts, up to the first segment out
of order. The application is assumed to read each segment at once: a late read
shows as a mismatch.
"""
import subprocess, sys
MSS=1448
def rows(p):
    out = subprocess.run(['tshark','-r',p,'-T','fields','-e','frame.time_epoch','-e','ip.src','-e','tcp.seq','-e','tcp.ack','-e','tcp.len','-e','tcp.options.timestamp.tsval','-e','tcp.options.timestamp.tsecr','-e','tcp.window_size_value','-o','tcp.relative_sequence_numbers:TRUE'],capture_output=True,text=True).stdout
    r=[]
    for l in out.splitlines():
        f=l.split('\t')
        if len(f)<8 or not f[2]: continue
        r.append((float(f[0]),f[1],int(f[2]),int(f[3] or 0),int(f[4] or 0),int(f[5] or 0),int(f[6] or 0),int(f[7] or 0)))
    return r
def main(p, nmax=200, verbose=True):
    R=rows(p); t0=R[0][0]
    acks=[(x[0]-t0,x[5]) for x in R if x[1]=='10.0.1.1']
    lo,hi=-1e18,1e18
    for t,v in acks: lo=max(lo,v-t*1000); hi=min(hi,v+1-t*1000)
    c=(lo+hi)/2
    clock=lambda t: int(t*1000+c)
    ratio=160; rcvbuf=131072
    win=lambda space: space*ratio//256
    clamp=win(rcvbuf); ssth=65160
    est=None; last_ecr=None
    # mark at handshake completion (third ACK from fixed, first packet from 10.0.0.1 with len 0 after SYN)
    hs=[x for x in R if x[1]=='10.0.0.1' and x[4]==0]
    mark_t=hs[1][0]-t0; mark_seq=0; space=10*MSS
    out=[]; nseg=0
    for x in R:
        t=x[0]-t0
        if x[1]=='10.0.0.1' and x[4]>0:
            seg=(x[2]-1)//MSS
            if seg!=nseg: break   # out of order: stop
            nseg+=1
            ecr=x[6]
            if ecr!=last_ecr:
                last_ecr=ecr
                d=clock(t)-ecr
                if d>0:
                    s=d*1000
                    est = s if est is None or s<est else est-est/8+s/8
            # tcp_grow_window at arrival, this segment queued
            room=min(clamp, clamp-MSS)-ssth
            grew=False
            if room>0:
                ssth+=min(room,2*MSS); grew=True
            # read then adjust
            ev=''
            if est is not None and (t-mark_t)*1e6>=est:
                copied=nseg*MSS-mark_seq
                if copied>space:
                    old=space; rw=2*copied; rw+=2*(rw*(copied-old)//old)
                    nc=min(rw, 32<<20)
                    if nc>clamp: clamp=nc
                    space=copied
                    ev=f'ADJ copied={copied//MSS} clamp={clamp}'
                else: ev=f'mark copied={copied//MSS}'
                mark_seq=nseg*MSS; mark_t=t
            pred=-(-ssth//1024)
            out.append((t,seg,est,grew,pred,ev))
        elif x[1]=='10.0.1.1' and x[4]==0 and x[3]>1:
            out.append((t,'ACK',(x[3]-1)//MSS,x[7]))
    if verbose:
        for o in out[:nmax]:
            if o[1]=='ACK': print(f'   {o[0]:.4f} ack={o[2]} win={o[3]}')
            else: print(f'{o[0]:.4f} seg={o[1]} est={o[2] and o[2]/1000:.2f} grew={int(o[3])} pred_win={o[4]} {o[5]}')
    # compare
    pred=None; ok=bad=0
    for o in out:
        if o[1]!='ACK': pred=o[4]
        elif pred is not None:
            if o[3]==pred: ok+=1
            else: bad+=1
    first = next(x[0] - t0 for x in R if x[1] == '10.0.0.1' and x[4] > 0)
    # The phase of the receiver's millisecond clock at the first data segment.
    print(p, 'clock phase at the first data segment', round((c + first * 1000) % 1, 3),
          'ACK windows predicted', ok, 'mismatched', bad)
if __name__ == '__main__':
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    args = [a for a in sys.argv[1:] if a != '-q']
    main(args[0], int(args[1]) if len(args) > 1 else 200, '-q' not in sys.argv)
