//! Scenarios built into the binary, so that `squall sim builtin:NAME` works
//! from any directory. The files live under scenarios/.

pub struct Builtin {
    pub name: &'static str,
    pub summary: &'static str,
    pub file: &'static str,
    pub text: &'static str,
}

macro_rules! builtin {
    ($name:literal, $file:literal, $summary:literal) => {
        Builtin {
            name: $name,
            summary: $summary,
            file: concat!("scenarios/", $file),
            text: include_str!(concat!("../../../scenarios/", $file)),
        }
    };
}

pub const ALL: &[Builtin] = &[
    builtin!(
        "gsm-udp",
        "gsm-udp.toml",
        "Seawind's GSM link (seed 000 Table 1), 1% then 10% errors, a blackout, UDP both ways"
    ),
    builtin!(
        "gsm-reno",
        "gsm-reno.toml",
        "Seawind's case study (seed 000 §7 Table 2): 100 KB transfer over GSM, Reno with SACK recovery (cc = \"sack\"), 20 replications"
    ),
    builtin!("seed001-e2e", "seed001-e2e.toml", "seed 001 §5: fixed host - base station - mobile, end-to-end Tahoe"),
    builtin!(
        "seed001-split",
        "seed001-split.toml",
        "seed 001 §5: fixed host - base station - mobile, split TCP at the base station"
    ),
    builtin!("mm1", "validation/01-mm1.toml", "validation case 1: M/M/1 queue"),
    builtin!("md1", "validation/02-md1.toml", "validation case 2: M/D/1 queue"),
    builtin!("mm1k", "validation/03-mm1k.toml", "validation case 3: M/M/1/K blocking"),
    builtin!(
        "serialisation",
        "validation/04-serialisation.toml",
        "validation case 4: serialisation + propagation + allocation"
    ),
    builtin!("rate", "validation/05-rate.toml", "validation case 5: saturated 10 Mbit/s stage"),
    builtin!("fragmentation", "validation/06-fragmentation.toml", "validation case 6: link frames with headers"),
    builtin!("bit-errors", "validation/07-bit-errors.toml", "validation case 7: per-bit errors"),
    builtin!("gilbert-elliott", "validation/08-gilbert-elliott.toml", "validation case 8: Gilbert-Elliott bursts"),
    builtin!("arq", "validation/09-arq.toml", "validation case 9: link ARQ"),
    builtin!(
        "window-limited",
        "validation/10-window-limited.toml",
        "validation case 10: TCP limited by a 64 KB window"
    ),
    builtin!(
        "mathis",
        "validation/11-mathis.toml",
        "validation case 11: NewReno and classic Reno under random loss (Mathis and Padhye formulas)"
    ),
    builtin!("asymmetric", "validation/12-asymmetric.toml", "validation case 12: 10 Mbit/s down, 28.8 kbit/s up"),
    builtin!(
        "radio-capacity",
        "validation/13-radio-capacity.toml",
        "validation case 13: TCP over error-free radio links, BPSK to 256-QAM (seed 002 Table II)"
    ),
    builtin!(
        "fading",
        "validation/14-fading.toml",
        "validation case 14: seed 002's fading channel (Rayleigh, J0, shadowing), UDP with adaptive modulation"
    ),
    builtin!(
        "strict-priority",
        "validation/15-strict-priority.toml",
        "validation case 15: strict priority between a CBR class and a saturating class"
    ),
    builtin!("wrr-drr", "validation/16-wrr-drr.toml", "validation case 16: WRR weights 1:2:5 and byte-fair DRR"),
    builtin!("aqm", "validation/17-aqm.toml", "validation case 17: CoDel and PIE beside tail drop, 4 TCP flows each"),
    builtin!(
        "fq-codel",
        "validation/18-fq-codel.toml",
        "validation case 18: a sparse flow beside a bulk flow in FQ-CoDel"
    ),
    builtin!(
        "background",
        "validation/19-background.toml",
        "validation case 19: CBR background under strict priority; Poisson background in M/D/1 and M/M/1 queues"
    ),
    builtin!(
        "degrader",
        "degrader.toml",
        "seed 003 §2.2: the quality degrader's 8 classified queues with background load, WRR, rate and delay"
    ),
    builtin!(
        "degrader-vacations",
        "degrader-vacations.toml",
        "seed 003 §2.2: the degrader's server with vacations instead of background traffic"
    ),
    builtin!(
        "seawind-bgl",
        "seawind-bgl.toml",
        "seed 000 Figure 4: background load generated at one stage and forwarded to the next (BGL)"
    ),
    builtin!(
        "seawind-flow-control",
        "seawind-flow-control.toml",
        "seed 000 §4.2: link-level flow control between a router stage and a slow radio stage"
    ),
    builtin!(
        "seed002",
        "seed002.toml",
        "seed 002 §III: TCP bulk download over the 4G radio downlink (16 dB, 75 km/h), adaptive, 10 link retransmissions"
    ),
];

pub fn find(name: &str) -> Option<&'static Builtin> {
    ALL.iter().find(|b| b.name == name)
}
