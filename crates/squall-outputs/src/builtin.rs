//! Scenarios built into the binary, so that `squall sim builtin:NAME` works
//! from any directory. The files live under scenarios/.

pub struct Builtin {
    pub name: &'static str,
    pub summary: &'static str,
    /// What running it shows, in one line (`squall scenarios`).
    pub demonstrates: &'static str,
    pub file: &'static str,
    pub text: &'static str,
}

macro_rules! builtin {
    ($name:literal, $file:literal, $summary:literal, $demonstrates:literal) => {
        Builtin {
            name: $name,
            summary: $summary,
            demonstrates: $demonstrates,
            file: concat!("scenarios/", $file),
            text: include_str!(concat!("../../../scenarios/", $file)),
        }
    };
}

pub const ALL: &[Builtin] = &[
    builtin!(
        "gsm-udp",
        "gsm-udp.toml",
        "Seawind's GSM link (seed 000 Table 1), 1% then 10% errors, a blackout, UDP both ways",
        "how timed states and a blackout change a slow, lossy link's delivery, delay and drops over one run"
    ),
    builtin!(
        "gsm-reno",
        "gsm-reno.toml",
        "Seawind's case study (seed 000 §7 Table 2): 100 KB transfer over GSM, Reno with SACK recovery (cc = \"sack\"), 20 replications",
        "how link errors, small link buffers and a 9600 bit/s link stretch a TCP transfer's elapsed time, spread over replications"
    ),
    builtin!(
        "seed001-e2e",
        "seed001-e2e.toml",
        "seed 001 §5: fixed host - base station - mobile, end-to-end Tahoe",
        "end-to-end TCP losing its window to wireless losses (the baseline split TCP is compared with)"
    ),
    builtin!(
        "seed001-split",
        "seed001-split.toml",
        "seed 001 §5: fixed host - base station - mobile, split TCP at the base station",
        "what splitting the connection at the base station gains over end-to-end TCP on the same path"
    ),
    builtin!(
        "mm1",
        "validation/01-mm1.toml",
        "validation case 1: M/M/1 queue",
        "the simulator's queue against M/M/1 theory: mean response time and queue-length distribution"
    ),
    builtin!(
        "md1",
        "validation/02-md1.toml",
        "validation case 2: M/D/1 queue",
        "the simulator's queue against M/D/1 theory: mean waiting time with a fixed service time"
    ),
    builtin!(
        "mm1k",
        "validation/03-mm1k.toml",
        "validation case 3: M/M/1/K blocking",
        "a finite tail-drop queue's blocking probability against M/M/1/K theory"
    ),
    builtin!(
        "serialisation",
        "validation/04-serialisation.toml",
        "validation case 4: serialisation + propagation + allocation",
        "how serialisation, propagation and allocation delay add up for one packet, to the nanosecond"
    ),
    builtin!(
        "rate",
        "validation/05-rate.toml",
        "validation case 5: saturated 10 Mbit/s stage",
        "a stage's rate limit holding exactly under overload, window by window"
    ),
    builtin!(
        "fragmentation",
        "validation/06-fragmentation.toml",
        "validation case 6: link frames with headers",
        "link frames with headers: a packet's transmission time from its frame count"
    ),
    builtin!(
        "bit-errors",
        "validation/07-bit-errors.toml",
        "validation case 7: per-bit errors",
        "per-bit errors turning into a packet error probability that grows with packet size"
    ),
    builtin!(
        "gilbert-elliott",
        "validation/08-gilbert-elliott.toml",
        "validation case 8: Gilbert-Elliott bursts",
        "bursty loss: the stationary loss rate and mean burst length of a two-state channel"
    ),
    builtin!(
        "arq",
        "validation/09-arq.toml",
        "validation case 9: link ARQ",
        "link-layer retransmission: residual loss and mean transmissions per frame"
    ),
    builtin!(
        "window-limited",
        "validation/10-window-limited.toml",
        "validation case 10: TCP limited by a 64 KB window",
        "a TCP flow capped by its receive window at W/RTT, below the link's rate"
    ),
    builtin!(
        "mathis",
        "validation/11-mathis.toml",
        "validation case 11: NewReno and classic Reno under random loss (Mathis and Padhye formulas)",
        "TCP throughput under random loss against the Mathis and Padhye formulas"
    ),
    builtin!(
        "asymmetric",
        "validation/12-asymmetric.toml",
        "validation case 12: 10 Mbit/s down, 28.8 kbit/s up",
        "a slow uplink's ACK stream clocking a fast downlink's TCP sender"
    ),
    builtin!(
        "radio-capacity",
        "validation/13-radio-capacity.toml",
        "validation case 13: TCP over error-free radio links, BPSK to 256-QAM (seed 002 Table II)",
        "TCP goodput over radio frames of each modulation, BPSK to 256-QAM, against Table II's capacity"
    ),
    builtin!(
        "fading",
        "validation/14-fading.toml",
        "validation case 14: seed 002's fading channel (Rayleigh, J0, shadowing), UDP with adaptive modulation",
        "a fading radio channel's statistics (Rayleigh envelope, Doppler spectrum, shadowing) and adaptive modulation"
    ),
    builtin!(
        "strict-priority",
        "validation/15-strict-priority.toml",
        "validation case 15: strict priority between a CBR class and a saturating class",
        "strict priority: the low class gets what the high class leaves, the high class waits at most one packet"
    ),
    builtin!(
        "wrr-drr",
        "validation/16-wrr-drr.toml",
        "validation case 16: WRR weights 1:2:5 and byte-fair DRR",
        "weighted and deficit round robin sharing a link by weight and by bytes"
    ),
    builtin!(
        "aqm",
        "validation/17-aqm.toml",
        "validation case 17: CoDel and PIE beside tail drop, 4 TCP flows each",
        "CoDel and PIE keeping queueing delay near their targets where tail drop fills the queue"
    ),
    builtin!(
        "fq-codel",
        "validation/18-fq-codel.toml",
        "validation case 18: a sparse flow beside a bulk flow in FQ-CoDel",
        "flow queueing: a sparse flow's delay stays low beside a bulk flow"
    ),
    builtin!(
        "background",
        "validation/19-background.toml",
        "validation case 19: CBR background under strict priority; Poisson background in M/D/1 and M/M/1 queues",
        "virtual background load taking link capacity and queue space without reaching a host"
    ),
    builtin!(
        "degrader",
        "degrader.toml",
        "seed 003 §2.2: the quality degrader's 8 classified queues with background load, WRR, rate and delay",
        "classified queues with their own background load and WRR, and a state that doubles one class's load"
    ),
    builtin!(
        "degrader-vacations",
        "degrader-vacations.toml",
        "seed 003 §2.2: the degrader's server with vacations instead of background traffic",
        "a server with vacations standing in for the other streams' service"
    ),
    builtin!(
        "seawind-bgl",
        "seawind-bgl.toml",
        "seed 000 Figure 4: background load generated at one stage and forwarded to the next (BGL)",
        "background load forwarded from one stage to the next and taking capacity at both"
    ),
    builtin!(
        "seawind-flow-control",
        "seawind-flow-control.toml",
        "seed 000 §4.2: link-level flow control between a router stage and a slow radio stage",
        "link-level flow control: a slow stage's window holding packets back in the stage before it"
    ),
    builtin!(
        "seed002",
        "seed002.toml",
        "seed 002 §III: TCP bulk download over the 4G radio downlink (16 dB, 75 km/h), adaptive, 10 link retransmissions",
        "TCP over a fading 4G radio downlink with adaptive modulation and link retransmissions"
    ),
];

pub fn find(name: &str) -> Option<&'static Builtin> {
    ALL.iter().find(|b| b.name == name)
}
