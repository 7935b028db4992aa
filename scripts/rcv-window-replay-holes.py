#!/usr/bin/env python3
"""Replay of Linux 6.18's receive window over a whole receiver capture, holes
included: sk_rcvbuf and sk_rmem_alloc in bytes (truesize 2304 per 1448-byte
segment, scaling_ratio 160), tcp_grow_window (in order: after queueing; out of
order with SACK: before skb_set_owner_r), tcp_rcvbuf_grow at ofo arrival and at
reads, __tcp_select_window / tcp_select_window at each ACK.
VERB="-v" in sys.argv
OFO=0 turns the out-of-order accounting off (the model before).
Usage: scripts/rcv-window-replay-holes.py mobile.pcap [-v]"""
import importlib.util, sys, os
MSS=1448; TRUE=2304; RATIO=160; WS=10; CAP=33554432
LAG=float(os.environ.get('LAG','0'))
INQ=os.environ.get('INQ','1')=='1'
OFO=os.environ.get('OFO','1')=='1'
def win(space): return (space*RATIO)>>8
def space_from_win(w): return (w<<8)//RATIO
def align(x): return -(-x//(1<<WS))<<WS
# The receiver capture's TCP rows, as the in-order replay reads them.
_spec = importlib.util.spec_from_file_location("rcv_window_replay", os.path.join(os.path.dirname(os.path.abspath(__file__)), "rcv-window-replay.py"))
_replay = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_replay)
rows = _replay.rows
def main(p, verbose):
    R=rows(p); t0=R[0][0]
    acks=[(x[0]-t0,x[5]) for x in R if x[1]=='10.0.1.1']
    lo,hi=-1e18,1e18
    for t,v in acks: lo=max(lo,v-t*1000); hi=min(hi,v+1-t*1000)
    c=(lo+hi)/2; clock=lambda t:int(t*1000+c)
    S=131072; clamp=win(S); ssth=65160
    est=None; last_ecr=None
    hs=[x for x in R if x[1]=='10.0.0.1' and x[4]==0]
    mark_t=hs[1][0]-t0; mark_seq=0; space=int(os.environ.get("SPACE0",14600))
    rcv_nxt=1; ooo={}  # start seq -> end seq, byte ranges (one skb each)
    rmem_ofo=0; unread=0  # bytes of truesize
    right=1+65160  # right edge advertised (SYN-ACK window unscaled)
    ok=bad=0; nofo_ok=nofo_bad=0; first_bad=None; n=0
    def rcvbuf_grow(newval):
        nonlocal S,clamp,space
        old=space; space=newval
        rw=2*newval
        rw+=2*(rw*(newval-old)//old)
        if OFO and ooo: rw+=max(ooo.values())-rcv_nxt
        rb=min(space_from_win(rw),CAP)
        if rb>S: S=rb; clamp=win(S)
    def grow(length):
        nonlocal ssth
        if length<128: return
        tsp=win(S-unread-(rmem_ofo if OFO else 0))
        room=min(clamp,tsp)-ssth
        if room<=0: return
        incr=max(2*MSS,2*length)
        ssth+=min(room,incr)
    def select():
        free=win(S-unread-(rmem_ofo if OFO else 0))
        allowed=win(S); full=min(clamp,allowed); mss=min(MSS,full)
        if free<full//2:
            free=free//1024*1024
            if free<(allowed>>4) or free<mss: return 0
        free=min(free,ssth)
        return align(free)
    last_data_t=-1; pend=0
    for x in R:
        t=x[0]-t0
        if x[1]=='10.0.0.1' and x[4]>0:
            seq,end=x[2],x[2]+x[4]
            ecr=x[6]
            if ecr!=last_ecr:
                last_ecr=ecr
                if x[4]>=MSS:
                    d=clock(t)-ecr
                    if d>0:
                        s=d*1000
                        est=s if est is None or s<est else est-est/8+s/8
            if end<=rcv_nxt: continue  # duplicate
            if seq>rcv_nxt:
                if seq in ooo: continue
                # out of order: tcp_grow_window before skb_set_owner_r (SACK)
                grow(x[4])
                ooo[seq]=end; rmem_ofo+=TRUE
                if OFO: rcvbuf_grow(space)
                continue
            # in order
            rcv_nxt=max(rcv_nxt,end); unread+=TRUE
            while True:
                nxt=[s for s in ooo if s<=rcv_nxt]
                if not nxt: break
                for s in nxt:
                    rcv_nxt=max(rcv_nxt,ooo.pop(s)); rmem_ofo-=TRUE; unread+=TRUE
            grow(x[4])
            last_data_t=t; pend=unread; unread=0
            if est is not None and (t-mark_t)*1e6>=est+LAG*1000:
                # tcp_recvmsg: tcp_rcv_space_adjust after the first skb read,
                # less what is still queued (inq); it resets the measure
                first=(end-1) if INQ else (rcv_nxt-1)
                copied=first-mark_seq-(rcv_nxt-1-first)
                if copied>space: rcvbuf_grow(copied)
                mark_seq=first; mark_t=t
            continue
        if x[1]=='10.0.1.1' and x[4]==0 and x[3]>1:
            # ACK: immediate (within 200 us of the data) sees unread data
            imm = t-last_data_t<0.0002
            unread = pend if imm else 0
            newin=select()
            unread=0
            cur=max(right-rcv_nxt,0)
            if newin<cur: newin=align(cur)
            right=rcv_nxt+newin
            obs=x[7]<<WS
            good=obs==newin
            ok+=good; bad+=not good
            if ooo:
                nofo_ok+=good; nofo_bad+=not good
            if not good and first_bad is None: first_bad=(round(t,4),(x[3]-1)//MSS)
            if verbose and (not good or ooo): print(f'{t:.4f} ack={(x[3]-1)//MSS} obs={obs} pred={newin} {"OK" if good else "BAD"} ofo={len(ooo)} S={S} clamp={clamp} ssth={ssth} unread={unread}')
    print(p,'OFO' if OFO else 'noOFO','ACK windows predicted',ok,'mismatched',bad,'| with a hole open: ok',nofo_ok,'bad',nofo_bad,'| first mismatch',first_bad)
main(sys.argv[1],'-v' in sys.argv)
