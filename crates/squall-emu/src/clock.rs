//! The wall clock as the model's time: an [`Instant`] is the offset from
//! the start of the run (docs/design.md, "The sans-IO rule": own time types).
#![allow(unsafe_code)] // system calls; they move into `sys` (issue 29)

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

/// Asks the kernel to wake this thread's timers with no slack (the default
/// is 50 µs), so the early wake-up of [`crate::dataplane`] can be short.
pub fn minimise_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes an integer and touches no memory.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
    }
}

/// Puts the calling thread in the SCHED_FIFO class at `priority` (1..=99)
/// so compiles, workloads and other processes do not preempt it (seed 000
/// §6: competing processes are what makes an emulator late). The kernel's
/// real-time throttling still leaves others 5% of each CPU.
pub fn enter_realtime_class(priority: i32) -> std::io::Result<()> {
    let param = libc::sched_param { sched_priority: priority };
    // SAFETY: `param` is a valid sched_param; 0 means the calling thread.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
