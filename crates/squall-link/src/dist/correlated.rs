//! Correlated draws, as tc-netem(8) gives them to `delay D J C`, `loss P C`,
//! `corrupt P C`, `duplicate P C` and `reorder P C`.
//!
//! Two generators:
//!
//! - [`CorrelationGenerator::Netem`], Linux's `get_crandom()`
//!   (net/sched/sch_netem.c): a 32-bit value `x_n = ((2^32 − ρ′)·U_n +
//!   ρ′·x_{n−1}) >> 32` with `ρ′ = ρ·(2^32−1) + 1`, compared with the
//!   probability scaled to 32 bits (`set_percent` in iproute2
//!   `tc/q_netem.c`). Its known flaw, kept on purpose for compatibility:
//!   the marginal of `x_n` is no longer uniform (its variance shrinks as ρ
//!   grows), so an event of probability `p` does not happen with
//!   probability `p` (`loss 0.3% 25%` loses almost nothing, `loss 10% 25%`
//!   1.8 % in a 100 s run of 1 Mbit/s UDP, 185 of 10 417). NIST
//!   Net's `README.distribution` (III.2, shipped in iproute2's `netem/`)
//!   calls the method "somewhat sleazy"; the pre-6.3 tc-netem(8) called
//!   loss correlation deprecated for that behaviour. For a delay, netem
//!   reduces the correlated value modulo `2·J` (in ns) or modulo the
//!   table's size (`tabledist()`), which scrambles the correlation away.
//! - [`CorrelationGenerator::Markov`], squall's fix: with probability ρ
//!   the previous outcome (event or delay) is repeated, otherwise a fresh
//!   one is drawn. The marginal is exactly the model's (`P(event) = p`,
//!   the jitter's distribution unchanged) and the lag-k correlation is
//!   ρ^k; for events `P(event | previous event) = ρ + (1 − ρ)·p`.

use rand::Rng;
use serde::{Deserialize, Serialize};

use super::{Distribution, Sampler, unit};
use crate::rng::StreamRng;
use crate::time::Duration;
use crate::units::Probability;

/// Which generator makes a correlated draw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CorrelationGenerator {
    /// Repeat the previous outcome with probability ρ, else draw afresh:
    /// the stated marginal and a lag-1 correlation of ρ.
    #[default]
    Markov,
    /// Linux netem's `get_crandom()`, flaws included (module docs).
    Netem,
}

impl CorrelationGenerator {
    pub fn as_str(self) -> &'static str {
        match self {
            CorrelationGenerator::Markov => "markov",
            CorrelationGenerator::Netem => "netem",
        }
    }
}

/// A correlation between successive draws: `{ correlation = "25%",
/// generator = "markov" }` (the generator defaults to `markov`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Correlation {
    /// ρ, 0..=1.
    pub correlation: Probability,
    #[serde(default)]
    pub generator: CorrelationGenerator,
}

/// `p` as netem stores it: `rint(p · (2^32 − 1))` (iproute2 `tc/q_netem.c`
/// `set_percent`).
fn scaled_u32(p: f64) -> u32 {
    (p * f64::from(u32::MAX)).round_ties_even() as u32
}

/// The state of one correlated decision or draw (netem's `struct crndstate`).
#[derive(Clone, Debug)]
pub struct Correlated {
    correlation: Option<Correlation>,
    /// netem: the last 32-bit value (`init_crandom` starts it at a random
    /// value; here from the stream).
    last_u32: u32,
    /// Markov: the last event, once there is one.
    last_event: Option<bool>,
    /// Markov: the last delay drawn, in ns.
    last_delay: Option<Duration>,
    rng: StreamRng,
}

impl Correlated {
    /// `rng` is this decision's own stream (the correlation's draws never
    /// shift another component's numbers).
    pub fn new(correlation: Option<Correlation>, mut rng: StreamRng) -> Self {
        let last_u32 = rng.next_u32();
        Correlated { correlation, last_u32, last_event: None, last_delay: None, rng }
    }

    /// A state change: the new correlation applies from the next draw; the
    /// history is kept (netem keeps `last` across `tc qdisc change` too).
    pub fn set_correlation(&mut self, correlation: Option<Correlation>) {
        self.correlation = correlation;
    }

    /// netem's `get_crandom()` with correlation ρ.
    fn netem_u32(&mut self, rho: f64) -> u32 {
        let value = u64::from(self.rng.next_u32());
        let rho = u64::from(scaled_u32(rho));
        if rho == 0 {
            return value as u32;
        }
        let rho = rho + 1;
        let answer = (value * ((1u64 << 32) - rho) + u64::from(self.last_u32) * rho) >> 32;
        self.last_u32 = answer as u32;
        self.last_u32
    }

    /// Whether an event of probability `p` happens now. Without a
    /// correlation: `unit < p`, one draw.
    pub fn happens(&mut self, p: f64) -> bool {
        let Some(c) = self.correlation else { return unit(&mut self.rng) < p };
        let rho = c.correlation.get();
        match c.generator {
            CorrelationGenerator::Netem => {
                // sch_netem.c `loss_event()`: lost if `loss >= get_crandom()`
                // and `loss != 0`.
                let p = scaled_u32(p);
                p != 0 && p >= self.netem_u32(rho)
            }
            CorrelationGenerator::Markov => {
                let event = match self.last_event {
                    Some(last) if unit(&mut self.rng) < rho => last,
                    _ => unit(&mut self.rng) < p,
                };
                self.last_event = Some(event);
                event
            }
        }
    }

    /// A delay from `jitter`, correlated with the ones before. netem's
    /// generator reduces its 32-bit value modulo the uniform range (ns) or
    /// the table's size, as `tabledist()` does; for squall's other
    /// distributions (netem has no equivalent) it draws independently.
    pub fn delay(&mut self, jitter: &mut Sampler<Duration>) -> Duration {
        let Some(c) = self.correlation else { return jitter.sample() };
        let rho = c.correlation.get();
        match c.generator {
            CorrelationGenerator::Netem => match jitter.distribution() {
                &Distribution::Uniform { low, high } => {
                    let range = high.as_nanos().saturating_sub(low.as_nanos());
                    let x = u64::from(self.netem_u32(rho));
                    if range == 0 { low } else { Duration::from_nanos(low.as_nanos() + x % range) }
                }
                Distribution::NetemTable { table, entries, mu, sigma, .. } => {
                    let t = crate::dist::netem_entries(table, entries);
                    if t.is_empty() {
                        return Duration::ZERO;
                    }
                    let x = self.netem_u32(rho) as usize;
                    Duration::from_nanos_f64(crate::dist::netem_table::table_delay(
                        t,
                        x % t.len(),
                        mu.as_nanos() as f64,
                        sigma.as_nanos() as f64,
                    ))
                }
                _ => jitter.sample(),
            },
            CorrelationGenerator::Markov => {
                let d = match self.last_delay {
                    Some(last) if unit(&mut self.rng) < rho => last,
                    _ => jitter.sample(),
                };
                self.last_delay = Some(d);
                d
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream;

    fn corr(rho: f64, generator: CorrelationGenerator) -> Option<Correlation> {
        Some(Correlation { correlation: Probability::new(rho).unwrap(), generator })
    }

    /// Markov: P(event) = p and P(event | event before) = ρ + (1 − ρ)p, by
    /// construction (a two-state chain with stay-probability ρ + (1−ρ)p in
    /// the event state). p = 0.1, ρ = 0.5: 0.1 and 0.55. 10⁶ draws: the
    /// marginal's σ (runs correlated, factor (1+λ)/(1−λ) = 3 with λ = ρ)
    /// is √(0.09·3/10⁶) = 0.00052, the conditional's (about 10⁵
    /// conditioning events) √(0.55·0.45/10⁵) = 0.0016; tolerances are 5σ.
    #[test]
    fn markov_keeps_the_marginal_and_gives_the_conditional() {
        let mut c = Correlated::new(corr(0.5, CorrelationGenerator::Markov), stream(3, "test/corr"));
        let n = 1_000_000;
        let draws: Vec<bool> = (0..n).map(|_| c.happens(0.1)).collect();
        let p = draws.iter().filter(|&&d| d).count() as f64 / n as f64;
        let after: Vec<bool> = draws.windows(2).filter(|w| w[0]).map(|w| w[1]).collect();
        let cond = after.iter().filter(|&&d| d).count() as f64 / after.len() as f64;
        assert!((p - 0.1).abs() < 0.0026, "P(event) {p}");
        assert!((cond - 0.55).abs() < 0.008, "P(event | event) {cond}");
    }

    /// netem's generator with ρ = 0 is plain: `loss 10%` loses 10 %; with
    /// ρ = 25 % it loses far less, and its losses cluster. The figures
    /// come from the generator's definition, not from this code: the
    /// stationary value `Σ (1 − ρ)ρ^k·U_k` has P(x ≤ 0.1) = 0.0175 and
    /// P(x_n ≤ 0.1 | x_{n−1} ≤ 0.1) = 0.1082, P(x ≤ 0.003) = 4·10⁻⁹
    /// (crates/squall/tests/common/netem_theory.rs integrates it on a grid
    /// and checks itself against the recurrence run with another
    /// generator). 4·10⁵ draws: σ of the marginal √(0.0175·0.9825/4·10⁵)
    /// = 0.00021, of the conditional (7 000 events) 0.0037, each widened
    /// by 1.13 for the clustering; 4.5σ. Without the correlation (10 %)
    /// or with a fresh x each time (P(e|e) = P(e)) this fails.
    #[test]
    fn netem_generator_loses_less_than_stated_as_the_kernel_does() {
        let mut plain = Correlated::new(corr(0.0, CorrelationGenerator::Netem), stream(4, "t"));
        let n = 400_000;
        let p0 = (0..n).filter(|_| plain.happens(0.1)).count() as f64 / n as f64;
        assert!((p0 - 0.1).abs() < 0.003, "{p0}");
        let mut c = Correlated::new(corr(0.25, CorrelationGenerator::Netem), stream(4, "t"));
        let draws: Vec<bool> = (0..n).map(|_| c.happens(0.1)).collect();
        let p = draws.iter().filter(|&&d| d).count() as f64 / n as f64;
        assert!((p - 0.0175).abs() < 4.5 * 1.13 * 0.00021, "netem's loss 10% 25% gave {p}");
        let after: Vec<bool> = draws.windows(2).filter(|w| w[0]).map(|w| w[1]).collect();
        let cond = after.iter().filter(|&&d| d).count() as f64 / after.len() as f64;
        let sd = (0.1082 * 0.8918 / after.len() as f64).sqrt();
        assert!((cond - 0.1082).abs() < 4.5 * 1.13 * sd, "netem's P(loss | loss) gave {cond}");
        let mut c = Correlated::new(corr(0.25, CorrelationGenerator::Netem), stream(5, "t"));
        let lost = (0..n).filter(|_| c.happens(0.003)).count();
        assert!(lost < 40, "netem's loss 0.3% 25% lost {lost} of {n}");
    }
}
