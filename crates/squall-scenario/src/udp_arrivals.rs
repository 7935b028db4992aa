//! A UDP flow's packets as an arrival process ([`squall_link::arrival`];
//! seed 001 §3.1's source): the simulator's UDP source and `squall tool
//! udp-flow` both build it here, so the same scenario and seed give the
//! same packets in both engines.

use squall_link::arrival::{ArrivalProcess, ArrivalSpec, Burst, First, Pace};
use squall_link::rng::stream;
use squall_link::{Distribution, Duration, Instant};

use crate::schema::{Arrivals, UdpFlow};

impl UdpFlow {
    /// The flow's arrival process: its first packet at `start`, none at or
    /// after `end` (the end of the run) or its own `stop`. A rate paces
    /// each packet by its size; `arrivals = "poisson"` makes the gaps
    /// exponential with the mean of the rate's or the interval's. Errors
    /// name the key and what is wrong.
    pub fn arrival_spec(&self, end: Instant) -> Result<ArrivalSpec, String> {
        let name = &self.name;
        let check = |key: &str, r: Result<(), squall_link::dist::DistributionError>| {
            r.map_err(|e| format!("workload.udp `{name}`: `{key}`: {e}"))
        };
        check("size", self.size.validate())?;
        let mean_size = self.size.mean().filter(|m| *m >= 0.0);
        // Mean gap in ns, for a Poisson source and the zero-gap check.
        let (pace, mean_gap) = match (self.rate, &self.interval) {
            (Some(rate), None) => {
                let mean = mean_size.map(|s| s * 8.0 * 1e9 / rate.bits_per_sec() as f64);
                (Pace::Rate(rate), mean)
            }
            (None, Some(interval)) => {
                check("interval", interval.validate())?;
                (Pace::Gaps(interval.clone()), interval.mean())
            }
            _ => return Err(format!("workload.udp `{name}`: give exactly one of `rate` and `interval`")),
        };
        if mean_gap.is_some_and(|g| g.is_nan() || g < 1.0) {
            return Err(format!(
                "workload.udp `{name}`: the mean gap between packets is under 1 ns (a zero size or interval?)"
            ));
        }
        let pace = match self.arrivals {
            Arrivals::Constant => pace,
            Arrivals::Poisson => {
                let Some(mean) = mean_gap else {
                    return Err(format!(
                        "workload.udp `{name}`: poisson arrivals need a size or interval distribution with a mean"
                    ));
                };
                Pace::Gaps(Distribution::Exponential { mean: Duration::from_nanos_f64(mean) })
            }
        };
        let on_off = match (&self.on, &self.off) {
            (None, None) => None,
            (Some(on), Some(off)) => {
                check("on", on.validate())?;
                check("off", off.validate())?;
                Some((on.clone(), off.clone()))
            }
            _ => return Err(format!("workload.udp `{name}`: give both `on` and `off`, or neither")),
        };
        Ok(ArrivalSpec {
            pace,
            size: self.size.clone(),
            burst: Burst::Fixed(1),
            on_off,
            first: First::After(Duration::ZERO),
            start: Instant::ZERO + self.start,
            stop: self.stop.map_or(end, |s| end.min(Instant::ZERO + s)),
            count: self.count,
        })
    }

    /// [`UdpFlow::arrival_spec`] running, its random streams named after
    /// the flow ("udp/NAME/size", ".../gap", ".../on", ".../off") in
    /// replication `seed`.
    pub fn arrival_process(&self, seed: u64, end: Instant) -> Result<ArrivalProcess, String> {
        let spec = self.arrival_spec(end)?;
        Ok(ArrivalProcess::new(&spec, |component| stream(seed, &format!("udp/{}/{component}", self.name))))
    }
}
