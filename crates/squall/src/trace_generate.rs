//! `squall trace generate gilbert` and `states`: synthetic files of the
//! two formats that are not rate traces (issue 30).
//!
//! - `gilbert`: per-packet loss decisions (`error = { sequence = { file
//!   } }`, [`squall_scenario::loss_sequence`]) drawn from Gilbert's
//!   two-state model (Gilbert 1960; tc-netem(8) `loss gemodel p r`, the
//!   "simple Gilbert" case): a packet in the bad state is lost, one in the
//!   good state gets through; each packet first moves good → bad with
//!   probability p, bad → good with probability r. Stationary loss
//!   p / (p + r), mean loss burst 1 / r packets (docs/validation.md case 8).
//! - `states`: a state series (`state_series = { file }`,
//!   [`squall_scenario::state_series`]) over named `[[states]]`: at each
//!   interval the series moves to the next state in the list (cyclically)
//!   with probability `switch`, so `switch = 1` takes them in turn and a
//!   smaller one holds each a geometric number of intervals (mean
//!   1 / switch).
//!
//! Both draw from `squall_link::rng::stream(seed, "trace/NAME")`, so a
//! file is the same for the same arguments on every machine.

use anyhow::{Result, bail};
use squall_link::{Distribution, Sampler};

/// The most decisions `gilbert` writes: as many as a decision file holds.
const MAX_DECISIONS: u64 = squall_link::loss_sequence::MAX_DECISIONS as u64;

/// `count` loss decisions (1 drop, 0 keep) of Gilbert's model, as a
/// decision file with a comment saying how it was made.
pub fn gilbert_decisions(p: f64, r: f64, count: u64, seed: u64) -> Result<String> {
    for (flag, v) in [("--p", p), ("--r", r)] {
        if !(0.0..=1.0).contains(&v) {
            bail!("{flag} {v}: expected a probability from 0 to 1");
        }
    }
    if p + r == 0.0 {
        bail!("--p and --r are both 0: the chain never moves; expected at least one above 0");
    }
    if !(1..=MAX_DECISIONS).contains(&count) {
        bail!("--count {count}: expected 1 to {MAX_DECISIONS} decisions (a decision file's most; it loops)");
    }
    let chain = Distribution::TwoStateMarkov { a: 0.0, b: 1.0, p_ab: p, p_ba: r };
    let mut s = Sampler::new(chain, squall_link::rng::stream(seed, "trace/gilbert"));
    let mut text = format!(
        "# loss decisions, one per packet (1 drop, 0 keep): squall trace generate gilbert --p {p} --r {r} \
         --count {count} --seed {seed}\n# Gilbert's model: stationary loss p/(p+r) = {:.4}, mean loss burst 1/r = {}\n",
        p / (p + r),
        if r > 0.0 { format!("{:.2} packets", 1.0 / r) } else { "endless".to_string() }
    );
    text.reserve(2 * count as usize);
    for _ in 0..count {
        text.push_str(if s.sample() == 1.0 { "1\n" } else { "0\n" });
    }
    Ok(text)
}

/// A state series over `states` in intervals of `interval_ms` for
/// `intervals` intervals: a row where the state changes, the first at 0,
/// and a last row at the end (the period when the scenario loops it).
pub fn state_series(states: &[String], switch: f64, interval_ms: u64, intervals: u64, seed: u64) -> Result<String> {
    if states.is_empty() {
        bail!("states needs --states, the [[states]] names in turn, e.g. --states \"good,tunnel\"");
    }
    if let Some(bad) = states.iter().find(|s| s.is_empty() || s.contains(|c: char| c == ',' || c.is_whitespace())) {
        bail!("--states: {bad:?} is not a state name; expected names without blanks or commas, e.g. \"good,tunnel\"");
    }
    if !(0.0..=1.0).contains(&switch) {
        bail!("--switch {switch}: expected a probability from 0 to 1");
    }
    let mut rng = squall_link::rng::stream(seed, "trace/states");
    let mut text = format!(
        "# state series: squall trace generate states --states {} --switch {switch} --interval \"{interval_ms} ms\" \
         --duration \"{} ms\" --seed {seed}\ntime (ms),state\n0,{}\n",
        states.join(","),
        interval_ms * intervals,
        states[0]
    );
    let mut at = 0;
    for i in 1..intervals {
        if switch > 0.0 && squall_link::dist::unit(&mut rng) < switch {
            at = (at + 1) % states.len();
            text.push_str(&format!("{},{}\n", i * interval_ms, states[at]));
        }
    }
    text.push_str(&format!("{},{}\n", intervals * interval_ms, states[at]));
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decisions(text: &str) -> Vec<bool> {
        text.lines().filter(|l| !l.starts_with('#')).map(|l| l == "1").collect()
    }

    /// p = 1 %, r = 25 %: stationary loss 1/26 = 3.85 %, mean burst 4
    /// packets. Over 10⁶ decisions (bursts of mean 4, about 9 600 of them:
    /// the loss fraction's standard error is about 0.06 points, the mean
    /// burst's 0.03 packets) within 0.3 points and 0.15 packets.
    #[test]
    fn gilbert_has_its_stationary_loss_and_burst_length() {
        let d = decisions(&gilbert_decisions(0.01, 0.25, 1_000_000, 7).unwrap());
        assert_eq!(d.len(), 1_000_000);
        let loss = d.iter().filter(|&&x| x).count() as f64 / d.len() as f64;
        assert!((loss - 1.0 / 26.0).abs() < 0.003, "{loss}");
        let bursts = d.windows(2).filter(|w| !w[0] && w[1]).count() + usize::from(d[0]);
        let burst = d.iter().filter(|&&x| x).count() as f64 / bursts as f64;
        assert!((burst - 4.0).abs() < 0.15, "{burst}");
    }

    #[test]
    fn gilbert_is_the_same_for_the_same_seed_and_refuses_bad_arguments() {
        assert_eq!(gilbert_decisions(0.1, 0.5, 1000, 3).unwrap(), gilbert_decisions(0.1, 0.5, 1000, 3).unwrap());
        assert_ne!(gilbert_decisions(0.1, 0.5, 1000, 3).unwrap(), gilbert_decisions(0.1, 0.5, 1000, 4).unwrap());
        assert!(gilbert_decisions(1.5, 0.5, 10, 1).unwrap_err().to_string().contains("--p 1.5"));
        assert!(gilbert_decisions(0.0, 0.0, 10, 1).unwrap_err().to_string().contains("both 0"));
        assert!(gilbert_decisions(0.1, 0.5, 0, 1).unwrap_err().to_string().contains("--count 0"));
    }

    /// switch = 1: the states in turn, one per interval, and the end row.
    #[test]
    fn states_in_turn_with_switch_one() {
        let names = ["good".to_string(), "tunnel".to_string()];
        let text = state_series(&names, 1.0, 500, 4, 1).unwrap();
        let rows: Vec<&str> = text.lines().skip(1).collect();
        assert_eq!(rows, ["time (ms),state", "0,good", "500,tunnel", "1000,good", "1500,tunnel", "2000,tunnel"]);
        // switch = 0: the first state throughout.
        let text = state_series(&names, 0.0, 500, 4, 1).unwrap();
        assert_eq!(text.lines().skip(2).collect::<Vec<_>>(), ["0,good", "2000,good"]);
        assert!(state_series(&["a b".to_string()], 0.5, 1, 1, 1).is_err());
        assert!(state_series(&[], 0.5, 1, 1, 1).is_err());
    }
}
