//! The wall clock as the model's time: an [`Instant`] is the offset from
//! the start of the run (docs/design.md, "The sans-IO rule": own time types).

use squall_link::{Duration, Instant};

/// The run's clock (CLOCK_MONOTONIC through `std::time::Instant`).
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    start: std::time::Instant,
}

impl Clock {
    /// A clock whose zero is now.
    pub fn start() -> Self {
        Clock { start: std::time::Instant::now() }
    }

    /// Time since the start.
    pub fn now(&self) -> Instant {
        Instant::from_nanos(self.start.elapsed().as_nanos() as u64)
    }

    /// The wall-clock instant of model time `t`.
    pub fn to_std(&self, t: Instant) -> std::time::Instant {
        self.start + std::time::Duration::from_nanos(t.as_nanos())
    }
}

/// Converts a model duration to a std one.
pub fn to_std(d: Duration) -> std::time::Duration {
    std::time::Duration::from_nanos(d.as_nanos())
}
