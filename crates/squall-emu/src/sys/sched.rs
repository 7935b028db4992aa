//! The calling thread's scheduling: timer slack (prctl(2)), the real-time
//! class (sched_setscheduler(2)) and CPU affinity (sched_setaffinity(2)).

/// Asks the kernel to wake this thread's timers with no slack (the default
/// is 50 µs), so the early wake-up of the data plane can be short.
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

/// The kernel's real-time throttling as the warning a `--realtime` run
/// prints, or `None` when it is off: a SCHED_FIFO thread may run
/// `runtime_us` of each `period_us` (`kernel.sched_rt_runtime_us` and
/// `sched_rt_period_us`; -1 is unlimited; kernel/sched/rt.c), and a data
/// plane that spins nearly all the time is stopped for the rest of each
/// period, every CPU at once (50 ms stalls once a second with the default
/// 950 000 of 1 000 000).
pub fn rt_throttle_warning(runtime_us: i64, period_us: i64) -> Option<String> {
    if runtime_us < 0 || runtime_us >= period_us {
        return None;
    }
    let stall_ms = (period_us - runtime_us) as f64 / 1e3;
    let period_ms = period_us as f64 / 1e3;
    Some(format!(
        "the kernel throttles real-time threads to {runtime_us} µs of each {period_us} µs \
         (kernel.sched_rt_runtime_us): a data plane that spins nearly all the time (high packet rates) \
         is stopped for up to {stall_ms} ms every {period_ms} ms; `sysctl -w kernel.sched_rt_runtime_us=-1` \
         lifts the limit (at the risk of a spinning thread starving others), or run without --realtime"
    ))
}

/// [`rt_throttle_warning`] for this machine's settings (/proc/sys/kernel);
/// `None` if they cannot be read.
pub fn rt_throttle_warning_here() -> Option<String> {
    let read = |name: &str| {
        std::fs::read_to_string(format!("/proc/sys/kernel/{name}")).ok().and_then(|s| s.trim().parse::<i64>().ok())
    };
    rt_throttle_warning(read("sched_rt_runtime_us")?, read("sched_rt_period_us")?)
}

/// The CPUs this thread may run on (its affinity), in order; empty if the
/// kernel does not say.
pub fn usable_cpus() -> Vec<usize> {
    let Ok(all) = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)) else { return Vec::new() };
    (0..nix::sched::CpuSet::count()).filter(|&c| all.is_set(c).unwrap_or(false)).collect()
}

/// Runs this thread on `cpu` only.
pub fn pin_this_thread(cpu: usize) -> nix::Result<()> {
    let mut set = nix::sched::CpuSet::new();
    set.set(cpu)?;
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set)
}

/// The calling thread's CPU time so far, user and system
/// (getrusage(2) `RUSAGE_THREAD`); zero if the kernel refuses.
pub fn thread_cpu_time() -> squall_link::Duration {
    use nix::sys::resource::{UsageWho, getrusage};
    getrusage(UsageWho::RUSAGE_THREAD).map_or(squall_link::Duration::ZERO, |u| {
        let us = |t: nix::sys::time::TimeVal| {
            u64::try_from(t.tv_sec()).unwrap_or(0) * 1_000_000 + u64::try_from(t.tv_usec()).unwrap_or(0)
        };
        squall_link::Duration::from_micros(us(u.user_time()) + us(u.system_time()))
    })
}

#[cfg(test)]
mod tests {
    use super::rt_throttle_warning;

    #[test]
    fn throttling_is_reported_with_the_stall_it_causes() {
        // Linux's defaults: 950 ms of each second, so 50 ms stalls.
        let w = rt_throttle_warning(950_000, 1_000_000).expect("throttled");
        assert!(w.contains("950000 µs of each 1000000 µs") && w.contains("up to 50 ms every 1000 ms"), "{w}");
        assert!(w.contains("kernel.sched_rt_runtime_us=-1"), "{w}");
        // Unlimited (-1) or the whole period: no throttling.
        assert_eq!(rt_throttle_warning(-1, 1_000_000), None);
        assert_eq!(rt_throttle_warning(1_000_000, 1_000_000), None);
    }
}
